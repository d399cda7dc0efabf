package launch

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// workerSysProcAttr puts the worker in its own process group (so the
// launcher can signal its whole tree, and a group signal sent to the
// launcher is not delivered twice) and asks the kernel to SIGKILL it should
// the launcher die first (SIGKILL from the NodeManager, OOM killer): a
// worker must never outlive the launcher that holds its devices. Its forked
// helpers are not covered by that signal; the worker's reaper (supervise.go)
// kills its group when the launcher dies, and should that fail, the host
// coordination records the group and keeps the devices held while any of
// it lives.
func workerSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// becomeSubreaper makes the launcher the reaper of its orphaned
// descendants (PR_SET_CHILD_SUBREAPER): a worker's helpers whose parent
// exits stay the launcher's, so endGroup can wait for them.
func becomeSubreaper() error {
	return unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
}

// reapGroup reaps the launcher's children in process group pgid that have
// exited, without waiting.
func reapGroup(pgid int) {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-pgid, &ws, syscall.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
	}
}

// handlesSignal reports whether process pid catches or ignores sig (the
// SigCgt and SigIgn masks of /proc/<pid>/status): one that does neither
// gets the signal's default action. A process that is gone is an error
// wrapping os.ErrNotExist.
func handlesSignal(pid int, sig syscall.Signal) (bool, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return false, err
	}
	return signalHandled(b, sig)
}

// signalHandled reads the SigCgt and SigIgn masks of a /proc/<pid>/status
// text and reports whether sig's bit is set in either.
func signalHandled(status []byte, sig syscall.Signal) (bool, error) {
	if sig < 1 || sig > 64 {
		return false, fmt.Errorf("signal %d out of range", int(sig))
	}
	bit := uint64(1) << (uint(sig) - 1)
	found := 0
	handled := false
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		k, v, ok := bytes.Cut(sc.Bytes(), []byte(":"))
		if !ok || (string(k) != "SigCgt" && string(k) != "SigIgn") {
			continue
		}
		mask, err := strconv.ParseUint(string(bytes.TrimSpace(v)), 16, 64)
		if err != nil {
			return false, fmt.Errorf("/proc status %s: %q: %w", k, bytes.TrimSpace(v), err)
		}
		found++
		handled = handled || mask&bit != 0
	}
	if found != 2 {
		return false, fmt.Errorf("/proc status: no SigCgt and SigIgn lines")
	}
	return handled, nil
}
