//go:build unix && !linux

package launch

import "syscall"

// workerSysProcAttr puts the worker in its own process group. Outside Linux
// there is no parent-death signal: a worker may outlive a SIGKILLed launcher.
func workerSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
