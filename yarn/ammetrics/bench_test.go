package ammetrics

import (
	"net/http/httptest"
	"runtime"
	"strconv"
	"testing"

	"github.com/xres/xres/resources/contract"
	"github.com/xres/xres/yarn/amstatus"
)

// What GPU samples cost the AM at 10,000 workers of one GPU, each after an
// hour of samples every 10 s: the heap their tracks hold, and one scrape
// of /metrics (time and size).
//
//	go test -run '^$' -bench . -benchtime 1x ./yarn/ammetrics/
const benchWorkers = 10000

type benchSource struct{ ws []amstatus.WorkerGPUs }

func (s benchSource) StatusPage(amstatus.Page) amstatus.Status {
	return amstatus.Status{Groups: []amstatus.GroupStatus{{Workers: benchWorkers, Running: benchWorkers}}}
}
func (s benchSource) EachWorkerGPUs(fn func(amstatus.WorkerGPUs)) {
	for _, w := range s.ws {
		fn(w)
	}
}

func benchTracks() []*amstatus.GPUTrack { return benchTracksN(benchWorkers) }

// benchTracksN is n one-GPU workers' tracks after an hour of samples.
func benchTracksN(n int) []*amstatus.GPUTrack {
	rule := amstatus.IdleRule{}.OrDefault()
	tracks := make([]*amstatus.GPUTrack, n)
	for i := range tracks {
		tracks[i] = &amstatus.GPUTrack{}
		for k := int64(0); k < 360; k++ {
			tracks[i].Add([]contract.GPUSample{{Index: "0", UUID: "GPU-00000000-0000-4000-8000-0000" + strconv.Itoa(10000000+i),
				At: 1765000000 + 10*k, Util: float64(k % 100), MemMiB: 40000, PowerW: 300, TempC: 60}}, rule)
		}
	}
	return tracks
}

func BenchmarkGPUTracksAt10k(b *testing.B) {
	for range b.N {
		runtime.GC()
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		tracks := benchTracks()
		runtime.GC()
		runtime.ReadMemStats(&m1)
		b.ReportMetric(float64(m1.HeapAlloc-m0.HeapAlloc)/(1<<20), "MiB-heap")
		b.ReportMetric(float64(m1.HeapAlloc-m0.HeapAlloc)/benchWorkers, "B/worker")
		runtime.KeepAlive(tracks)
	}
}

func BenchmarkScrapeAt10k(b *testing.B) {
	tracks := benchTracks()
	ws := make([]amstatus.WorkerGPUs, benchWorkers)
	for i, t := range tracks {
		ws[i] = amstatus.WorkerGPUs{Container: "container_1765000000000_0001_01_" + strconv.Itoa(100000+i), Host: "node" + strconv.Itoa(i%500), Rank: i, GPUs: t.GPUs}
	}
	m := New("application_1765000000000_0001", benchSource{ws})
	h := m.Handler()
	b.ResetTimer()
	var n int
	for range b.N {
		var rec countingResponse // as a socket takes it: httptest's recorder would hold all 15 MiB
		h.ServeHTTP(&rec, httptest.NewRequest("GET", "/metrics", nil))
		n = rec.n
	}
	b.ReportMetric(float64(n)/(1<<20), "MiB-exposition")
}
