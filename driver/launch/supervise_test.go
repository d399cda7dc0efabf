package launch

import (
	"context"
	"os"
	"path/filepath"
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
