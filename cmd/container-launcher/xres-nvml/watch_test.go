package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/xres/xres/driver/gpu"
)

// Where NVML cannot be loaded (this host: no NVIDIA driver; a library path
// that is not one), `xres-nvml watch` says so on its stream and exits 3:
// a launcher reading it reports the watch lost, never "no events".
func TestWatchWithoutNVML(t *testing.T) {
	var out, errOut bytes.Buffer
	lib := filepath.Join(t.TempDir(), "libnvidia-ml.so.1")
	if err := os.WriteFile(lib, []byte("not a library"), 0o644); err != nil {
		t.Fatal(err)
	}
	code := gpu.NVMLWatchMain(context.Background(), []string{"--library", lib}, &out, &errOut)
	if code != 3 {
		t.Fatalf("exit %d, want 3 (NVML unavailable); stderr %q", code, errOut.String())
	}
	err := gpu.ReadHealthEvents(&out, func(e gpu.HealthEvent) error {
		t.Errorf("unexpected event %+v", e)
		return nil
	})
	if !errors.Is(err, gpu.ErrWatchLost) || !bytes.Contains([]byte(err.Error()), []byte("NVML unavailable")) {
		t.Fatalf("stream: %v", err)
	}
	if code := gpu.NVMLWatchMain(context.Background(), []string{"extra"}, &out, &errOut); code != 2 {
		t.Fatalf("an unexpected argument: exit %d, want 2", code)
	}
}
