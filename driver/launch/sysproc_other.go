//go:build unix && !linux

package launch

import (
	"errors"
	"syscall"
)

// workerSysProcAttr puts the worker in its own process group. Outside Linux
// there is no parent-death signal: a worker may outlive a SIGKILLed launcher.
func workerSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// becomeSubreaper: there is no child subreaper outside Linux.
func becomeSubreaper() error { return errors.ErrUnsupported }

// reapGroup reaps the launcher's exited children in process group pgid.
func reapGroup(pgid int) {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-pgid, &ws, syscall.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
	}
}

// handlesSignal: outside Linux the launcher cannot tell; every worker is
// taken to handle the rescale signal.
func handlesSignal(pid int, sig syscall.Signal) (bool, error) { return true, nil }
