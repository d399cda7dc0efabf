package coord

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/xres/xres/driver"
)

// BenchmarkReserveRelease: one reservation and its release (lock, read,
// atomic rewrite with fsync, twice) on an otherwise idle host.
func BenchmarkReserveRelease(b *testing.B) {
	h, err := New(Options{StateFile: filepath.Join(b.TempDir(), "state")})
	if err != nil {
		b.Fatal(err)
	}
	keys := []string{"GPU-0", "GPU-1", "GPU-2", "GPU-3", "GPU-4", "GPU-5", "GPU-6", "GPU-7"}
	ctx := context.Background()
	for b.Loop() {
		if _, err := h.Reserve(ctx, "gpu", keys, 1, false); err != nil {
			b.Fatal(err)
		}
		if err := h.Release(ctx, "gpu"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDryRun: what a probe pays for coordination (no lock, no write).
func BenchmarkDryRun(b *testing.B) {
	state := filepath.Join(b.TempDir(), "state")
	holder, err := New(Options{StateFile: state})
	if err != nil {
		b.Fatal(err)
	}
	keys := []string{"GPU-0", "GPU-1", "GPU-2", "GPU-3", "GPU-4", "GPU-5", "GPU-6", "GPU-7"}
	if _, err := holder.Reserve(context.Background(), "gpu", keys, 4, false); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := holder.Reserve(context.Background(), "gpu", keys, 2, true); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDryRunMIG: a probe on a host of 8 GPUs with 7 MIG instances each,
// half the GPUs held whole and an instance of each other GPU held, choosing
// among the instances (every candidate checked against parents and
// partitions).
func BenchmarkDryRunMIG(b *testing.B) {
	state := filepath.Join(b.TempDir(), "state")
	holder, err := New(Options{StateFile: state})
	if err != nil {
		b.Fatal(err)
	}
	var gpus []string
	var migs []driver.Candidate
	for g := range 8 {
		gpus = append(gpus, fmt.Sprintf("GPU-%d", g))
		for m := range 7 {
			migs = append(migs, driver.Candidate{Key: fmt.Sprintf("MIG-%d-%d", g, m), Parent: gpus[g]})
		}
	}
	ctx := context.Background()
	if _, err := holder.Reserve(ctx, "gpu", gpus, 4, false); err != nil {
		b.Fatal(err)
	}
	if _, err := holder.ReserveCandidates(ctx, "mig", migs, 4, false); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := holder.ReserveCandidates(ctx, "mig", migs, 20, true); err != nil {
			b.Fatal(err)
		}
	}
}
