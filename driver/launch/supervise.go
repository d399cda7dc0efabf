package launch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"

	"github.com/xres/xres/driver/coord"
	"github.com/xres/xres/driver/launch/launchcmd"
	"github.com/xres/xres/resources/contract"
)

// ForwardedSignals are the signals the launcher passes on to the worker's
// process group (launchcmd.ForwardedSignals). YARN stops a container with
// SIGTERM, then SIGKILL after yarn.nodemanager.sleep-delay-before-sigkill.ms;
// SIGKILL cannot be caught, so a launcher killed that way takes its worker
// along: the worker by its parent-death signal, its whole group by its
// reaper (startReaper).
var ForwardedSignals = launchcmd.ForwardedSignals

// worker is the command the launcher supervises.
type worker struct {
	Path   string   // the program; "": Args[0] looked up in PATH
	Args   []string // program and arguments
	Env    []string // complete environment, KEY=value
	Dir    string   // working directory; "" = the launcher's
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// Started (nil: none) is called with the worker's process group once
	// it runs.
	Started func(g coord.Group)
	// Setup (nil: none) runs on the locked OS thread that forks the
	// worker, just before the fork; what it returns (nil: nothing) runs
	// right after it (mempolicy.go: the worker's memory policy).
	Setup func() func()
}

// signalGate receives the launcher's signals for its whole life. Before the
// first worker starts, the first signal cancels the launch (discovery stops,
// the devices are released, the launcher exits 128+sig); once workers run,
// every signal goes to each running worker's process group, and no worker
// is started or restarted afterwards (--per-device).
type signalGate struct {
	log logrus.FieldLogger

	mu        sync.Mutex
	pgids     map[int]bool // running workers' process groups
	skipped   map[int]bool // workers a rescale signal skipped (logged once)
	pending   os.Signal    // first signal that arrived while no worker ran
	forwarded os.Signal    // first signal forwarded to running workers
	cancel    context.CancelFunc
	done      chan struct{}
}

// newSignalGate starts watching sigs (nil: no signals). cancel is called
// when a signal arrives while no worker runs.
func newSignalGate(sigs <-chan os.Signal, cancel context.CancelFunc, log logrus.FieldLogger) *signalGate {
	g := &signalGate{log: log, cancel: cancel, done: make(chan struct{}), pgids: map[int]bool{}, skipped: map[int]bool{}}
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
	if len(g.pgids) > 0 {
		if g.forwarded == nil {
			g.forwarded = sig
		}
		for pgid := range g.pgids {
			g.log.WithField("signal", sig.String()).WithField("pgid", pgid).Info("forwarding signal to worker")
			if s, ok := sig.(syscall.Signal); ok {
				if err := syscall.Kill(-pgid, s); err != nil && !errors.Is(err, syscall.ESRCH) {
					g.log.WithError(err).WithField("signal", sig.String()).Warn("forward signal to worker")
				}
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

// notify sends sig to every running worker's process group without
// counting it as a stop (the rescaling signal, not one to pass on). Only a
// worker that handles sig gets it: its first process (the group's leader)
// catches or ignores it. One that does not handle it (yet: a Python worker
// still importing its framework) would be ended by it, since the default
// action of every rescale signal but WINCH is to terminate; it is skipped
// (the workers file was rewritten all the same), and the skip is logged
// once per worker.
func (g *signalGate) notify(sig syscall.Signal) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for pgid := range g.pgids {
		handled, err := handlesSignal(pgid, sig)
		if err != nil {
			if !errors.Is(err, os.ErrNotExist) && !g.skipped[pgid] {
				g.log.WithError(err).WithField("signal", sig.String()).WithField("pgid", pgid).Warn("could not read whether the worker handles the rescale signal: not signalling it; " + contract.EnvWorkersFile + " was rewritten")
				g.skipped[pgid] = true
			}
			continue
		}
		if !handled {
			if !g.skipped[pgid] {
				g.log.WithField("signal", sig.String()).WithField("pgid", pgid).Warn("the worker's application's worker counts changed, but the worker (its process " + strconv.Itoa(pgid) + ") does not catch " + signalName(sig) + " (yet), which would end it: not signalling it; " + contract.EnvWorkersFile + " was rewritten (logged once per worker)")
				g.skipped[pgid] = true
			}
			continue
		}
		g.log.WithField("signal", sig.String()).WithField("pgid", pgid).Info("telling the worker its application's worker counts changed")
		if err := syscall.Kill(-pgid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
			g.log.WithError(err).WithField("signal", sig.String()).Warn("signal the worker")
		}
	}
}

// signalName is sig's name, SIGUSR1, or its number.
func signalName(sig syscall.Signal) string {
	if n := unix.SignalName(sig); n != "" {
		return n
	}
	return strconv.Itoa(int(sig))
}

// Pending is the signal that stopped the launch before the worker started.
func (g *signalGate) Pending() os.Signal {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.pending
}

// Stopping is the first signal the launcher received (pending or
// forwarded), nil while none arrived: after it no worker is (re)started.
func (g *signalGate) Stopping() os.Signal {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.pending != nil {
		return g.pending
	}
	return g.forwarded
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
	path := w.Path
	if path == "" {
		var err error
		if path, err = exec.LookPath(w.Args[0]); err != nil {
			return 0, classifyf(ErrWorkerStart, "start worker %q: %w", w.Args[0], err)
		}
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

	// The group is read before the worker can be reaped (its /proc entry
	// lives until then), however soon it exits.
	var group coord.Group
	var groupErr error
	identify := func(pid int) { group, groupErr = coord.GroupOf(pid) }
	p, err := startProc(cmd, g, identify, w.Setup)
	if err != nil {
		if errors.Is(err, errStopped) {
			return signalExitCode(g.Stopping()), nil
		}
		return 0, classifyf(ErrWorkerStart, "start worker %q: %w", w.Args[0], err)
	}
	exited, pid := p.exited, p.pid
	log.WithField("pid", pid).WithField("command", w.Args[0]).Info("worker started")
	if w.Started != nil {
		if groupErr != nil {
			log.WithError(groupErr).Warn("could not identify the worker's process group")
		} else {
			w.Started(group)
		}
	}

	var killTimer <-chan time.Time
	ctxDone := ctx.Done()
	for {
		select {
		case code := <-exited:
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

// proc is a started worker process; exited delivers its exit code once
// it has been waited for.
type proc struct {
	pid    int
	exited chan int
}

// startProc starts cmd and registers its process group with g, so signals
// reach it; afterStart (nil: none) runs on the started pid before the
// group is registered. Once any signal has arrived, it starts nothing and
// returns errStopped.
//
// Start and Wait run on one locked OS thread: Linux delivers the
// parent-death signal when the thread that forked the child ends, and the
// Go runtime may retire threads; a locked thread lives until the goroutine
// returns, which is after the worker ended.
// setup (optional, nil: none) runs on the forking thread before the fork;
// what it returns runs after it.
func startProc(cmd *exec.Cmd, g *signalGate, afterStart func(pid int), setup ...func() func()) (*proc, error) {
	started := make(chan error, 1)
	p := &proc{exited: make(chan int, 1)}
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		g.mu.Lock()
		if g.pending != nil || g.forwarded != nil {
			g.mu.Unlock()
			started <- errStopped
			return
		}
		var wait func() int
		undo := func() {}
		if len(setup) > 0 && setup[0] != nil {
			if u := setup[0](); u != nil {
				undo = u
			}
		}
		if files, ok := stdioFiles(cmd); ok {
			pid, err := syscall.ForkExec(cmd.Path, cmd.Args, &syscall.ProcAttr{Dir: cmd.Dir, Env: envOrOwn(cmd.Env), Files: files, Sys: cmd.SysProcAttr})
			undo()
			if err != nil {
				g.mu.Unlock()
				started <- err
				return
			}
			p.pid = pid
			wait = func() int { return waitPid(pid) }
		} else {
			err := cmd.Start()
			undo()
			if err != nil {
				g.mu.Unlock()
				started <- err
				return
			}
			p.pid = cmd.Process.Pid
			wait = func() int {
				_ = cmd.Wait() // the exit status is in ProcessState
				return exitCodeOf(cmd.ProcessState)
			}
		}
		// The reaper starts beside the rest of the launch (its fork and
		// exec are not on the worker's way): the window in which a
		// SIGKILLed launcher leaves the worker's helpers running is well
		// under a millisecond, and its worker's first process still ends
		// by its parent-death signal.
		reaped := make(chan *reaper, 1)
		go func(pgid int) {
			rp, err := startReaper(pgid)
			if err != nil {
				g.log.WithError(err).WithField("pgid", pgid).Warn("could not start the worker group's reaper: should the launcher be killed (SIGKILL), the worker's forked helpers would outlive it and keep its devices held")
			}
			reaped <- rp
		}(p.pid)
		if afterStart != nil {
			afterStart(p.pid)
		}
		g.pgids[p.pid] = true
		g.mu.Unlock()
		started <- nil
		code := wait()
		g.mu.Lock()
		delete(g.pgids, p.pid)
		delete(g.skipped, p.pid)
		g.mu.Unlock()
		endGroup(p.pid, g.log)
		(<-reaped).stop()
		p.exited <- code
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return p, nil
}

// stdioFiles returns the descriptors of cmd's standard streams when each
// is a file (os.Stdin, os.Stdout, … as the command passes them) and cmd
// needs nothing else of os/exec, so that it can be started with
// syscall.ForkExec: os/exec would first fork a throwaway child to test for
// pidfd support (once per process, a fork and a wait on every launch)
// and hands a file to the child as it is anyway. A writer that is not a
// file (a buffer in tests, the per-device prefixer) needs os/exec's pipes.
func stdioFiles(cmd *exec.Cmd) ([]uintptr, bool) {
	if len(cmd.ExtraFiles) > 0 || cmd.Cancel != nil || cmd.Stdin == nil || cmd.Stdout == nil || cmd.Stderr == nil {
		return nil, false
	}
	var fds []uintptr
	for _, s := range []any{cmd.Stdin, cmd.Stdout, cmd.Stderr} {
		f, ok := s.(*os.File)
		if !ok || f == nil {
			return nil, false
		}
		fds = append(fds, f.Fd())
	}
	return fds, true
}

func envOrOwn(env []string) []string {
	if env == nil {
		return os.Environ()
	}
	return env
}

// waitPid waits for the child pid and returns its shell-style exit code.
func waitPid(pid int) int {
	for {
		var ws syscall.WaitStatus
		_, err := syscall.Wait4(pid, &ws, 0, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return ExitInternal
		}
		if ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ws.ExitStatus()
	}
}

// groupEndTimeout bounds the wait for a finished worker's group to die.
const groupEndTimeout = 10 * time.Second

// endGroup kills what is left of a finished worker's process group (its
// forked helpers) and waits until none of it runs, so that its devices are
// released only once nothing of the worker can still use them. The
// launcher is their reaper (becomeSubreaper) where the system allows.
func endGroup(pgid int, log logrus.FieldLogger) {
	deadline := time.Now().Add(groupEndTimeout)
	for wait := 100 * time.Microsecond; ; {
		if err := syscall.Kill(-pgid, syscall.SIGKILL); errors.Is(err, syscall.ESRCH) {
			return
		}
		reapGroup(pgid)
		if time.Now().After(deadline) {
			log.WithField("pgid", pgid).Warn("the worker's process group still has members after SIGKILL")
			return
		}
		time.Sleep(wait)
		if wait < 10*time.Millisecond {
			wait *= 2
		}
	}
}

// reaperShell runs the reaper.
const reaperShell = "/bin/sh"

// reaperScript is the reaper's program: it ignores the signals a stop
// sends (it is in no group anyone signals, but a terminal's or an
// operator's may reach it), waits until its standard input, the launcher's
// pipe, ends, which happens when the launcher dies however it dies, and
// then kills the worker's process group ($1).
const reaperScript = `trap '' HUP INT QUIT TERM; read x; kill -9 -"$1"`

// reaper ends a worker's process group when the launcher dies without
// doing so itself. YARN stops a container with SIGTERM to the container's
// process group and, yarn.nodemanager.sleep-delay-before-sigkill.ms later
// (250 ms by default), SIGKILL to it; the worker has a group of its own
// (signals are forwarded once, the launcher can end the worker's tree
// without ending itself, the host coordination records that group), which
// YARN's kill does not reach, and the parent-death signal reaches the
// worker's first process only. So every worker gets a reaper: a process
// (on linux/amd64 cloned without an exec, reaper_linux_amd64.go;
// elsewhere a shell) in a process group of its own (nothing YARN or the launcher sends reaches
// it), reading a pipe whose only writer is the launcher. When the
// launcher is SIGKILLed, the kernel closes the pipe, and the reaper sends
// SIGKILL to the worker's group at once: every process of it ends, a
// helper that ignores SIGTERM too, and the devices the coordination holds
// for the group are free then. A launcher that ends its worker itself
// (endGroup) kills its reaper afterwards (stop).
type reaper struct {
	pid   int
	w     *os.File // the pipe's write end, held open while the launcher lives
	stack []byte   // a cloned reaper's stack (reaper_linux_amd64.go), freed once it is reaped
}

// startShellReaper starts the reaper of process group pgid as a shell
// (reaperShell), where the launcher cannot clone one (startReaper).
func startShellReaper(pgid int) (*reaper, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("reaper pipe: %w", err)
	}
	defer r.Close()
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		_ = w.Close()
		return nil, fmt.Errorf("reaper: %w", err)
	}
	defer null.Close()
	pid, err := syscall.ForkExec(reaperShell, []string{"xres-reaper", "-c", reaperScript, "xres-reaper", strconv.Itoa(pgid)},
		&syscall.ProcAttr{
			Dir:   "/",
			Env:   []string{"PATH=/usr/bin:/bin"},
			Files: []uintptr{r.Fd(), null.Fd(), null.Fd()},
			Sys:   &syscall.SysProcAttr{Setpgid: true},
		})
	if err != nil {
		_ = w.Close()
		return nil, fmt.Errorf("start reaper %s: %w", reaperShell, err)
	}
	return &reaper{pid: pid, w: w}, nil
}

// stop kills the reaper, then closes its pipe: once the worker's group has
// ended, nothing is left for it to do (and its group id may be reused).
// The pipe is closed without waiting for the reaper's end: once kill has
// returned, SIGKILL is pending for it, and a process with SIGKILL pending
// never runs another instruction of its own (the kernel ends it on its
// way back from any system call or interrupt, and a pipe read it waits in
// returns for the signal), so it cannot see the pipe's end and signal the
// group. It is reaped off the launch's way: the launch does not wait
// until a killed shell has been torn down (an unreaped child left at the
// launcher's exit is reaped by its parent's reaper).
func (rp *reaper) stop() {
	if rp == nil {
		return
	}
	_ = syscall.Kill(rp.pid, syscall.SIGKILL)
	_ = rp.w.Close()
	go func() {
		waitPid(rp.pid)
		if rp.stack != nil {
			_ = syscall.Munmap(rp.stack)
		}
	}()
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
