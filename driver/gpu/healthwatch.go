//go:build linux

package gpu

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/xres/xres/driver/internal/capture"
)

// HealthWatch is a running `xres-nvml watch`: the GPUs' health events, read
// by a process built without cgo (the launcher). See HealthEvent.
type HealthWatch struct {
	// Ready is the helper's first line: which GPUs it watches.
	Ready HealthEvent
	cmd   *exec.Cmd
	stdin io.WriteCloser
	tail  *capture.Tail
	done  chan struct{}
	err   error
	once  sync.Once
}

// FindNVMLHelper finds xres-nvml as the launcher does for discovery:
// beside the launcher, then on getenv's PATH.
func FindNVMLHelper(getenv func(string) string) (string, error) { return findNVMLHelper(getenv) }

// StartHealthWatch starts `path watch [--library lib]` with env (nil:
// inherit) and waits up to timeout for its ready line; then fn is called
// with each event, in order, from one goroutine, until the stream ends.
// The helper's stdin is a pipe this process holds: if it dies, the helper
// sees its stdin end and stops.
func StartHealthWatch(ctx context.Context, path, lib string, env []string, timeout time.Duration, fn func(HealthEvent)) (*HealthWatch, error) {
	args := []string{"watch"}
	if lib != "" {
		args = append(args, "--library", lib)
	}
	cmd := exec.Command(path, args...)
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	w := &HealthWatch{cmd: cmd, tail: &capture.Tail{Max: maxStderrTail}, done: make(chan struct{})}
	cmd.Stderr = w.tail
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if w.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%w: start %s watch: %w", ErrWatchLost, path, err)
	}
	ready := make(chan HealthEvent, 1)
	go func() {
		defer close(w.done)
		got, early := false, false
		err := ReadHealthEvents(stdout, func(e HealthEvent) error {
			if !got {
				if e.Type != EventReady {
					early = true
					return fmt.Errorf("%w: first line is %q, not ready", ErrWatchLost, e.Type)
				}
				got = true
				ready <- e
				return nil
			}
			fn(e)
			return nil
		})
		// The stream ended (the helper ends, or has) or could not be read
		// (the helper goes on: end it).
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		if errors.Is(err, ErrHealthStream) || early {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
		var werr error
		select {
		case werr = <-exited:
		case <-time.After(waitDelay):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			werr = <-exited
		}
		w.err = w.lost(path, err, werr)
	}()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case w.Ready = <-ready:
		return w, nil
	case <-w.done:
		return nil, w.err
	case <-ctx.Done():
		w.Stop()
		return nil, fmt.Errorf("%w: %s watch: %w", ErrWatchLost, path, ctx.Err())
	case <-t.C:
		w.Stop()
		return nil, fmt.Errorf("%w: %s watch did not register its events within %s", ErrWatchLost, path, timeout)
	}
}

// lost says why the stream ended: what the reader saw, the helper's exit
// and the last it wrote on stderr.
func (w *HealthWatch) lost(path string, read, wait error) error {
	var more string
	if wait != nil {
		more += "; " + path + ": " + wait.Error()
	}
	if said := strings.TrimSpace(string(w.tail.Bytes())); said != "" {
		more += ": " + said
	}
	if !errors.Is(read, ErrWatchLost) {
		return fmt.Errorf("%w: %w%s", ErrWatchLost, read, more)
	}
	return fmt.Errorf("%w%s", read, more)
}

// Done is closed when the stream has ended (Err says why).
func (w *HealthWatch) Done() <-chan struct{} { return w.done }

// Err is why the stream ended (always an ErrWatchLost) once Done is closed.
func (w *HealthWatch) Err() error {
	<-w.done
	return w.err
}

// Stop ends the helper (its stdin closed, then SIGTERM, SIGKILL after 2 s)
// and waits for the stream to end.
func (w *HealthWatch) Stop() {
	w.once.Do(func() {
		_ = w.stdin.Close()
		_ = syscall.Kill(-w.cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-w.done:
		case <-time.After(waitDelay):
			_ = syscall.Kill(-w.cmd.Process.Pid, syscall.SIGKILL)
		}
	})
	<-w.done
}
