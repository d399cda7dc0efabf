package launch

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/xres/xres/resources"
	"github.com/xres/xres/resources/contract"
)

// Sizes of BenchmarkGPUSampling.
const (
	benchSampleWorker   = "2"                   // seconds the worker (sleep) runs
	benchSampleInterval = 20 * time.Millisecond // xres.metrics.interval on the sampling=on side (500× the default's rhythm)
)

// BenchmarkGPUSampling is what relaying GPU samples costs the launcher:
// Main (in-process, 2 GPUs granted by the fake host) runs a worker that
// sleeps 2 s, with sampling off and with xres.metrics.interval 20 ms, side
// by side in one run. The helper is a fake xres-nvml (a shell loop printing
// a line of 2 GPUs' samples every 20 ms): its CPU is its own process's and
// not counted; the launcher's is this process's user+sys CPU (getrusage
// RUSAGE_SELF), which includes the AM's side here (an httptest handler that
// reads the body and answers 204, a small part). It reports ms-cpu (per
// launch), reports (samples reports the AM got), and on sampling=on
// µs-cpu/report ((on − off) / reports: the relay's JSON decode and encode,
// HMAC and POST per line), B-report (one report's body) and x-cpu-vs-off.
//
//	go test -run '^$' -bench GPUSampling -benchtime 1x -count 3 ./driver/launch/
func BenchmarkGPUSampling(b *testing.B) {
	secret := []byte("0123456789abcdef0123456789abcdef")
	var mu sync.Mutex
	reports, size := 0, 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if !contract.VerifyReport(secret, body, r.Header.Get(contract.HeaderReportSignature)) {
			w.WriteHeader(http.StatusForbidden)
			return
		}
		var rep contract.DeviceReport
		_ = json.Unmarshal(body, &rep)
		mu.Lock()
		if len(rep.GPU) > 0 {
			reports++
			size = len(body)
		}
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()

	dir := b.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		b.Fatal(err)
	}
	line := `[{"i":"0","u":"GPU-00000000-0000-4000-8000-000000000000","t":1765000000,"util":87,"mem":40960,"pw":312.5,"temp":61,"xid":0},` +
		`{"i":"1","u":"GPU-00000000-0000-4000-8000-000000000001","t":1765000000,"util":3,"mem":1024,"pw":61.5,"temp":40,"xid":0}]`
	script := "#!/bin/sh\nwhile :; do echo '" + line + "' || exit 0; sleep 0.02; done\n"
	if err := os.WriteFile(filepath.Join(bin, "xres-nvml"), []byte(script), 0o755); err != nil {
		b.Fatal(err)
	}
	token := tokenFile(b, secret)
	var offCPU time.Duration
	for _, on := range []bool{false, true} {
		name, interval := "sampling=off", time.Duration(0)
		if on {
			name, interval = "sampling=on", benchSampleInterval
		}
		b.Run(name, func(b *testing.B) {
			var cpu time.Duration
			n := 0
			for range b.N {
				mu.Lock()
				reports = 0
				mu.Unlock()
				h := newFakeHost()
				h.devices["gpu"] = 2
				envVars := map[string]string{contract.EnvReportURL: srv.URL + "/api/report", EnvContainerID: "container_1_0001_01_000002",
					"TMPDIR": b.TempDir(), EnvTokenFile: token, "PATH": bin + ":" + os.Getenv("PATH")}
				var stderr syncBuffer
				c0 := processCPU()
				code := Main(context.Background(), []string{"--", "sleep", benchSampleWorker}, Env{
					Getenv:   func(k string) string { return envVars[k] },
					Environ:  []string{"PATH=" + os.Getenv("PATH")},
					Stderr:   &stderr,
					Registry: registryWith(h),
					Load: func(Config) (Loaded, error) {
						return Loaded{Specs: []resources.Spec{gpuSpec(2)}, MetricsInterval: interval}, nil
					},
				})
				cpu += processCPU() - c0
				if code != 0 {
					b.Fatalf("launcher exited %d: %s", code, stderr.String())
				}
				mu.Lock()
				n += reports
				mu.Unlock()
			}
			perLaunch := cpu / time.Duration(b.N)
			b.ReportMetric(float64(perLaunch.Microseconds())/1000, "ms-cpu")
			b.ReportMetric(float64(n)/float64(b.N), "reports")
			if !on {
				offCPU = perLaunch
				return
			}
			if n == 0 {
				b.Fatal("the AM got no samples report")
			}
			mu.Lock()
			b.ReportMetric(float64(size), "B-report")
			mu.Unlock()
			if offCPU > 0 {
				b.ReportMetric(float64((perLaunch-offCPU).Nanoseconds())/1000/(float64(n)/float64(b.N)), "µs-cpu/report")
				b.ReportMetric(float64(perLaunch)/float64(offCPU), "x-cpu-vs-off")
			}
		})
	}
}

// processCPU is this process's user+sys CPU time.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
