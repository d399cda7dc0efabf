package launch

import (
	"fmt"
	"os"
	"syscall"
	"unsafe"
)

// The reaper without a shell. A shell reaper costs a launch the fork,
// exec and start of /bin/sh and its C library beside the worker's own
// start (0.6 ms of a 4-5 ms launch on a busy 2-core host,
// BenchmarkLauncherOverhead), although it runs a few system calls. So on
// linux/amd64 the launcher clones a process that shares its memory
// (CLONE_VM: no copy of the address space, no exec) and runs only
// cloneReaper's assembly, never Go code: it blocks every signal (blocked
// in the launcher's thread before the clone, so none is delivered to it
// before), takes a process group of its own, names itself xres-reaper
// (/proc/<pid>/comm: ps lists it so), keeps the pipe's read end as its
// standard input and closes every other descriptor it was given (the
// launcher's lock files and the pipes of other reapers among them, which
// it must not hold open), reads until the pipe ends, sends SIGKILL to the
// worker's group and exits. What the shell reaper does, in the same
// order (reaperScript); it lives in memory the launcher never frees while
// it lives (its stack is unmapped once it has been reaped, stop), and
// when the launcher dies, the address space lives on until the reaper
// has exited.

// cloneReaper clones the reaper (reaper_linux_amd64.s) with stack's top
// as its stack: it returns its pid, or a negative errno.
func cloneReaper(stackTop uintptr, rfd, wfd, pgid int32, name uintptr) int64

// reaperName is the reaper's comm (PR_SET_NAME), NUL-terminated; a
// package variable, so that it never moves.
var reaperName = [...]byte{'x', 'r', 'e', 's', '-', 'r', 'e', 'a', 'p', 'e', 'r', 0}

// reaperStack is the size of a cloned reaper's stack: it uses 16 bytes.
const reaperStack = 4096

// startReaper starts the reaper of process group pgid, cloned; a shell
// where the clone fails.
func startReaper(pgid int) (*reaper, error) {
	stack, err := syscall.Mmap(-1, 0, reaperStack, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANONYMOUS)
	if err != nil {
		return startShellReaper(pgid)
	}
	// A blocking pipe made here, not os.Pipe: os.Pipe registers both ends
	// with the network poller (creating it in a launch that needs it for
	// nothing else) and Fd then makes them blocking again, ten system
	// calls for the two descriptors the clone inherits.
	var p [2]int
	if err := syscall.Pipe2(p[:], syscall.O_CLOEXEC); err != nil {
		_ = syscall.Munmap(stack)
		return nil, fmt.Errorf("reaper pipe: %w", err)
	}
	w := os.NewFile(uintptr(p[1]), "|1")
	top := uintptr(unsafe.Pointer(&stack[len(stack)-64])) &^ 15
	pid := cloneReaper(top, int32(p[0]), int32(p[1]), int32(pgid), uintptr(unsafe.Pointer(&reaperName[0])))
	_ = syscall.Close(p[0])
	if pid <= 0 {
		_ = w.Close()
		_ = syscall.Munmap(stack)
		return startShellReaper(pgid)
	}
	return &reaper{pid: int(pid), w: w, stack: stack}, nil
}
