package am

import (
	"sort"

	"github.com/xres/xres/resources/contract"
	"github.com/xres/xres/yarn/ammetrics"
	"github.com/xres/xres/yarn/amstatus"
)

// samplesLocked takes a launcher's GPU samples for w: its GPUs' latest
// figures, history and idle time; w is filed among the workers with an
// idle GPU while one is.
func (a *AM) samplesLocked(w *worker, samples []contract.GPUSample) {
	if w.gpu == nil {
		w.gpu = &amstatus.GPUTrack{}
	}
	rule := a.cfg.Idle.OrDefault()
	w.gpu.Add(samples, rule)
	idle := len(w.gpu.Idle(rule, "", "", "")) > 0
	switch {
	case idle && a.idleGPUs == nil:
		a.idleGPUs = map[string]*worker{w.c.ID: w}
	case idle:
		a.idleGPUs[w.c.ID] = w
	default:
		delete(a.idleGPUs, w.c.ID)
	}
}

// idleGPUsLocked lists the idle GPUs of the running workers (those that
// ended are dropped from the list), longest idle first.
func (a *AM) idleGPUsLocked() []amstatus.IdleGPU {
	rule := a.cfg.Idle.OrDefault()
	var out []amstatus.IdleGPU
	for id, w := range a.idleGPUs {
		if w.state != amstatus.StateRunning || a.workers.get(id) != w {
			delete(a.idleGPUs, id)
			continue
		}
		out = append(out, w.gpu.Idle(rule, w.c.ID, w.g.Name, w.c.Host())...)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].IdleFor != out[j].IdleFor {
			return out[i].IdleFor > out[j].IdleFor
		}
		return out[i].Container+"/"+out[i].GPU < out[j].Container+"/"+out[j].GPU
	})
	return out
}

// WorkerGPUs returns every running worker's GPU samples, copied (the page).
func (a *AM) WorkerGPUs() []amstatus.WorkerGPUs {
	var out []amstatus.WorkerGPUs
	a.EachWorkerGPUs(func(w amstatus.WorkerGPUs) {
		w.GPUs = append([]amstatus.GPUState(nil), w.GPUs...)
		out = append(out, w)
	})
	return out
}

// EachWorkerGPUs calls fn with each running worker's GPU samples under the
// AM's lock, nothing copied: fn copies what it keeps and does not block
// (ammetrics.Source: a scrape's memory does not grow with the workers').
func (a *AM) EachWorkerGPUs(fn func(amstatus.WorkerGPUs)) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.workers.each(func(w *worker) bool {
		if w.gpu == nil || w.state != amstatus.StateRunning {
			return true
		}
		rank := -1
		if w.rank >= 0 && !w.gangStopped {
			rank = w.rank
		}
		fn(amstatus.WorkerGPUs{Container: w.c.ID, Group: w.g.Name, Host: w.c.Host(), Rank: rank, GPUs: w.gpu.GPUs})
		return true
	})
}

// Metrics is the AM's Prometheus metrics (Config.Metrics); nil: none.
func (a *AM) Metrics() *ammetrics.Metrics { return a.cfg.Metrics }

// CountReport counts a launcher report taken, of bytes (amweb's
// ReportCounter).
func (a *AM) CountReport(r contract.DeviceReport, bytes int) {
	kind := "devices"
	switch {
	case amstatus.IsSamples(r):
		kind = "samples"
	case len(r.Resources) == 0 && r.Port == 0 && !r.CommandStarted.IsZero():
		kind = "started"
	}
	a.cfg.Metrics.Report(kind, bytes)
}
