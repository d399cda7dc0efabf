package gpu

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/xres/xres/driver"
)

// BenchmarkDiscoverFakeSMI: built-in discovery of 2 GPUs through the fake
// nvidia-smi (NVML unavailable), with host coordination, reserve + release.
// Health checks are on (the default): two nvidia-smi runs per discovery.
func BenchmarkDiscoverFakeSMI(b *testing.B) { benchDiscoverFakeSMI(b, nil) }

// BenchmarkDiscoverFakeSMIHealthOff: the same with health.enabled false,
// one nvidia-smi run per discovery: what the health checks cost.
func BenchmarkDiscoverFakeSMIHealthOff(b *testing.B) {
	benchDiscoverFakeSMI(b, map[string]string{ParamHealth: "false"})
}

func benchDiscoverFakeSMI(b *testing.B, extra map[string]string) {
	b.Setenv("XRES_FAKE_GPUS", "2")
	fakebin, err := filepath.Abs(filepath.Join("testdata", "fakebin"))
	if err != nil {
		b.Fatal(err)
	}
	getenv := func(k string) string {
		if k == "PATH" {
			return fakebin
		}
		return ""
	}
	params := map[string]string{ParamCoordFile: filepath.Join(b.TempDir(), "state")}
	for k, v := range extra {
		params[k] = v
	}
	d, err := newDriver(driver.Options{Resource: "gpu", Getenv: getenv,
		Params: params}, deps{nvml: unavailableNVMLBench{}})
	if err != nil {
		b.Fatal(err)
	}
	ctx := b.Context()
	for b.Loop() {
		if _, err := d.Discover(ctx, 2); err != nil {
			b.Fatal(err)
		}
		if err := d.(driver.Releaser).Release(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

type unavailableNVMLBench struct{}

func (unavailableNVMLBench) Enumerate(ctx context.Context) ([]driver.Device, error) {
	return nil, ErrNVMLUnavailable
}
