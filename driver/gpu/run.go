package gpu

import (
	"context"
	"errors"
	"os/exec"
	"syscall"
	"time"

	"github.com/xres/xres/driver/internal/capture"
)

// result is what a finished child process left behind.
type result struct {
	stdout   []byte // first maxStdout bytes
	stderr   []byte // last maxStderrTail bytes
	exitCode int    // -1 when killed by a signal
	timedOut bool   // killed because the timeout expired
}

const (
	maxStdout     = 64 << 10
	maxStderrTail = 4 << 10
	// waitDelay bounds how long a process killed on timeout may take to
	// exit before it is killed again.
	waitDelay = 2 * time.Second
)

// run starts path with args in its own process group, reads stdout and
// stderr concurrently (no pipe deadlock however much it writes) and, when
// timeout expires or ctx ends, kills the whole group. It returns as soon
// as the process has exited, with all it printed: a background child that
// outlives it holding the output pipes (a script's `sleep 5 &`) neither
// delays it nor is killed (capture.Run). A non-nil error means the
// process could not be started or waited for; a non-zero exit is reported
// in the result.
func run(ctx context.Context, path string, args []string, env []string, timeout time.Duration) (result, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Env = env // nil: inherit
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		// The negative pid addresses the process group: the script and
		// everything it started (nvidia-smi, flock, sleep…).
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	cmd.WaitDelay = waitDelay
	stdout := &capture.Head{Max: maxStdout}
	stderr := &capture.Tail{Max: maxStderrTail}
	err := capture.Run(cmd, stdout, stderr)
	res := result{stdout: stdout.Bytes(), stderr: stderr.Bytes()}
	if ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		res.timedOut = true
	}
	var exitErr *exec.ExitError
	switch {
	case err == nil:
		return res, nil
	case errors.As(err, &exitErr):
		res.exitCode = exitErr.ExitCode()
		if res.exitCode == 0 {
			res.exitCode = -1
		}
		return res, nil
	default:
		if res.timedOut && cmd.ProcessState != nil {
			res.exitCode = -1
			return res, nil
		}
		return res, err
	}
}
