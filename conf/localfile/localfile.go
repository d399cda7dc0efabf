// Package localfile opens and reads the small local files a launcher touches
// on every start (its configuration, /proc, the coordination state and
// lock files, the info file) without the Go runtime's network poller.
//
// os.Open and os.OpenFile offer every file they open to the poller: the
// first one creates it (epoll_create1, eventfd2 and their registration),
// and each file costs four fcntl calls and a refused epoll_ctl besides. A
// regular file is never pollable, and for a process that lives a few
// milliseconds that work is a measurable part of its life (about 0.1 ms for
// five files here). The files returned here are *os.File values made with
// os.NewFile over a blocking descriptor, which the runtime does not offer
// to the poller; errors are *fs.PathError, as the os package returns them.
package localfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// OpenFile is os.OpenFile for a local file that needs no poller (a
// regular file, a /proc file, a lock file). flag takes os.O_* values;
// O_CLOEXEC is always added.
func OpenFile(name string, flag int, perm fs.FileMode) (*os.File, error) {
	var fd int
	var err error
	for {
		fd, err = syscall.Open(name, flag|syscall.O_CLOEXEC, uint32(perm.Perm()))
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	return os.NewFile(uintptr(fd), name), nil
}

// ReadFile is os.ReadFile through OpenFile.
func ReadFile(name string) ([]byte, error) {
	f, err := OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	size := 512 // /proc files report 0
	if st, err := f.Stat(); err == nil && st.Size() > 0 && st.Size() < 1<<30 {
		size = int(st.Size()) + 1 // one more, to see the end in one read
	}
	b := make([]byte, 0, size)
	for {
		n, err := f.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF || err == nil && n == 0 {
			return b, nil
		}
		if err != nil {
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
	}
}

// CreateTemp is os.CreateTemp through OpenFile: a new file in dir (""
// for os.TempDir()) named by pattern, its last "*" replaced by a random
// string (appended when there is none), opened for reading and writing
// with mode 0600.
func CreateTemp(dir, pattern string) (*os.File, error) {
	if dir == "" {
		dir = os.TempDir()
	}
	if strings.ContainsRune(pattern, os.PathSeparator) {
		return nil, &fs.PathError{Op: "createtemp", Path: pattern, Err: os.ErrInvalid}
	}
	prefix, suffix := pattern, ""
	if i := strings.LastIndexByte(pattern, '*'); i >= 0 {
		prefix, suffix = pattern[:i], pattern[i+1:]
	}
	for try := 0; ; try++ {
		name := filepath.Join(dir, prefix+strconv.FormatUint(uint64(rand.Uint32()), 10)+suffix)
		f, err := OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if os.IsExist(err) && try < 10000 {
			continue
		}
		return f, err
	}
}

// WriteFileAtomic writes data to name through a temporary file in the same
// directory, renamed over name, with mode perm: a reader sees the old file
// or the new one, never half of it. It is not fsync'ed: the files written
// so (a worker's info file, an executor's resources file) tell one process
// what it was given, no such process outlives a crash of its host, and its
// launcher writes the file again when the container is restarted.
func WriteFileAtomic(name string, data []byte, perm fs.FileMode) error {
	tmp, err := CreateTemp(filepath.Dir(name), "."+filepath.Base(name)+".*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // no-op after the rename
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(perm); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), name)
}

// ErrNotRegular and ErrTooLarge are ReadRegular's refusals.
var (
	ErrNotRegular = errors.New("not a regular file")
	ErrTooLarge   = errors.New("file too large")
)

// ReadRegular reads a configuration-like file that must be a regular file
// of at most limit bytes: a device (/dev/zero), a FIFO, a socket or a
// folder is refused at once, without reading, and so is a file larger
// than limit (by its size, and by what it yields, should it grow while
// read). The open does not block on a FIFO without a writer (O_NONBLOCK,
// which a regular file ignores). Errors are *fs.PathError wrapping
// ErrNotRegular or ErrTooLarge, or the system's.
func ReadRegular(name string, limit int64) ([]byte, error) {
	f, err := OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, &fs.PathError{Op: "read", Path: name, Err: fmt.Errorf("%w (%s)", ErrNotRegular, DescribeMode(st.Mode()))}
	}
	if st.Size() > limit {
		return nil, &fs.PathError{Op: "read", Path: name, Err: fmt.Errorf("%w: %d bytes, more than the %d allowed", ErrTooLarge, st.Size(), limit)}
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, &fs.PathError{Op: "read", Path: name, Err: err}
	}
	if int64(len(b)) > limit {
		return nil, &fs.PathError{Op: "read", Path: name, Err: fmt.Errorf("%w: more than the %d bytes allowed", ErrTooLarge, limit)}
	}
	return b, nil
}

// DescribeMode names a file type for an error ("a FIFO", "a folder", …).
func DescribeMode(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a folder"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	}
	return m.Type().String()
}
