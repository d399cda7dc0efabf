package launch

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The command subscribes a launch's signals as its packages initialise
// (cmd/container-launcher/internal/earlysig), and only a launch's: a
// SIGTERM while the host's GPUs are being listed stops a launch cleanly
// (it exits 143 and says so), and kills a probe, which holds nothing, at
// once (death by the signal, as any program that catches none).
func TestSignalSubscriptionOnlyForALaunch(t *testing.T) {
	bin := launcherBinary(t)
	for _, tc := range []struct {
		name   string
		args   func(h *fakeGPUHost) []string
		caught bool
	}{
		{"launch", func(h *fakeGPUHost) []string { return []string{"--conf", h.conf, "--", "true"} }, true},
		{"probe", func(h *fakeGPUHost) []string { return []string{"probe", "--conf", h.conf} }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newFakeGPUHost(t, 2, 1)
			// nvidia-smi that says it runs, then hangs: the listing is under
			// way when the signal comes.
			slow := t.TempDir()
			started := filepath.Join(slow, "started")
			script := "#!/bin/sh\necho $$ >> " + started + "\nexec sleep 60\n"
			require.NoError(t, os.WriteFile(filepath.Join(slow, "nvidia-smi"), []byte(script), 0o755))
			env := append([]string(nil), h.env...)
			for i, kv := range env {
				if strings.HasPrefix(kv, "PATH=") {
					env[i] = "PATH=" + slow + string(os.PathListSeparator) + strings.TrimPrefix(kv, "PATH=")
				}
			}
			cmd := exec.Command(bin, tc.args(h)...)
			cmd.Env, cmd.Dir = env, h.dir
			var stderr syncBuffer
			cmd.Stderr = &stderr
			require.NoError(t, cmd.Start())
			t.Cleanup(func() {
				_ = cmd.Process.Kill()
				if b, err := os.ReadFile(started); err == nil {
					for _, p := range strings.Fields(string(b)) {
						_ = exec.Command("kill", "-9", p).Run()
					}
				}
			})
			waitFor(t, func() bool { _, err := os.Stat(started); return err == nil })
			require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			var err error
			select {
			case err = <-done:
			case <-time.After(30 * time.Second):
				t.Fatalf("the launcher did not end after SIGTERM:\n%s", stderr.String())
			}
			var ee *exec.ExitError
			require.True(t, errors.As(err, &ee), "%v\n%s", err, stderr.String())
			ws := ee.Sys().(syscall.WaitStatus)
			if tc.caught {
				require.False(t, ws.Signaled(), "a launch catches SIGTERM:\n%s", stderr.String())
				require.Equal(t, 128+int(syscall.SIGTERM), ws.ExitStatus(), stderr.String())
				require.Contains(t, stderr.String(), "launch stopped by signal before the worker started")
			} else {
				require.True(t, ws.Signaled() && ws.Signal() == syscall.SIGTERM, "probe is not subscribed: %v\n%s", err, stderr.String())
			}
		})
	}
}
