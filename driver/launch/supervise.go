package launch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"
)

// ForwardedSignals are the signals the launcher passes on to the worker's
// process group. YARN stops a container with SIGTERM, then SIGKILL after
// yarn.nodemanager.sleep-delay-before-sigkill.ms; SIGKILL cannot be caught,
// so a launcher killed that way takes its worker along (see startWorker).
var ForwardedSignals = []os.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT}

// worker is the command the launcher supervises.
type worker struct {
	Args   []string // program and arguments; Args[0] is looked up in PATH
	Env    []string // complete environment, KEY=value
	Dir    string   // working directory; "" = the launcher's
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
}

// signalGate receives the launcher's signals for its whole life. Before the
// worker starts, the first signal cancels the launch (discovery stops, the
// devices are released, the launcher exits 128+sig); once the worker runs,
// every signal goes to the worker's process group.
type signalGate struct {
	log logrus.FieldLogger

	mu      sync.Mutex
	pgid    int       // worker's process group, 0 while none runs
	pending os.Signal // first signal that arrived while no worker ran
	cancel  context.CancelFunc
	done    chan struct{}
}

// newSignalGate starts watching sigs (nil: no signals). cancel is called
// when a signal arrives before the worker starts.
func newSignalGate(sigs <-chan os.Signal, cancel context.CancelFunc, log logrus.FieldLogger) *signalGate {
	g := &signalGate{log: log, cancel: cancel, done: make(chan struct{})}
	if sigs != nil {
		go g.loop(sigs)
	}
	return g
}

func (g *signalGate) loop(sigs <-chan os.Signal) {
	for {
		select {
		case <-g.done:
			return
		case sig, ok := <-sigs:
			if !ok {
				return
			}
			g.deliver(sig)
		}
	}
}

func (g *signalGate) deliver(sig os.Signal) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.pgid > 0 {
		g.log.WithField("signal", sig.String()).Info("forwarding signal to worker")
		if s, ok := sig.(syscall.Signal); ok {
			if err := syscall.Kill(-g.pgid, s); err != nil && !errors.Is(err, syscall.ESRCH) {
				g.log.WithError(err).WithField("signal", sig.String()).Warn("forward signal to worker")
			}
		}
		return
	}
	if g.pending == nil {
		g.log.WithField("signal", sig.String()).Info("signal before the worker started: stopping")
		g.pending = sig
		if g.cancel != nil {
			g.cancel()
		}
	}
}

// Pending is the signal that stopped the launch before the worker started.
func (g *signalGate) Pending() os.Signal {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.pending
}

// Stop ends the watch; signals after it are ignored.
func (g *signalGate) Stop() { close(g.done) }

// errStopped reports that a signal arrived before the worker started.
var errStopped = errors.New("stopped by signal")

// signalExitCode is what a shell reports for a process killed by sig.
func signalExitCode(sig os.Signal) int {
	if s, ok := sig.(syscall.Signal); ok {
		return 128 + int(s)
	}
	return 128 + int(syscall.SIGTERM)
}

// runWorker starts w in its own process group, forwards signals through g,
// waits for it and returns its exit code (128+N for death by signal N).
// When ctx ends, the group gets SIGTERM and, grace later, SIGKILL.
// An error (classified ErrWorkerStart) means the worker never ran.
func runWorker(ctx context.Context, w worker, g *signalGate, grace time.Duration, log logrus.FieldLogger) (int, error) {
	if len(w.Args) == 0 {
		return 0, classifyf(ErrUsage, "start worker: no worker command given")
	}
	path, err := exec.LookPath(w.Args[0])
	if err != nil {
		return 0, classifyf(ErrWorkerStart, "start worker %q: %w", w.Args[0], err)
	}
	cmd := &exec.Cmd{
		Path:        path,
		Args:        w.Args,
		Env:         w.Env,
		Dir:         w.Dir,
		Stdin:       w.Stdin,
		Stdout:      w.Stdout,
		Stderr:      w.Stderr,
		SysProcAttr: workerSysProcAttr(),
	}

	type result struct {
		state *os.ProcessState
		err   error
	}
	started := make(chan error, 1)
	exited := make(chan result, 1)
	// Start and Wait run on one locked OS thread: Linux delivers the
	// parent-death signal when the thread that forked the child ends, and
	// the Go runtime may retire threads; a locked thread lives until the
	// goroutine returns, which is after the worker ended.
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		g.mu.Lock()
		if g.pending != nil {
			g.mu.Unlock()
			started <- errStopped
			return
		}
		if err := cmd.Start(); err != nil {
			g.mu.Unlock()
			started <- err
			return
		}
		g.pgid = cmd.Process.Pid
		g.mu.Unlock()
		started <- nil
		err := cmd.Wait()
		g.mu.Lock()
		g.pgid = 0
		g.mu.Unlock()
		exited <- result{state: cmd.ProcessState, err: err}
	}()
	if err := <-started; err != nil {
		if errors.Is(err, errStopped) {
			return signalExitCode(g.Pending()), nil
		}
		return 0, classifyf(ErrWorkerStart, "start worker %q: %w", w.Args[0], err)
	}
	pid := cmd.Process.Pid
	log.WithField("pid", pid).WithField("command", w.Args[0]).Info("worker started")

	var killTimer <-chan time.Time
	ctxDone := ctx.Done()
	for {
		select {
		case r := <-exited:
			code := exitCodeOf(r.state)
			log.WithField("pid", pid).WithField("exit_code", code).Info("worker ended")
			return code, nil
		case <-ctxDone:
			ctxDone = nil
			log.WithField("pid", pid).Info("launch cancelled: terminating worker")
			_ = syscall.Kill(-pid, syscall.SIGTERM)
			killTimer = time.After(grace)
		case <-killTimer:
			log.WithField("pid", pid).Warn("worker outlived the grace period: killing")
			_ = syscall.Kill(-pid, syscall.SIGKILL)
		}
	}
}

// exitCodeOf turns a wait status into a shell-style exit code.
func exitCodeOf(st *os.ProcessState) int {
	if st == nil {
		return ExitInternal
	}
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return st.ExitCode()
}

// describeCode explains an exit code in a log line.
func describeCode(code int) string {
	if code > 128 && code < 128+65 {
		return fmt.Sprintf("%d (signal %s)", code, syscall.Signal(code-128))
	}
	return fmt.Sprint(code)
}
