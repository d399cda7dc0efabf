//go:build !unix

package plugin

import "os/exec"

// isolate: without process groups, cancellation kills the plugin only.
func isolate(cmd *exec.Cmd) {}

// killGroup: nothing to do without process groups.
func killGroup(cmd *exec.Cmd) {}
