package am

import (
	"fmt"
	"strings"
	"time"

	"github.com/xres/xres/resources/contract"
	"github.com/xres/xres/yarn/amstatus"
)

// Status returns a snapshot of the application with every container.
func (a *AM) Status() amstatus.Status { return a.StatusPage(amstatus.Page{Idle: true}) }

// StatusPage returns a snapshot of the application with the containers p
// selects; the counts, hosts and ContainersTotal cover all. The AM's lock
// is held only to copy the page, so the tracking server stays cheap at
// thousands of workers.
func (a *AM) StatusPage(p amstatus.Page) amstatus.Status {
	a.mu.Lock()
	s, samples := a.statusPageLocked(p)
	a.mu.Unlock()
	if samples != nil {
		s.Phases = amstatus.Phases(samples) // sorted outside the lock
	}
	return s
}

func (a *AM) statusPageLocked(p amstatus.Page) (s amstatus.Status, samples amstatus.PhaseSamples) {
	t := a.totalsLocked()
	s = amstatus.Status{
		App: a.cfg.AppID, State: a.state, Workers: t.workers, Pending: t.pending,
		Running: a.workers.count[amstatus.StateRunning], Starting: a.workers.count[amstatus.StateStarting], Standby: a.workers.count[amstatus.StateStandby],
		Succeeded: t.succeeded, Failed: t.failures, Restarts: t.restarts,
		Profile:   a.groups[0].Plan.Profile,
		Blacklist: a.nodes.Hosts(), Hosts: append([]string{}, a.workers.hosts...), Containers: []amstatus.WorkerStatus{},
		Offset: p.Offset,
	}
	for _, g := range a.groups {
		s.Minimum += g.minimum()
		s.MaxFailed += g.Plan.MaxFailedContainers
		s.Groups = append(s.Groups, amstatus.GroupStatus{Name: g.Name, Workers: g.Plan.Workers, Minimum: g.minimum(), Reactive: g.Plan.Reactive,
			Pending: g.pending, Starting: g.count[amstatus.StateStarting], Running: g.count[amstatus.StateRunning],
			Succeeded: g.succeeded, Failed: g.failures, Restarts: g.restarts, MaxFailed: g.Plan.MaxFailedContainers, Profile: g.Plan.Profile,
			Spares: g.Plan.Spares, Standby: g.count[amstatus.StateStandby], Promotions: g.promotions})
		if g.Plan.Port != 0 {
			s.Groups[len(s.Groups)-1].Addresses, _ = g.addresses()
		}
	}
	if a.result != nil {
		s.Diagnostics = a.result.Diagnostics
	}
	s.Unplaceable = a.unplaceableLocked()
	if p.Idle {
		s.IdleGPUs = a.idleGPUsLocked()
	}
	if t := a.cfg.SubmitTime; !t.IsZero() {
		s.SubmitTime = &t
	}
	if t := a.firstAskLocked(); !t.IsZero() {
		s.FirstAsk = &t
	}
	if t := a.minRunning; !t.IsZero() {
		s.MinRunningTime = &t
	}
	if t := a.allRunning; !t.IsZero() {
		s.AllRunningTime = &t
		if s.SubmitTime != nil {
			s.AllRunningAfterMS = t.Sub(*s.SubmitTime).Milliseconds()
		}
	}
	if a.cfg.PeakRSS != nil {
		s.AMPeakRSSKiB = a.cfg.PeakRSS()
	}
	if p.Phases {
		samples = a.phaseSamplesLocked()
	}
	s.ContainersForgotten = a.workers.forgotten
	s.ContainersTotal = a.workers.len()
	if p.State != "" {
		s.ContainersTotal = a.workers.listed[p.State]
	}
	want := s.ContainersTotal - p.Offset
	if p.Limit < 0 {
		return s, samples // the counts only
	}
	if p.Limit > 0 {
		want = min(want, p.Limit)
	}
	if want <= 0 {
		return s, samples
	}
	s.Containers = make([]amstatus.WorkerStatus, 0, want)
	skip := p.Offset
	a.workers.each(func(w *worker) bool {
		if p.State != "" && w.state != p.State {
			return true
		}
		if skip > 0 {
			skip--
			return true
		}
		ws := amstatus.WorkerStatus{Container: w.c.ID, Node: w.c.NodeID, NodeHTTP: w.c.NodeHTTP, Host: w.c.Host(), Group: w.g.Name,
			State: w.state, Spare: w.spare && w.live(), Diagnostics: w.diag, Devices: w.devices, Timeline: w.tl.Timeline()}
		if t := w.promoted; !t.IsZero() {
			ws.Promoted = &t
		}
		if w.rank >= 0 && (w.state == amstatus.StateStarting || w.state == amstatus.StateRunning) && !w.gangStopped {
			rank := w.rank
			ws.Rank = &rank
		}
		if w.state == amstatus.StateSucceeded || w.state == amstatus.StateFailed {
			exit := w.exit
			ws.ExitStatus = &exit
		}
		s.Containers = append(s.Containers, ws)
		return len(s.Containers) < want
	})
	return s, samples
}

// ReportDevices records what a launcher discovered. A report may arrive
// before the AM has marked the container started; it is kept for it. A
// report not newer than the last taken of its kind (DeviceReport.Seq) is
// refused with ErrStaleReport.
func (a *AM) ReportDevices(r contract.DeviceReport) error {
	id := strings.TrimSpace(r.Container)
	if !strings.HasPrefix(id, "container_") {
		return fmt.Errorf("report devices: %w: %q", amstatus.ErrUnknownContainer, r.Container)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	w := a.workers.get(id)
	if w == nil {
		_, known := a.earlySeqs[id]
		if !known && len(a.earlySeqs) >= 4*a.totalsLocked().workers+16 {
			return fmt.Errorf("report devices: %w: %s", amstatus.ErrUnknownContainer, id)
		}
		seqs := a.earlySeqs[id]
		if err := seqs.Take(r); err != nil {
			return err
		}
		a.earlySeqs[id] = seqs
		a.earlyDevs[id] = amstatus.MergeDevices(a.earlyDevs[id], r.Resources)
		return nil
	}
	if err := w.seqs.Take(r); err != nil {
		return err
	}
	if amstatus.IsSamples(r) {
		a.samplesLocked(w, r.GPU)
		return nil
	}
	w.tl.Reported(r)
	if !r.CommandStarted.IsZero() {
		a.cfg.Metrics.Started(&w.tl)
	}
	a.warmLocked(w.c.NodeID)                             // its files are localized there: the node's other starts go
	if r.Resources != nil || r.CommandStarted.IsZero() { // a command-started report says nothing of devices
		w.devices = amstatus.MergeDevices(w.devices, r.Resources)
	}
	if r.Port > 0 {
		w.port = r.Port
	}
	return nil
}

// firstAskLocked is when the application's first ask was sent (by this AM
// attempt); zero before it.
func (a *AM) firstAskLocked() time.Time {
	var first time.Time
	for _, g := range a.groups {
		if t := g.asks.First(); !t.IsZero() && (first.IsZero() || t.Before(first)) {
			first = t
		}
	}
	return first
}

// phaseSamplesLocked collects the workers' phase durations: O(workers).
func (a *AM) phaseSamplesLocked() amstatus.PhaseSamples {
	out := amstatus.NewPhaseSamples()
	a.workers.each(func(w *worker) bool {
		out.Add(&w.tl)
		return true
	})
	return out
}
