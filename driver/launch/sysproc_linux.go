package launch

import "syscall"

// workerSysProcAttr puts the worker in its own process group (so the
// launcher can signal its whole tree, and a group signal sent to the
// launcher is not delivered twice) and asks the kernel to SIGKILL it should
// the launcher die first (SIGKILL from the NodeManager, OOM killer): a
// worker must never outlive the launcher that holds its devices.
func workerSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
