package ammetrics

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"

	"github.com/xres/xres/resources/contract"
	"github.com/xres/xres/yarn/amstatus"
)

// hostileSource is two running workers whose container ids, hosts, groups
// and UUIDs hold what the text format must escape, and one on a clean
// host with no rank.
func hostileSource() benchSource {
	track := func(index, uuid string, util float64) []amstatus.GPUState {
		t := &amstatus.GPUTrack{}
		t.Add([]contract.GPUSample{{Index: index, UUID: uuid, At: 1765000000, Util: util, MemMiB: 2048, PowerW: 75.5, TempC: 41, XIDs: 2}}, amstatus.IdleRule{}.OrDefault())
		return t.GPUs
	}
	return benchSource{
		ws: []amstatus.WorkerGPUs{
			{Container: "container_\"1\"_\\x", Group: "g\nh", Host: "node\\1\n\"evil\"", Rank: 0, GPUs: track("0", "GPU-\"q\"\\b\nn", 3)},
			{Container: "container_2", Group: "g", Host: "bad\xffutf8", Rank: 7, GPUs: append(track("1", "GPU-b", 90), track("2", "} 1\n# TYPE x gauge", 50)...)},
			{Container: "container_3", Host: "ok", Rank: -1, GPUs: track("0", "GPU-c", 0)},
		},
	}
}

// scrape is one GET of m's handler with the Accept-Encoding given.
func scrape(t *testing.T, m *Metrics, encoding string) (string, http.Header) {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, Path, nil)
	if encoding != "" {
		req.Header.Set("Accept-Encoding", encoding)
	}
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, req)
	require.Equal(t, http.StatusOK, rec.Code)
	body := rec.Body.Bytes()
	if rec.Header().Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(bytes.NewReader(body))
		require.NoError(t, err)
		body, err = io.ReadAll(zr)
		require.NoError(t, err)
	}
	return string(body), rec.Header()
}

// clientGolangGPUs is the per-GPU families as client_golang wrote them
// before they were streamed (the reference for names, labels, values and
// escaping).
func clientGolangGPUs(t *testing.T, app string, ws []amstatus.WorkerGPUs) string {
	t.Helper()
	reg := prometheus.NewRegistry()
	var names []string
	for _, f := range gpuFamilies {
		names = append(names, f.name)
	}
	labels := []string{"application_id", "container_id", "group", "rank", "host", "gpu", "UUID"}
	vecs := make([]*prometheus.GaugeVec, len(gpuFamilies))
	counters := map[int]*prometheus.CounterVec{}
	for k, f := range gpuFamilies {
		if f.typ == "counter" {
			counters[k] = prometheus.NewCounterVec(prometheus.CounterOpts{Name: f.name, Help: f.help}, labels)
			reg.MustRegister(counters[k])
			continue
		}
		vecs[k] = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: f.name, Help: f.help}, labels)
		reg.MustRegister(vecs[k])
	}
	for _, w := range ws {
		rank := ""
		if w.Rank >= 0 {
			rank = strconv.Itoa(w.Rank)
		}
		for i := range w.GPUs {
			g := &w.GPUs[i]
			l := []string{app, strings.ToValidUTF8(w.Container, "\uFFFD"), strings.ToValidUTF8(w.Group, "\uFFFD"), rank,
				strings.ToValidUTF8(w.Host, "\uFFFD"), g.Last.Index, strings.ToValidUTF8(g.Last.UUID, "\uFFFD")}
			v := [...]float64{g.Last.Util / 100, g.Last.MemMiB * (1 << 20), g.Last.PowerW, g.Last.TempC, float64(g.Last.XIDs), g.IdleFor().Seconds(), float64(g.Last.At)}
			for k := range gpuFamilies {
				if c, ok := counters[k]; ok {
					c.WithLabelValues(l...).Add(v[k])
				} else {
					vecs[k].WithLabelValues(l...).Set(v[k])
				}
			}
		}
	}
	mfs, err := reg.Gather()
	require.NoError(t, err)
	order := map[string]int{}
	for k, n := range names {
		order[n] = k
	}
	var buf bytes.Buffer
	byName := map[string]int{}
	for i, mf := range mfs {
		byName[mf.GetName()] = i
	}
	for _, n := range names { // the streamed order
		_, err := expfmt.MetricFamilyToText(&buf, mfs[byName[n]])
		require.NoError(t, err)
	}
	return buf.String()
}

// The streamed per-GPU series are byte for byte what client_golang wrote,
// hostile label values included (quotes, backslashes, line feeds, invalid
// UTF-8, a UUID that looks like a new line of the format), and the whole
// exposition parses with each family once.
func TestStreamedGPUSeriesAsClientGolang(t *testing.T) {
	src := hostileSource()
	m := New("application_1_0001", src)
	for _, enc := range []string{"", "gzip", "gzip, deflate, br"} {
		body, h := scrape(t, m, enc)
		require.Equal(t, "text/plain; version=0.0.4; charset=utf-8", h.Get("Content-Type"))
		i := strings.Index(body, "# HELP "+gpuFamilies[0].name+" ")
		require.GreaterOrEqual(t, i, 0, body)
		require.Equal(t, clientGolangGPUs(t, "application_1_0001", src.ws), body[i:], "encoding %q", enc)

		p := expfmt.NewTextParser(model.LegacyValidation)
		mfs, err := p.TextToMetricFamilies(strings.NewReader(body))
		require.NoError(t, err, body)
		for _, f := range gpuFamilies {
			require.Len(t, mfs[f.name].GetMetric(), 4, f.name)
			require.Equal(t, 1, strings.Count(body, "# TYPE "+f.name+" "), f.name)
		}
		require.Contains(t, mfs, "xres_workers_running")
		hosts := map[string]bool{}
		uuids := map[string]bool{}
		for _, s := range mfs["xres_worker_gpu_power_watts"].GetMetric() {
			for _, l := range s.GetLabel() {
				switch l.GetName() {
				case "host":
					hosts[l.GetValue()] = true
				case "UUID":
					uuids[l.GetValue()] = true
				}
			}
		}
		require.Equal(t, map[string]bool{"node\\1\n\"evil\"": true, "bad\uFFFDutf8": true, "ok": true}, hosts)
		require.Equal(t, map[string]bool{"GPU-\"q\"\\b\nn": true, "GPU-b": true, "} 1\n# TYPE x gauge": true, "GPU-c": true}, uuids)
	}
}

// promtool (Prometheus's own lint and parser) passes the exposition with
// hostile label values. CI installs promtool (.ci/run) and sets
// XRES_REQUIRE_PROMTOOL, so there it must be found.
func TestPromtoolChecksScrape(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("XRES_REQUIRE_PROMTOOL") != "" {
			t.Fatalf("no promtool on PATH (XRES_REQUIRE_PROMTOOL is set; Debian: apt-get install -y prometheus): %v", err)
		}
		t.Skip("no promtool on PATH (Debian: apt-get install -y prometheus)")
	}
	body, _ := scrape(t, New("application_1_0001", hostileSource()), "")
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = strings.NewReader(body)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "promtool check metrics: %s\n%s", out, body)
}

// A scrape's memory does not grow with the workers as client_golang's did
// (every series built before the first byte: 118 MB allocated at 10,000
// one-GPU workers): at 5,000 workers one scrape allocates a row per GPU
// and fixed buffers: under 4 MiB in all (0.9 MiB measured).
func TestScrapeMemoryBounded(t *testing.T) {
	const workers = 5000
	tracks := benchTracksN(workers)
	ws := make([]amstatus.WorkerGPUs, workers)
	for i, tr := range tracks {
		ws[i] = amstatus.WorkerGPUs{Container: "container_1765000000000_0001_01_" + strconv.Itoa(100000+i), Host: "node" + strconv.Itoa(i%500), Rank: i, GPUs: tr.GPUs}
	}
	m := New("application_1765000000000_0001", benchSource{ws: ws})
	var sink countingResponse
	m.Handler().ServeHTTP(&sink, httptest.NewRequest(http.MethodGet, Path, nil)) // warm
	runtime.GC()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	sink = countingResponse{}
	m.Handler().ServeHTTP(&sink, httptest.NewRequest(http.MethodGet, Path, nil))
	runtime.ReadMemStats(&m1)
	require.Equal(t, workers*len(gpuFamilies), sink.gpuLines, "every worker's series written")
	alloc := m1.TotalAlloc - m0.TotalAlloc
	t.Logf("one scrape at %d workers: %.1f MiB of text, %.2f MiB allocated", workers, float64(sink.n)/(1<<20), float64(alloc)/(1<<20))
	require.Less(t, alloc, uint64(4<<20), "bytes one scrape allocated")
}

// countingResponse counts a response's bytes and per-GPU series lines as
// a socket would take them, keeping none.
type countingResponse struct {
	header   http.Header
	n        int
	gpuLines int
	pos      int  // how much of gpuPrefix the current line matched
	off      bool // the current line does not start with gpuPrefix
}

const gpuPrefix = "xres_worker_gpu_"

func (r *countingResponse) Header() http.Header {
	if r.header == nil {
		r.header = http.Header{}
	}
	return r.header
}
func (r *countingResponse) WriteHeader(int) {}
func (r *countingResponse) Write(p []byte) (int, error) {
	r.n += len(p)
	for _, c := range p {
		switch {
		case c == '\n':
			r.pos, r.off = 0, false
		case r.off || r.pos == len(gpuPrefix):
		case c == gpuPrefix[r.pos]:
			if r.pos++; r.pos == len(gpuPrefix) {
				r.gpuLines++
			}
		default:
			r.off = true
		}
	}
	return len(p), nil
}
