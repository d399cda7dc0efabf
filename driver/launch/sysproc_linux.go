package launch

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// workerSysProcAttr puts the worker in its own process group (so the
// launcher can signal its whole tree, and a group signal sent to the
// launcher is not delivered twice) and asks the kernel to SIGKILL it should
// the launcher die first (SIGKILL from the NodeManager, OOM killer): a
// worker must never outlive the launcher that holds its devices. Its forked
// helpers are not covered by that signal: the host coordination records
// the group and keeps the devices held while any of it lives.
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
