package launch

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/driver"
)

// TestRunWorkerCancelled: when the launch's context ends, the worker's
// group gets SIGTERM, and SIGKILL once the grace period is over.
func TestRunWorkerCancelled(t *testing.T) {
	tests := []struct {
		name   string
		script string
		code   int
	}{
		{name: "worker ends on SIGTERM", script: `touch "$1"; while :; do sleep 0.02; done`, code: 143},
		{name: "worker ignores SIGTERM, gets SIGKILL", script: `trap '' TERM; touch "$1"; while :; do sleep 0.02; done`, code: 137},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ready := filepath.Join(t.TempDir(), "ready")
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			log := driver.LoggerOrDiscard(nil)
			gate := newSignalGate(nil, nil, log)
			defer gate.Stop()
			done := make(chan int, 1)
			go func() {
				code, err := runWorker(ctx, worker{Args: []string{"sh", "-c", tc.script, "w", ready}, Env: []string{"PATH=" + os.Getenv("PATH")}}, gate, 200*time.Millisecond, log)
				require.NoError(t, err)
				done <- code
			}()
			waitFor(t, func() bool { _, err := os.Stat(ready); return err == nil })
			cancel()
			select {
			case code := <-done:
				require.Equal(t, tc.code, code)
			case <-time.After(10 * time.Second):
				t.Fatal("worker not stopped")
			}
		})
	}
}

// A worker whose standard streams are all files (the command's case) is
// started with syscall.ForkExec, not os/exec: the streams reach it, its exit
// code and its death by a signal come back as with os/exec, and a start
// that fails is an error.
func TestRunWorkerDirectStart(t *testing.T) {
	dir := t.TempDir()
	in, err := os.Open(os.DevNull)
	require.NoError(t, err)
	defer in.Close()
	out, err := os.Create(filepath.Join(dir, "out"))
	require.NoError(t, err)
	defer out.Close()
	log := driver.LoggerOrDiscard(nil)
	gate := newSignalGate(nil, nil, log)
	defer gate.Stop()
	run := func(args ...string) (int, error) {
		w := worker{Args: args, Env: []string{"PATH=" + os.Getenv("PATH"), "GREETING=hi"}, Dir: dir, Stdin: in, Stdout: out, Stderr: out}
		return runWorker(context.Background(), w, gate, time.Second, log)
	}
	cmd := &exec.Cmd{Stdin: in, Stdout: out, Stderr: out}
	_, direct := stdioFiles(cmd)
	require.True(t, direct)
	cmd.Stdout = new(strings.Builder)
	_, direct = stdioFiles(cmd)
	require.False(t, direct, "a writer that is not a file needs os/exec")

	code, err := run("sh", "-c", `echo "$GREETING from $(pwd)"; exit 7`)
	require.NoError(t, err)
	require.Equal(t, 7, code)
	b, err := os.ReadFile(out.Name())
	require.NoError(t, err)
	require.Equal(t, "hi from "+dir+"\n", string(b))

	code, err = run("sh", "-c", `kill -9 $$`)
	require.NoError(t, err)
	require.Equal(t, 137, code)

	// The child cannot enter its working directory: ForkExec fails.
	w := worker{Args: []string{"true"}, Env: []string{"PATH=" + os.Getenv("PATH")}, Dir: filepath.Join(dir, "gone"), Stdin: in, Stdout: out, Stderr: out}
	_, err = runWorker(context.Background(), w, gate, time.Second, log)
	require.ErrorContains(t, err, "no such file or directory")
	require.Equal(t, ExitWorkerStart, ExitCode(err))
}

// Issue 41: a container that ends leaves nothing of its worker's tree
// behind, a forked helper that ignores SIGTERM included, and its devices
// are free then, however the launcher ends: stopped by a signal, killed
// alone (the OOM killer), or the way YARN stops a container (SIGTERM to
// the container's process group, SIGKILL to it
// yarn.nodemanager.sleep-delay-before-sigkill.ms later).
func TestEndedLauncherLeavesNoHelper(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	bin := launcherBinary(t)
	// YARN's default sleep-delay-before-sigkill: what the NodeManager
	// waits between its two signals, not a bound of this test.
	const yarnSigkillDelay = 250 * time.Millisecond
	yarnStop := func(pid int) error {
		if err := syscall.Kill(-pid, syscall.SIGTERM); err != nil {
			return err
		}
		time.Sleep(yarnSigkillDelay)
		if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			return err
		}
		return nil
	}
	// The worker forks a helper that ignores SIGTERM, writes its pid to
	// $1 and waits.
	const helper = `(trap '' TERM; exec sleep 3600) & echo $! > "$1.tmp" && mv "$1.tmp" "$1"; `
	tests := []struct {
		name   string
		worker string
		stop   func(pid int) error // pid: the launcher, leader of its group
	}{
		{name: "SIGTERM to the launcher", worker: helper + "wait", stop: func(pid int) error { return syscall.Kill(pid, syscall.SIGTERM) }},
		{name: "SIGKILL to the launcher", worker: helper + "wait", stop: func(pid int) error { return syscall.Kill(pid, syscall.SIGKILL) }},
		{name: "YARN's stop", worker: helper + "wait", stop: yarnStop},
		// A worker whose shutdown outlasts YARN's grace (here: never
		// ends on SIGTERM): YARN's SIGKILL ends the launcher first.
		{name: "YARN's stop, slow worker", worker: helper + `trap 'while :; do sleep 1; done' TERM; wait`, stop: yarnStop},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newFakeGPUHost(t, 2, 2)
			bgFile := filepath.Join(h.dir, "bg")
			a := h.command(bin, "--conf", h.conf, "--", "sh", "-c", tc.worker, "worker", bgFile)
			// A file, not a pipe: Wait would wait for every holder of a pipe.
			logFile := filepath.Join(h.dir, "launcher.log")
			lf, err := os.Create(logFile)
			require.NoError(t, err)
			defer lf.Close()
			a.Stderr = lf
			launcherLog := func() string { b, _ := os.ReadFile(logFile); return string(b) }
			// The launcher leads its own group, as the NodeManager's setsid
			// makes a container's first process.
			a.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			require.NoError(t, a.Start())
			waited := make(chan struct{})
			go func() { _ = a.Wait(); close(waited) }()
			waitForFile(t, bgFile, 2*time.Minute)
			b, err := os.ReadFile(bgFile)
			require.NoError(t, err)
			bg, err := strconv.Atoi(strings.TrimSpace(string(b)))
			require.NoError(t, err)
			t.Cleanup(func() { _ = syscall.Kill(bg, syscall.SIGKILL) })
			waitForState(t, h.state, `"group":{"pgid":`)
			require.Len(t, h.probe(t, bin).Resources[0].Devices, 0, "the launcher holds both GPUs")

			require.NoError(t, tc.stop(a.Process.Pid))
			<-waited
			deadline := time.Now().Add(2 * time.Minute)
			for !processGone(bg) {
				require.True(t, time.Now().Before(deadline), "the worker's helper %d, which ignores SIGTERM, outlived its launcher by 2 minutes\nlauncher: %s", bg, launcherLog())
				time.Sleep(5 * time.Millisecond)
			}
			rep := h.probe(t, bin)
			for _, holder := range rep.Resources[0].Coordination.Holders {
				require.False(t, holder.Alive, "a holder lives on: %+v", holder)
			}
			require.Len(t, rep.Resources[0].Devices, 2, "both GPUs are free once the worker's tree is gone")
		})
	}
}

// waitForState waits until the coordination state file contains s.
func waitForState(t *testing.T, state, s string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		b, _ := os.ReadFile(state)
		if strings.Contains(string(b), s) {
			return
		}
		require.True(t, time.Now().Before(deadline), "%q not in the state within 2 minutes: %s", s, b)
		time.Sleep(5 * time.Millisecond)
	}
}

// A reaper stopped once its worker's group has ended is killed and its
// pipe closed without waiting for its end (stop): it must never see the
// pipe's end and signal the group it watched, which may by then be
// another's (a reused process group id). Here the group is still alive
// (a sleep of this test's), and outlives the stopped reapers.
func TestStoppedReaperSignalsNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	victim := exec.Command("sleep", "3600")
	victim.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, victim.Start())
	t.Cleanup(func() { _ = syscall.Kill(-victim.Process.Pid, syscall.SIGKILL); _ = victim.Wait() })
	for i := 0; i < 20; i++ { // stopped at every stage of the shell's start
		rp, err := startReaper(victim.Process.Pid)
		require.NoError(t, err)
		rp.stop()
		for syscall.Kill(rp.pid, 0) == nil && !reaped(rp.pid) {
			time.Sleep(time.Millisecond)
		}
	}
	require.False(t, reaped(victim.Process.Pid), "a stopped reaper killed the group it watched")
	// And one whose launcher is gone (its pipe closed, not stopped) does.
	rp, err := startReaper(victim.Process.Pid)
	require.NoError(t, err)
	require.NoError(t, rp.w.Close())
	require.Equal(t, 128+int(syscall.SIGKILL), exitCodeOfWait(t, victim))
}

// reaped: pid is a zombie or gone (a stopped reaper's end is reaped off
// the launch's way).
func reaped(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	return strings.HasPrefix(rest, "Z")
}

func exitCodeOfWait(t *testing.T, cmd *exec.Cmd) int {
	t.Helper()
	_ = cmd.Wait()
	return exitCodeOf(cmd.ProcessState)
}
