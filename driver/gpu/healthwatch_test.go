//go:build linux

package gpu

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fakeWatch starts testdata/fake-xres-nvml watch on a new event file.
func fakeWatch(t *testing.T, extra ...string) (w *HealthWatch, events chan HealthEvent, source string, err error) {
	t.Helper()
	helper, err := filepath.Abs(filepath.Join("testdata", "fake-xres-nvml"))
	require.NoError(t, err)
	source = filepath.Join(t.TempDir(), "events")
	env := append(os.Environ(), "XRES_FAKE_NVML_EVENTS="+source, "XRES_FAKE_GPUS=2")
	events = make(chan HealthEvent, 16)
	w, err = StartHealthWatch(ctxT(t), helper, "", append(env, extra...), 20*time.Second, func(e HealthEvent) { events <- e })
	if err == nil {
		t.Cleanup(w.Stop)
	}
	return w, events, source, err
}

func inject(t *testing.T, source, line string) {
	t.Helper()
	f, err := os.OpenFile(source, os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644)
	require.NoError(t, err)
	_, err = f.WriteString(line + "\n")
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

// An event injected into the fake helper's source reaches the reader; the
// helper dying is the watch lost, reported with why.
func TestHealthWatchFakeHelper(t *testing.T) {
	w, events, source, err := fakeWatch(t)
	require.NoError(t, err)
	require.Equal(t, []string{"GPU-00000000-0000-4000-8000-000000000000", "GPU-00000000-0000-4000-8000-000000000001"}, w.Ready.Watched)
	inject(t, source, `{"type":"xid","uuid":"GPU-00000000-0000-4000-8000-000000000001","index":1,"minor":1,"xid":94,"time":"2026-12-07T01:00:00Z"}`)
	select {
	case e := <-events:
		require.Equal(t, uint64(94), e.XID)
		require.Equal(t, 1, e.Index)
	case <-w.Done():
		t.Fatalf("watch ended: %v", w.Err())
	}

	require.NoError(t, syscall.Kill(-w.cmd.Process.Pid, syscall.SIGKILL))
	<-w.Done()
	require.ErrorIs(t, w.Err(), ErrWatchLost)
	require.ErrorContains(t, w.Err(), "signal: killed")

	// A line the reader cannot read ends the watch too: it is lost, not
	// skipped.
	w, _, source, err = fakeWatch(t)
	require.NoError(t, err)
	inject(t, source, "Segmentation fault")
	<-w.Done()
	require.ErrorIs(t, w.Err(), ErrHealthStream)
	require.ErrorContains(t, w.Err(), "line 2")
}

// NVML unavailable to the helper: the watch does not start, and says why.
func TestHealthWatchUnavailable(t *testing.T) {
	_, _, _, err := fakeWatch(t, "XRES_FAKE_NVML_WATCH_FAIL=init: ERROR_LIBRARY_NOT_FOUND")
	require.ErrorIs(t, err, ErrWatchLost)
	require.ErrorContains(t, err, "init: ERROR_LIBRARY_NOT_FOUND")
	require.ErrorContains(t, err, "exit status 3")

	_, err = StartHealthWatch(ctxT(t), filepath.Join(t.TempDir(), "xres-nvml"), "", nil, time.Second, func(HealthEvent) {})
	require.ErrorIs(t, err, ErrWatchLost)
	require.ErrorContains(t, err, "no such file")
}
