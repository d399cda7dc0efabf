//go:build cgo && linux

package main

import (
	"io"
	"syscall"
	"testing"
	"time"
)

// BenchmarkSampleLine is xres-nvml sample's own work per line of samples
// for 2 GPUs: the reads through the sampler's device interface (the tests'
// fake devices: NVML's own calls, in the driver, are not counted; there is
// no GPU here), the samples' JSON and the write (to io.Discard). ns/op is
// the wall time per line; µs-cpu/sample the process's user+sys CPU per
// line (getrusage); B-line the line's size.
//
//	go test -run '^$' -bench SampleLine ./cmd/container-launcher/xres-nvml/
func BenchmarkSampleLine(b *testing.B) {
	r := &nvmlReader{index: []string{"0", "1"},
		devs:    []sampleDevice{fakeDevice{util: 87, temp: 61, powerMW: 312500, used: 40 << 30}, fakeDevice{util: 3, temp: 40, powerMW: 61500, used: 1 << 30}},
		uuids:   []string{"GPU-00000000-0000-4000-8000-000000000000", "GPU-00000000-0000-4000-8000-000000000001"},
		xids:    make([]uint64, 2),
		closeFn: func() {},
	}
	ready := make(chan time.Time)
	close(ready)
	after := func(time.Duration) <-chan time.Time { return ready }
	var out countWriter
	b.ResetTimer()
	cpu0 := rusageCPU()
	if code := sampleLoop(r, time.Nanosecond, b.N, &out, io.Discard, after); code != 0 {
		b.Fatalf("sampleLoop: %d", code)
	}
	cpu := rusageCPU() - cpu0
	b.StopTimer()
	b.ReportMetric(float64(cpu.Nanoseconds())/1000/float64(b.N), "µs-cpu/sample")
	b.ReportMetric(float64(out.n)/float64(b.N), "B-line")
}

type countWriter struct{ n int }

func (w *countWriter) Write(p []byte) (int, error) { w.n += len(p); return len(p), nil }

func rusageCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
