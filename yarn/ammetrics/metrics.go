// Package ammetrics is the ApplicationMaster's Prometheus metrics: the
// events the AM counts as they happen (Metrics: heartbeats, failures,
// replacements, start phases) and what its status says at scrape time
// (workers wanted, running, starting, spares; each running worker's GPU
// samples), on a registry of its own (no process or Go runtime
// collectors: the AM's memory is bounded). The tracking server serves it
// at /metrics (yarn/amweb); docs/metrics.md lists the names.
package ammetrics

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/xres/xres/yarn"
	"github.com/xres/xres/yarn/amstatus"
)

// Path is where the tracking server serves the metrics.
const Path = "/metrics"

// Exit classes of xres_workers_failed_total (yarn.ExitCause).
const (
	ClassApp     = "app"
	ClassCluster = "cluster"
	ClassNode    = "node"
)

// ClassOf is cause as xres_workers_failed_total's class label.
func ClassOf(cause yarn.ExitCause) string {
	switch cause {
	case yarn.CauseCluster:
		return ClassCluster
	case yarn.CauseNode:
		return ClassNode
	default:
		return ClassApp
	}
}

// Source is what the metrics read at scrape time: the AM.
type Source interface {
	StatusPage(p amstatus.Page) amstatus.Status
	// EachWorkerGPUs calls fn with each running worker's GPU samples, under
	// the source's lock: fn copies what it keeps and does not block.
	EachWorkerGPUs(fn func(amstatus.WorkerGPUs))
}

// Metrics counts the AM's events. A nil *Metrics counts nothing, so the
// AM calls it unconditionally.
type Metrics struct {
	reg          *prometheus.Registry
	app          string
	src          Source // nil: no status, no GPU series
	allocate     prometheus.Histogram
	allocFailed  prometheus.Counter
	reregistered prometheus.Counter
	failed       *prometheus.CounterVec
	replaced     prometheus.Counter
	phases       *prometheus.HistogramVec
	rendezvous   prometheus.Histogram
	reports      *prometheus.CounterVec
	reportBytes  prometheus.Counter
}

// phaseLabels are the label values of xres_start_phase_seconds, in the
// order of amstatus.PhaseSamples.
var phaseLabels = []string{"scheduling", "start_queue", "start_call", "localization", "reservation", "rendezvous", "start", "all"}

// New returns the metrics of application app, reading src at scrape time.
func New(app string, src Source) *Metrics {
	constLabels := prometheus.Labels{"application_id": app}
	m := &Metrics{reg: prometheus.NewRegistry(), app: app}
	m.allocate = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "xres_allocate_duration_seconds", Help: "Allocate round trips to the ResourceManager (heartbeats), answered or not.",
		ConstLabels: constLabels, Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
	})
	m.allocFailed = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "xres_allocate_failures_total", Help: "Allocate calls the ResourceManager did not answer.", ConstLabels: constLabels,
	})
	m.reregistered = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "xres_rm_reregistrations_total", Help: "Times the ResourceManager had lost this attempt (a restart or failover) and the AM registered again.", ConstLabels: constLabels,
	})
	m.failed = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "xres_workers_failed_total", Help: "Workers that ended other than successfully, by exit class: app (counts toward the failure limit), cluster (preempted, killed, node lost), node (its disks failed).", ConstLabels: constLabels,
	}, []string{"class"})
	m.replaced = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "xres_workers_replaced_total", Help: "Workers the AM asked a replacement container for.", ConstLabels: constLabels,
	})
	m.phases = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "xres_start_phase_seconds", Help: "Each step of the workers' starts (the tracking page's timeline), observed when a worker's command starts.",
		ConstLabels: constLabels, Buckets: []float64{.01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600},
	}, []string{"phase"})
	m.rendezvous = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "xres_rendezvous_wait_seconds", Help: "How long a launcher waited from reserving its devices to its worker's command starting (report and rendezvous).",
		ConstLabels: constLabels, Buckets: []float64{.01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600},
	})
	m.reports = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "xres_launcher_reports_total", Help: "Launcher reports taken, by kind (devices, started, samples).", ConstLabels: constLabels,
	}, []string{"kind"})
	m.reportBytes = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "xres_launcher_report_bytes_total", Help: "Bytes of the launcher reports taken.", ConstLabels: constLabels,
	})
	for _, c := range []string{ClassApp, ClassCluster, ClassNode} {
		m.failed.WithLabelValues(c) // every class shows, 0 until one fails
	}
	m.reg.MustRegister(m.allocate, m.allocFailed, m.reregistered, m.failed, m.replaced, m.phases, m.rendezvous, m.reports, m.reportBytes)
	if src != nil {
		m.SetSource(app, src)
	}
	return m
}

// SetSource adds the collector that reads src at scrape time (the AM,
// once built with these metrics).
func (m *Metrics) SetSource(app string, src Source) {
	if m != nil {
		m.app, m.src = app, src
		m.reg.MustRegister(&statusCollector{src: src, app: app})
	}
}

// Handler serves the metrics in Prometheus's text exposition (stream.go):
// the registry's families, then each running worker's GPU series written
// as they are read.
func (m *Metrics) Handler() http.Handler { return http.HandlerFunc(m.serve) }

// Registry is the metrics' registry (tests).
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Allocated counts an allocate round trip that took d; failed when the
// RM did not answer.
func (m *Metrics) Allocated(d time.Duration, failed bool) {
	if m == nil {
		return
	}
	m.allocate.Observe(d.Seconds())
	if failed {
		m.allocFailed.Inc()
	}
}

// Reregistered counts a registration again after the RM lost the attempt.
func (m *Metrics) Reregistered() {
	if m != nil {
		m.reregistered.Inc()
	}
}

// Failed counts a worker that ended in class (ClassApp, ClassCluster,
// ClassNode).
func (m *Metrics) Failed(class string) {
	if m != nil {
		m.failed.WithLabelValues(class).Inc()
	}
}

// Replaced counts a replacement asked for.
func (m *Metrics) Replaced() {
	if m != nil {
		m.replaced.Inc()
	}
}

// Report counts a launcher report of kind and its size.
func (m *Metrics) Report(kind string, bytes int) {
	if m != nil {
		m.reports.WithLabelValues(kind).Inc()
		m.reportBytes.Add(float64(bytes))
	}
}

// Started observes a worker's start phases when its command started:
// marks' durations in amstatus.PhaseSamples's order.
func (m *Metrics) Started(marks *amstatus.Marks) {
	if m == nil {
		return
	}
	s := amstatus.NewPhaseSamples()
	s.Add(marks)
	for k, v := range s {
		if k >= len(phaseLabels) || len(v) == 0 {
			continue // the ask's heartbeats are no duration
		}
		m.phases.WithLabelValues(phaseLabels[k]).Observe(v[0] / 1000)
		if phaseLabels[k] == "rendezvous" {
			m.rendezvous.Observe(v[0] / 1000)
		}
	}
}

// statusCollector reads the AM's status at scrape time.
type statusCollector struct {
	src Source
	app string
}

var (
	descWanted   = prometheus.NewDesc("xres_workers_wanted", "Workers wanted (the target), by group.", []string{"application_id", "group"}, nil)
	descMinimum  = prometheus.NewDesc("xres_workers_minimum", "Workers needed running (less than wanted under scheduler-mode: reactive), by group.", []string{"application_id", "group"}, nil)
	descRunning  = prometheus.NewDesc("xres_workers_running", "Workers running, by group.", []string{"application_id", "group"}, nil)
	descStarting = prometheus.NewDesc("xres_workers_starting", "Workers starting (container granted, command not yet running), by group.", []string{"application_id", "group"}, nil)
	descPending  = prometheus.NewDesc("xres_workers_pending", "Workers asked for and not yet granted, by group.", []string{"application_id", "group"}, nil)
	descSpares   = prometheus.NewDesc("xres_spares_standby", "Standby spares whose container runs, by group.", []string{"application_id", "group"}, nil)
	descSparesW  = prometheus.NewDesc("xres_spares_wanted", "Standby spares the group keeps.", []string{"application_id", "group"}, nil)
	descSucc     = prometheus.NewDesc("xres_workers_succeeded_total", "Workers that ended successfully, by group.", []string{"application_id", "group"}, nil)
	descRestarts = prometheus.NewDesc("xres_workers_restarts_total", "Workers restarted (replaced after a failure or a lost node), by group.", []string{"application_id", "group"}, nil)
	descIdle     = prometheus.NewDesc("xres_gpus_idle", "Granted GPUs under the idle threshold for longer than the idle window.", []string{"application_id"}, nil)
)

// Describe implements prometheus.Collector.
func (c *statusCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descWanted, descMinimum, descRunning, descStarting, descPending, descSpares, descSparesW, descSucc, descRestarts, descIdle} {
		ch <- d
	}
}

// Collect implements prometheus.Collector: the counts (no container is
// copied); the GPU series are streamed (stream.go).
func (c *statusCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.src.StatusPage(amstatus.Page{Limit: -1, Idle: true})
	for _, g := range st.Groups {
		gauge := func(d *prometheus.Desc, v int, t prometheus.ValueType) {
			ch <- prometheus.MustNewConstMetric(d, t, float64(v), c.app, g.Name)
		}
		gauge(descWanted, g.Workers, prometheus.GaugeValue)
		gauge(descMinimum, g.Minimum, prometheus.GaugeValue)
		gauge(descRunning, g.Running, prometheus.GaugeValue)
		gauge(descStarting, g.Starting, prometheus.GaugeValue)
		gauge(descPending, g.Pending, prometheus.GaugeValue)
		gauge(descSpares, g.Standby, prometheus.GaugeValue)
		gauge(descSparesW, g.Spares, prometheus.GaugeValue)
		gauge(descSucc, g.Succeeded, prometheus.CounterValue)
		gauge(descRestarts, g.Restarts, prometheus.CounterValue)
	}
	ch <- prometheus.MustNewConstMetric(descIdle, prometheus.GaugeValue, float64(len(st.IdleGPUs)), c.app)
}
