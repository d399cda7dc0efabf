//go:build unix

package plugin

import (
	"os/exec"
	"syscall"
)

// isolate starts the plugin in its own process group and makes
// cancellation (timeout) kill the whole group, not just the plugin: a
// shell plugin's children die with it.
func isolate(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}

// killGroup kills what is left of the plugin's process group after it
// exited (background children holding resources). ESRCH, an empty group,
// is the normal case.
func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
