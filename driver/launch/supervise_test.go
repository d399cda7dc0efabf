package launch

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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
