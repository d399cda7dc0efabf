package coord

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/xres/xres/conf/localfile"
	"github.com/xres/xres/resources/params"
)

// Hosts shared by several Unix users (README "Hosts shared by several Unix
// users"). The coordination folder and the files in it are host state that
// a launcher running as root may write, so:
//
//   - no path is followed through a symbolic link: the state, lock, cache
//     and Flink files are opened with O_NOFOLLOW, and only regular files are
//     used (a FIFO, a device, a folder there is refused, never read or
//     written);
//   - a file that exists and is not ours (no xres header, or for Flink's
//     file not Flink's "<index> <pid>" lines) is never written over,
//     truncated or replaced;
//   - the folder must be safe (checkFolder): owned by root or by the
//     launcher's user, and when others may write it, sticky (so that
//     nobody deletes or renames another user's files);
//   - in a folder others may write (world-writable, sticky), only files
//     owned by root or by the launcher's user are trusted (trustedOwner): a
//     state file planted by another user blocks reservations with an error
//     naming it and its owner (failing closed), and a planted device cache
//     is a miss.

// ErrUnsafeFile: a host state path is a symbolic link, not a regular file,
// or owned by a user xres does not trust there.
var ErrUnsafeFile = errors.New("unsafe coordination file")

// ErrUnsafeFolder: the coordination folder lets others replace its files.
var ErrUnsafeFolder = errors.New("unsafe coordination folder")

// maxStateSize bounds what is read from a state file: thousands of entries
// fit in a few hundred KiB; a larger file is not one of ours.
const maxStateSize = 16 << 20

// openRegular opens path without following a symbolic link in its last
// component and without blocking on a FIFO, and refuses anything but a
// regular file (what names the file and why, wrapping ErrUnsafeFile). With
// os.O_CREATE in flag the file is created with perm when missing. A missing
// file is an error satisfying errors.Is(err, fs.ErrNotExist).
func openRegular(what, path string, flag int, perm fs.FileMode) (*os.File, error) {
	f, err := localfile.OpenFile(path, flag|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, perm)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, fmt.Errorf("%w: %s %s is a symbolic link; xres never follows one to its host state: remove the link (a file of xres's is created in its place)", ErrUnsafeFile, what, path)
		}
		if errors.Is(err, syscall.ENXIO) || errors.Is(err, syscall.EISDIR) {
			return nil, fmt.Errorf("%w: %s %s is not a regular file: name a file of its own", ErrUnsafeFile, what, path)
		}
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("%s %s: %w", what, path, err)
	}
	if !fi.Mode().IsRegular() {
		_ = f.Close()
		return nil, fmt.Errorf("%w: %s %s is not a regular file (%s): xres never reads or writes one; name a file of its own", ErrUnsafeFile, what, path, localfile.DescribeMode(fi.Mode()))
	}
	// O_NONBLOCK stays: it changes nothing for a regular file.
	return f, nil
}

// readAllBounded reads f to its end, at most limit bytes (more is an
// error).
func readAllBounded(f *os.File, limit int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("larger than %d bytes", limit)
	}
	return b, nil
}

// folderInfo is what checkFolder found: whether others may write the
// folder (then only files of root or of this user are trusted in it).
type folderInfo struct {
	worldWritable bool
	mode          fs.FileMode // the folder's, as os.Stat gave it
}

// checkFolder refuses a coordination folder that lets others replace the
// host state: one owned by a user other than root or the launcher's
// (effective) user, one world-writable without the sticky bit, or a
// symbolic link owned by such a user. The error names the folder and the
// fix.
func checkFolder(dir string) (folderInfo, error) {
	euid := os.Geteuid()
	li, err := os.Lstat(dir)
	if err != nil {
		return folderInfo{}, fmt.Errorf("coordination folder %s: %w", dir, err)
	}
	if li.Mode()&fs.ModeSymlink != 0 {
		if uid, ok := ownerOf(li); ok && uid != 0 && uid != euid {
			return folderInfo{}, fmt.Errorf("%w: %s is a symbolic link owned by uid %d (neither root nor this user, uid %d): remove it, or configure a coordination.file in a folder of root's", ErrUnsafeFolder, dir, uid, euid)
		}
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return folderInfo{}, fmt.Errorf("coordination folder %s: %w", dir, err)
	}
	if !fi.IsDir() {
		return folderInfo{}, fmt.Errorf("coordination folder %s is not a folder (make the directory writable by every user that runs workers, or configure another coordination file)", dir)
	}
	if uid, ok := ownerOf(fi); ok && uid != 0 && uid != euid {
		return folderInfo{}, fmt.Errorf("%w: %s is owned by uid %d, neither root nor this user (uid %d), who could replace the host's state: "+
			"chown root %s (for several users: install -d -m 1777 %s, or a group folder: install -d -m 2770 -g <group> %s)", ErrUnsafeFolder, dir, uid, euid, dir, dir, dir)
	}
	m := fi.Mode()
	ww := m.Perm()&0o002 != 0
	if ww && m&fs.ModeSticky == 0 {
		return folderInfo{}, fmt.Errorf("%w: %s is world-writable without the sticky bit: any user could delete or replace the host's state: "+
			"chmod +t %s (install -d -m 1777), or use a group folder (install -d -m 2770 -g <group>)", ErrUnsafeFolder, dir, dir)
	}
	return folderInfo{worldWritable: ww, mode: m}, nil
}

func ownerOf(fi fs.FileInfo) (int, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Uid), true
}

// trustedOwner refuses a file in a folder others may write that is owned
// by neither root nor this user, or that others may write themselves.
func trustedOwner(what, path string, fi fs.FileInfo, folder folderInfo) error {
	euid := os.Geteuid()
	uid, ok := ownerOf(fi)
	if !ok {
		return nil
	}
	if folder.worldWritable && uid != 0 && uid != euid {
		return fmt.Errorf("%w: %s %s is owned by uid %d, neither root nor this user (uid %d), in a folder every user may write: it cannot be trusted and nothing is granted while it is there. "+
			"Containers of several Unix users share a host's coordination through a group folder (install -d -m 2770 -g <group>) or YARN's GPU isolation; "+
			"if it was planted, stop the workers on this host, then remove it", ErrUnsafeFile, what, path, uid, euid)
	}
	if fi.Mode().Perm()&0o002 != 0 {
		return fmt.Errorf("%w: %s %s is writable by every user (mode %04o): it cannot be trusted; chmod o-w %s", ErrUnsafeFile, what, path, fi.Mode().Perm(), path)
	}
	return nil
}

// filePerm is the mode xres creates host state with in a folder: 0644, and
// group-writable (0664) where the folder is a group folder (group-writable,
// not world-writable), whose members share the state.
func filePerm(dir string) fs.FileMode {
	fi, err := os.Stat(dir)
	if err != nil {
		return 0o644
	}
	return filePermIn(fi.Mode())
}

// filePermIn is filePerm for a folder of mode m (what checkFolder read).
func filePermIn(m fs.FileMode) fs.FileMode {
	if m.Perm()&0o020 != 0 && m.Perm()&0o002 == 0 {
		return 0o664
	}
	return 0o644
}

// lockHolders names the processes that hold a lock on f's inode, read
// from /proc/locks (e.g. "pid 4711 (flock)"); "" when none is known.
func lockHolders(p procFS, f *os.File) string {
	fi, err := f.Stat()
	if err != nil {
		return ""
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return ""
	}
	b, err := localfile.ReadFile(p.root + "/locks")
	if err != nil {
		return ""
	}
	// The kernel prints the device as %02x:%02x (major:minor) and the inode
	// in decimal; some file systems (btrfs, overlay) show another device
	// than stat, so the inode alone decides where no line has ours.
	dev := uint64(st.Dev) //nolint:unconvert // 32-bit platforms
	want := fmt.Sprintf("%02x:%02x:%d", unix.Major(dev), unix.Minor(dev), st.Ino)
	ino := ":" + strconv.FormatUint(st.Ino, 10)
	var pids []int
	exact := false
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		pid, id, ok := parseLocksLine(sc.Text())
		if !ok || pid <= 0 || !strings.HasSuffix(id, ino) {
			continue
		}
		if id == want && !exact {
			exact, pids = true, nil
		}
		if exact && id != want {
			continue
		}
		pids = append(pids, pid)
	}
	var out []string
	seen := map[int]bool{}
	for _, pid := range pids {
		if seen[pid] {
			continue
		}
		seen[pid] = true
		s := "pid " + strconv.Itoa(pid)
		if c := p.program(pid); c != "" {
			s += " (" + c + ")"
		}
		if uid, ok := procUID(p, pid); ok {
			s += " uid " + strconv.Itoa(uid)
		}
		out = append(out, s)
	}
	return strings.Join(out, ", ")
}

// parseLocksLine reads one line of /proc/locks:
// "1: FLOCK  ADVISORY  WRITE 4711 08:01:1234 0 EOF" (blocked waiters have
// "->" after the number). It returns the pid and the "maj:min:inode".
func parseLocksLine(line string) (int, string, bool) {
	f := strings.Fields(line)
	if len(f) > 1 && f[1] == "->" {
		return 0, "", false // a waiter, not a holder
	}
	if len(f) < 6 {
		return 0, "", false
	}
	pid, err := strconv.Atoi(f[4])
	if err != nil {
		return 0, "", false
	}
	return pid, f[5], true
}

// procUID is the real uid of pid (the Uid: line of /proc/<pid>/status).
func procUID(p procFS, pid int) (int, bool) {
	b, err := localfile.ReadFile(fmt.Sprintf("%s/%d/status", p.root, pid))
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Uid:"); ok {
			f := strings.Fields(v)
			if len(f) == 0 {
				return 0, false
			}
			uid, err := strconv.Atoi(f[0])
			return uid, err == nil
		}
	}
	return 0, false
}

// errRelative is the reason a relative coordination path is refused.
func errRelative(path string) error { return params.ErrRelative(path) }

func isAbs(p string) bool { return filepath.IsAbs(p) }
