package am

import (
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/xres/xres/resources"
	"github.com/xres/xres/resources/contract"
	"github.com/xres/xres/yarn"
)

// ErrUnknownContainer is returned by ReportDevices for a container id that
// is not one of this application's.
var ErrUnknownContainer = errors.New("unknown container")

// ErrStaleReport is returned by ReportDevices for a report whose Seq is
// not above the last one taken of its kind for the container: a replay,
// or one overtaken by a newer report.
var ErrStaleReport = errors.New("stale device report")

// reportSeqs are the Seq of the newest full report (devices, port) and
// command-started report taken of one container. The two kinds are
// counted apart: a launcher sends its command-started report beside the
// report of its worker's port, and either may arrive first.
type reportSeqs struct{ full, started uint64 }

// take checks r's Seq against s and records it; 0 (a kept report file of
// an older launcher) is taken while none with a Seq was.
func (s *reportSeqs) take(r contract.DeviceReport) error {
	last := &s.full
	if len(r.Resources) == 0 && r.Port == 0 && !r.CommandStarted.IsZero() {
		last = &s.started
	}
	if *last > 0 && r.Seq <= *last {
		return fmt.Errorf("report devices: %w: container %s sent seq %d, and %d was taken already", ErrStaleReport, r.Container, r.Seq, *last)
	}
	*last = r.Seq
	return nil
}

// WorkerStatus is one worker container in Status.
type WorkerStatus struct {
	Container   string                            `json:"container"`
	Node        string                            `json:"node"`
	NodeHTTP    string                            `json:"node-http,omitempty"`
	Host        string                            `json:"host"`
	Group       string                            `json:"group,omitempty"`
	Rank        *int                              `json:"rank,omitempty"` // in its group, while it holds one
	State       string                            `json:"state"`
	Spare       bool                              `json:"spare,omitempty"`    // a standby spare (STARTING or STANDBY)
	Promoted    *time.Time                        `json:"promoted,omitempty"` // when this spare took a lost worker's rank
	ExitStatus  *int                              `json:"exit-status,omitempty"`
	Diagnostics string                            `json:"diagnostics,omitempty"`
	Devices     map[string][]resources.Properties `json:"devices,omitempty"`
	Timeline    *Timeline                         `json:"timeline,omitempty"` // its start, step by step
}

// GroupStatus is one worker group in Status.
type GroupStatus struct {
	Name      string        `json:"name"`
	Workers   int           `json:"workers"` // wanted (the target)
	Minimum   int           `json:"minimum"` // needed running: Workers, or xres.reactive.min-workers
	Reactive  bool          `json:"reactive,omitempty"`
	Pending   int           `json:"pending"`
	Starting  int           `json:"starting"`
	Running   int           `json:"running"`
	Succeeded int           `json:"succeeded"`
	Failed    int           `json:"failed"`
	Restarts  int           `json:"restarts"`
	MaxFailed int           `json:"max-failed-containers"`
	Profile   yarn.Resource `json:"profile"`
	// Spares is how many standby spares it keeps (wanted), Standby how
	// many stand by now, Promotions how many took a lost worker's rank.
	Spares     int `json:"spares,omitempty"`
	Standby    int `json:"standby,omitempty"`
	Promotions int `json:"promotions,omitempty"`
	// Addresses, for a group with a port: each rank's host:port, in rank
	// order ("" for a rank whose worker has not reported one yet).
	Addresses []string `json:"addresses,omitempty"`
}

// Status is a snapshot of the application, served by the tracking server.
// Workers, Pending and the other counts are over every group.
type Status struct {
	App         string         `json:"app"`
	State       string         `json:"state"`
	Workers     int            `json:"workers"`
	Minimum     int            `json:"minimum"` // workers needed running (less than Workers under scheduler-mode: reactive)
	Pending     int            `json:"pending"`
	Running     int            `json:"running"`
	Starting    int            `json:"starting"`
	Standby     int            `json:"standby,omitempty"` // standby spares whose container runs
	Succeeded   int            `json:"succeeded"`
	Failed      int            `json:"failed"`
	Restarts    int            `json:"restarts"`
	MaxFailed   int            `json:"max-failed-containers"`
	Profile     yarn.Resource  `json:"profile"` // the first group's
	Groups      []GroupStatus  `json:"groups"`
	Hosts       []string       `json:"hosts"`
	Blacklist   []string       `json:"blacklist,omitempty"`
	Diagnostics string         `json:"diagnostics,omitempty"`
	Unplaceable string         `json:"unplaceable,omitempty"` // why pending workers cannot be placed (xres.placement.max-workers-per-node)
	Containers  []WorkerStatus `json:"containers"`
	// ContainersTotal is how many containers the page was taken from
	// (those in the asked state, or all); Offset is where it starts.
	ContainersTotal int `json:"containers-total"`
	Offset          int `json:"offset,omitempty"`
	// ContainersForgotten is how many finished workers are no longer
	// listed (the AM keeps the newest Config.FinishedHistory); the counts
	// above include them.
	ContainersForgotten int `json:"containers-forgotten,omitempty"`
	// SubmitTime and AllRunningTime (RFC 3339) and AllRunningAfterMS: when
	// the application was submitted, when every wanted worker was first
	// running, and the time between (when both are known). MinRunningTime
	// is when each group's minimum first ran (AllRunningTime unless under
	// scheduler-mode: reactive).
	SubmitTime        *time.Time `json:"submit-time,omitempty"`
	MinRunningTime    *time.Time `json:"min-running-time,omitempty"`
	AllRunningTime    *time.Time `json:"all-running-time,omitempty"`
	AllRunningAfterMS int64      `json:"all-running-after-ms,omitempty"`
	// FirstAsk is when this AM attempt sent its first ask for workers: 0 s
	// of the tracking page's timeline.
	FirstAsk *time.Time `json:"first-ask,omitempty"`
	// AMPeakRSSKiB is the AM process's peak resident memory.
	AMPeakRSSKiB int64 `json:"am-peak-rss-kib,omitempty"`
	// Phases is the distribution of each step of the workers' starts
	// over every listed worker (when the page asks for it: Page.Phases).
	Phases []Phase `json:"phases,omitempty"`
}

// Page selects the containers a Status lists: those in State (all when
// empty), from Offset, at most Limit of them (all when 0, none when
// negative).
type Page struct {
	Offset, Limit int
	State         string
	Phases        bool // with Status.Phases (O(workers) more work)
}

// Status returns a snapshot of the application with every container.
func (a *AM) Status() Status { return a.StatusPage(Page{}) }

// StatusPage returns a snapshot of the application with the containers p
// selects; the counts, hosts and ContainersTotal cover all. The AM's lock
// is held only to copy the page, so the tracking server stays cheap at
// thousands of workers.
func (a *AM) StatusPage(p Page) Status {
	a.mu.Lock()
	s, samples := a.statusPageLocked(p)
	a.mu.Unlock()
	if samples != nil {
		s.Phases = Phases(samples) // sorted outside the lock
	}
	return s
}

func (a *AM) statusPageLocked(p Page) (s Status, samples [][]float64) {
	t := a.totalsLocked()
	s = Status{
		App: a.cfg.AppID, State: a.state, Workers: t.workers, Pending: t.pending,
		Running: a.workers.count[StateRunning], Starting: a.workers.count[StateStarting], Standby: a.workers.count[StateStandby],
		Succeeded: t.succeeded, Failed: t.failures, Restarts: t.restarts,
		Profile:   a.groups[0].Plan.Profile,
		Blacklist: sortedKeys(a.blacklist), Hosts: append([]string{}, a.workers.hosts...), Containers: []WorkerStatus{},
		Offset: p.Offset,
	}
	for _, g := range a.groups {
		s.Minimum += g.minimum()
		s.MaxFailed += g.Plan.MaxFailedContainers
		s.Groups = append(s.Groups, GroupStatus{Name: g.Name, Workers: g.Plan.Workers, Minimum: g.minimum(), Reactive: g.Plan.Reactive,
			Pending: g.pending, Starting: g.count[StateStarting], Running: g.count[StateRunning],
			Succeeded: g.succeeded, Failed: g.failures, Restarts: g.restarts, MaxFailed: g.Plan.MaxFailedContainers, Profile: g.Plan.Profile,
			Spares: g.Plan.Spares, Standby: g.count[StateStandby], Promotions: g.promotions})
		if g.Plan.Port != 0 {
			s.Groups[len(s.Groups)-1].Addresses, _ = g.addresses()
		}
	}
	if a.result != nil {
		s.Diagnostics = a.result.Diagnostics
	}
	s.Unplaceable = a.unplaceableLocked()
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
	s.Containers = make([]WorkerStatus, 0, want)
	skip := p.Offset
	a.workers.each(func(w *worker) bool {
		if p.State != "" && w.state != p.State {
			return true
		}
		if skip > 0 {
			skip--
			return true
		}
		ws := WorkerStatus{Container: w.c.ID, Node: w.c.NodeID, NodeHTTP: w.c.NodeHTTP, Host: w.c.Host(), Group: w.g.Name,
			State: w.state, Spare: w.spare && w.live(), Diagnostics: w.diag, Devices: w.devices, Timeline: w.tl.status()}
		if t := w.promoted; !t.IsZero() {
			ws.Promoted = &t
		}
		if w.rank >= 0 && (w.state == StateStarting || w.state == StateRunning) && !w.gangStopped {
			rank := w.rank
			ws.Rank = &rank
		}
		if w.state == StateSucceeded || w.state == StateFailed {
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
		return fmt.Errorf("report devices: %w: %q", ErrUnknownContainer, r.Container)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	w := a.workers.get(id)
	if w == nil {
		_, known := a.earlySeqs[id]
		if !known && len(a.earlySeqs) >= 4*a.totalsLocked().workers+16 {
			return fmt.Errorf("report devices: %w: %s", ErrUnknownContainer, id)
		}
		seqs := a.earlySeqs[id]
		if err := seqs.take(r); err != nil {
			return err
		}
		a.earlySeqs[id] = seqs
		a.earlyDevs[id] = mergeDevices(a.earlyDevs[id], r.Resources)
		return nil
	}
	if err := w.seqs.take(r); err != nil {
		return err
	}
	w.reportedLocked(r)
	a.warmLocked(w.c.NodeID)                             // its files are localized there: the node's other starts go
	if r.Resources != nil || r.CommandStarted.IsZero() { // a command-started report says nothing of devices
		w.devices = mergeDevices(w.devices, r.Resources)
	}
	if r.Port > 0 {
		w.port = r.Port
	}
	return nil
}

// mergeDevices returns a new map of old's resources with add's on top. A
// worker's device map is never written in place: status snapshots share it
// and are encoded outside the AM's lock.
func mergeDevices(old, add map[string][]resources.Properties) map[string][]resources.Properties {
	m := make(map[string][]resources.Properties, len(old)+len(add))
	maps.Copy(m, old)
	maps.Copy(m, add)
	return m
}
