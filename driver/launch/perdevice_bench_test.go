package launch

import (
	"context"
	"os/exec"
	"runtime"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
)

// BenchmarkPerDeviceStart: what pinning costs per worker start, one worker
// running /bin/true through the supervisor.
//
//	unpinned            exec of the worker alone (the floor)
//	pinned-reexec       container-launcher __exec-pinned, then exec of the
//	                    worker (the default: no unpinned window)
//	pinned-after-start  sched_setaffinity on the child after Start (the
//	                    fallback: a window before the mask applies)
//
//	go test -run '^$' -bench PerDeviceStart ./driver/launch/
func BenchmarkPerDeviceStart(b *testing.B) {
	if runtime.GOOS != "linux" {
		b.Skip("CPU affinity is Linux only")
	}
	bin := launcherBinary(b)
	truePath, err := exec.LookPath("true")
	if err != nil {
		b.Skip("no true(1)")
	}
	allowed, err := allowedCPUs()
	if err != nil {
		b.Fatal(err)
	}
	cpus := allowed[:1]
	for _, bc := range []struct {
		name string
		self string
		cpus []int
	}{
		{name: "unpinned"},
		{name: "pinned-reexec", self: bin, cpus: cpus},
		{name: "pinned-after-start", cpus: cpus},
	} {
		b.Run(bc.name, func(b *testing.B) {
			log := logrus.New()
			log.SetLevel(logrus.ErrorLevel)
			gate := newSignalGate(nil, nil, log)
			defer gate.Stop()
			s := &supervisor{gate: gate, log: log, grace: time.Second, self: bc.self}
			ds := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				w := &deviceWorker{path: truePath, args: []string{"true"}, cpus: bc.cpus}
				start := time.Now()
				code, err := s.run(context.Background(), []*deviceWorker{w})
				if err != nil || code != 0 {
					b.Fatalf("run: code %d, %v", code, err)
				}
				ds = append(ds, time.Since(start))
			}
			reportMedian(b, ds)
		})
	}
}
