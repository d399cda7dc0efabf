package ammetrics

import (
	"bufio"
	"cmp"
	"compress/gzip"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/prometheus/common/expfmt"

	"github.com/xres/xres/yarn/amstatus"
)

// Why the per-GPU series are written here and not by client_golang: its
// Gather builds every series as a dto.MetricFamily before the first byte
// is written, which at 10,000 one-GPU workers (70,000 series of 7 labels)
// took the AM's resident set 135-160 MiB up for each scrape
// (docs/metrics.md, "What it costs"). The registry keeps the AM-level
// families (a few dozen series); the GPU series are read from the AM under
// its lock as one small row per GPU (label strings shared, not copied) and
// written family by family, in the text exposition format, straight to the
// response through a 32 KiB buffer.

// contentType is the text exposition format, version 0.0.4: the only
// format served (Prometheus accepts it whatever it asks for first).
var contentType = string(expfmt.NewFormat(expfmt.TypeTextPlain))

// gpuLabels are the per-GPU series' label names, sorted as client_golang
// writes them; rank, last, is written apart (a number or "").
var gpuLabels = [...]string{"UUID", "application_id", "container_id", "gpu", "group", "host", "rank"}

// gpuFamily is one per-GPU metric family.
type gpuFamily struct{ name, help, typ string }

// gpuFamilies are the per-GPU families, in gpuRow.v's order.
var gpuFamilies = [...]gpuFamily{
	{"xres_worker_gpu_utilization_ratio", "A running worker's GPU utilisation (0-1), its launcher's latest sample (DCGM_FI_DEV_GPU_UTIL / 100).", "gauge"},
	{"xres_worker_gpu_memory_used_bytes", "A running worker's GPU frame buffer in use (DCGM_FI_DEV_FB_USED in bytes).", "gauge"},
	{"xres_worker_gpu_power_watts", "A running worker's GPU power draw (DCGM_FI_DEV_POWER_USAGE).", "gauge"},
	{"xres_worker_gpu_temperature_celsius", "A running worker's GPU temperature (DCGM_FI_DEV_GPU_TEMP).", "gauge"},
	{"xres_worker_gpu_xid_errors_total", "XID errors NVML reported for a running worker's GPU since its launcher started sampling.", "counter"},
	{"xres_worker_gpu_idle_seconds", "How long a running worker's GPU has been under the idle threshold (0: over it), by its samples.", "gauge"},
	{"xres_worker_gpu_sample_timestamp_seconds", "When the latest sample was read, Unix seconds on the worker's host.", "gauge"},
}

// gpuRow is one running worker's GPU at scrape time: its labels (the AM's
// strings, shared) and the values of gpuFamilies.
type gpuRow struct {
	container, group, host, gpu, uuid string
	rank                              int // -1: none
	v                                 [len(gpuFamilies)]float64
}

// gpuRows reads every running worker's GPUs from the source.
func (m *Metrics) gpuRows() []gpuRow {
	if m.src == nil {
		return nil
	}
	n := 0 // counted first: a growing slice would allocate it some 5 times over
	m.src.EachWorkerGPUs(func(w amstatus.WorkerGPUs) { n += len(w.GPUs) })
	rows := make([]gpuRow, 0, n)
	m.src.EachWorkerGPUs(func(w amstatus.WorkerGPUs) {
		for i := range w.GPUs {
			g := &w.GPUs[i]
			rows = append(rows, gpuRow{container: w.Container, group: w.Group, host: w.Host, gpu: g.Last.Index, uuid: g.Last.UUID, rank: w.Rank,
				v: [...]float64{g.Last.Util / 100, g.Last.MemMiB * (1 << 20), g.Last.PowerW, g.Last.TempC, float64(g.Last.XIDs), g.IdleFor().Seconds(), float64(g.Last.At)}})
		}
	})
	// In client_golang's order (by label values, the labels sorted by
	// name): a scrape reads the same whatever order the AM holds workers in.
	slices.SortFunc(rows, func(a, b gpuRow) int {
		return cmp.Or(cmp.Compare(a.uuid, b.uuid), cmp.Compare(a.container, b.container), cmp.Compare(a.gpu, b.gpu),
			cmp.Compare(a.group, b.group), cmp.Compare(a.host, b.host), cmp.Compare(rankLabel(a.rank), rankLabel(b.rank)))
	})
	return rows
}

// rankLabel is rank as the rank label's value: "" for none.
func rankLabel(rank int) string {
	if rank < 0 {
		return ""
	}
	return strconv.Itoa(rank)
}

// serve writes the registry's families, then the per-GPU ones.
func (m *Metrics) serve(w http.ResponseWriter, r *http.Request) {
	mfs, err := m.reg.Gather()
	if err != nil {
		http.Error(w, "gathering the AM's metrics: "+err.Error(), http.StatusInternalServerError)
		return
	}
	rows := m.gpuRows()
	w.Header().Set("Content-Type", contentType)
	var out io.Writer = w
	if acceptsGzip(r) {
		w.Header().Set("Content-Encoding", "gzip")
		gz := gzip.NewWriter(w)
		defer gz.Close()
		out = gz
	}
	bw := bufio.NewWriterSize(out, 32<<10)
	for _, mf := range mfs {
		if _, err := expfmt.MetricFamilyToText(bw, mf); err != nil {
			return // the client went away
		}
	}
	writeGPUFamilies(bw, m.app, rows)
	_ = bw.Flush()
}

// acceptsGzip is whether r's Accept-Encoding names gzip.
func acceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		enc, q, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.TrimSpace(enc) == "gzip" && strings.ReplaceAll(q, " ", "") != "q=0" {
			return true
		}
	}
	return false
}

// writeGPUFamilies writes each per-GPU family whole (HELP, TYPE, then a
// series per row) to w; nothing for no rows, as client_golang writes no
// family without series.
func writeGPUFamilies(w *bufio.Writer, app string, rows []gpuRow) {
	if len(rows) == 0 {
		return
	}
	var buf []byte
	for k, f := range gpuFamilies {
		buf = append(buf[:0], "# HELP "...)
		buf = append(buf, f.name...)
		buf = append(buf, ' ')
		buf = appendEscaped(buf, f.help, false)
		buf = append(buf, "\n# TYPE "...)
		buf = append(buf, f.name...)
		buf = append(buf, ' ')
		buf = append(buf, f.typ...)
		buf = append(buf, '\n')
		for i := range rows {
			row := &rows[i]
			buf = append(buf, f.name...)
			for j, v := range [...]string{row.uuid, app, row.container, row.gpu, row.group, row.host} {
				if j == 0 {
					buf = append(buf, '{')
				} else {
					buf = append(buf, ',')
				}
				buf = append(buf, gpuLabels[j]...)
				buf = append(buf, '=', '"')
				buf = appendEscaped(buf, v, true)
				buf = append(buf, '"')
			}
			buf = append(buf, `,rank="`...)
			if row.rank >= 0 {
				buf = strconv.AppendInt(buf, int64(row.rank), 10)
			}
			buf = append(buf, '"')
			buf = append(buf, "} "...)
			buf = appendFloat(buf, row.v[k])
			buf = append(buf, '\n')
			if len(buf) >= 16<<10 {
				if _, err := w.Write(buf); err != nil {
					return
				}
				buf = buf[:0]
			}
		}
		if _, err := w.Write(buf); err != nil {
			return
		}
	}
}

// appendEscaped appends s as the text format writes a label value (quote
// true: backslash, double quote and line feed escaped) or HELP text
// (backslash and line feed); invalid UTF-8 becomes U+FFFD.
func appendEscaped(buf []byte, s string, quote bool) []byte {
	s = strings.ToValidUTF8(s, "\uFFFD")
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			buf = append(buf, '\\', '\\')
		case c == '\n':
			buf = append(buf, '\\', 'n')
		case c == '"' && quote:
			buf = append(buf, '\\', '"')
		default:
			buf = append(buf, c)
		}
	}
	return buf
}

// appendFloat appends f as the text format writes a sample value.
func appendFloat(buf []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		return append(buf, "NaN"...)
	case math.IsInf(f, 1):
		return append(buf, "+Inf"...)
	case math.IsInf(f, -1):
		return append(buf, "-Inf"...)
	}
	return strconv.AppendFloat(buf, f, 'g', -1, 64)
}
