package coord

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// openUnnamed opens a new file in dir that has no name yet (O_TMPFILE), so
// that nothing can remove it while it is written.
func openUnnamed(dir string) (*os.File, error) {
	fd, err := unix.Open(dir, unix.O_TMPFILE|unix.O_RDWR|unix.O_CLOEXEC, 0o666)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), dir), nil
}

// nameUnnamed gives a file from openUnnamed the name name.
func nameUnnamed(f *os.File, name string) error {
	return unix.Linkat(unix.AT_FDCWD, fmt.Sprintf("/proc/self/fd/%d", f.Fd()), unix.AT_FDCWD, name, unix.AT_SYMLINK_FOLLOW)
}
