package amstatus

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/xres/xres/resources"
	"github.com/xres/xres/resources/contract"
)

// Mark is one mark of a worker's timeline (Marks), in the order a start
// passes them: the first four as the AM saw them, the last three as the
// worker's launcher reported them (on its host's clock).
type Mark int

// The marks of Marks.
const (
	MarkAsked         Mark = iota // the heartbeat that carried the ask this container answers
	MarkAllocated                 // the heartbeat that brought the container
	MarkStartSent                 // StartContainers called
	MarkStartAnswered             // the NodeManager accepted it
	markLauncher                  // the container-launcher started
	markReserved                  // its devices were reserved (its report)
	markCommand                   // the worker command started
	nMarks
)

// Marks is a worker's timeline as the AM records it: its marks (zero: not
// known) and how many heartbeats after the one that carried its ask
// brought the container (0: that heartbeat's own answer).
type Marks struct {
	at       [nMarks]time.Time
	askBeats int
	health   []contract.HealthEvent // the launcher's health reports (the first maxHealthEvents)
}

// maxHealthEvents bounds the device events kept per worker (a launcher
// that replaces its worker reports one; notify may report more).
const maxHealthEvents = 8

// Set sets mark m at t.
func (t *Marks) Set(m Mark, at time.Time) { t.at[m] = at }

// Granted marks the allocation at allocated and the ask it answers: the
// oldest of asks, taken off it; beats is the heartbeats answered so far.
func (t *Marks) Granted(allocated time.Time, asks *Asks, beats int) {
	t.at[MarkAllocated] = allocated
	if len(asks.marks) > 0 {
		m := asks.marks[0]
		asks.marks[0] = askMark{}
		asks.marks = asks.marks[1:]
		t.at[MarkAsked] = m.at
		t.askBeats = beats - m.beat
	}
}

// Reported takes the marks of a launcher's report.
func (t *Marks) Reported(r contract.DeviceReport) {
	for _, m := range [...]struct {
		i Mark
		t time.Time
	}{{markLauncher, r.LauncherStarted}, {markReserved, r.Reserved}, {markCommand, r.CommandStarted}} {
		if !m.t.IsZero() {
			t.at[m.i] = m.t
		}
	}
	for _, e := range r.Health {
		if len(t.health) < maxHealthEvents {
			t.health = append(t.health, e)
		}
	}
}

// Timeline is the marks for Status; nil for a worker adopted from an
// earlier attempt (nothing seen).
func (t *Marks) Timeline() *Timeline {
	if t.at[MarkAllocated].IsZero() {
		return nil
	}
	return &Timeline{Asked: t.at[MarkAsked], AskHeartbeats: t.askBeats, Allocated: t.at[MarkAllocated],
		StartSent: t.at[MarkStartSent], StartAnswered: t.at[MarkStartAnswered],
		LauncherStarted: t.at[markLauncher], DevicesReserved: t.at[markReserved], CommandStarted: t.at[markCommand],
		DeviceEvents: slices.Clone(t.health)}
}

// askMark is one container asked for and not granted yet: when the
// heartbeat that asked it was sent, and its number.
type askMark struct {
	at   time.Time
	beat int
}

// Asks are a group's containers asked for and not granted yet, oldest
// first, and when its first ask was sent.
type Asks struct {
	marks []askMark
	first time.Time
}

// Asked keeps the outstanding asks at count after a heartbeat (number
// beat, sent at sent) delivered that count: new ones are marked with it,
// the newest dropped when the count fell.
func (a *Asks) Asked(count, beat int, sent time.Time) {
	for len(a.marks) < count {
		a.marks = append(a.marks, askMark{at: sent, beat: beat})
		if a.first.IsZero() {
			a.first = sent
		}
	}
	if len(a.marks) > count {
		a.marks = a.marks[:max(count, 0)]
	}
}

// First is when the first ask was sent; zero before it.
func (a *Asks) First() time.Time { return a.first }

// phaseSteps are the phases Status lists: each from one mark to another.
var phaseSteps = [...]struct {
	name     string
	from, to Mark
}{
	{PhaseScheduling, MarkAsked, MarkAllocated},
	{PhaseStartQueue, MarkAllocated, MarkStartSent},
	{PhaseStartCall, MarkStartSent, MarkStartAnswered},
	{PhaseLocalization, MarkStartAnswered, markLauncher},
	{PhaseReservation, markLauncher, markReserved},
	{PhaseRendezvous, markReserved, markCommand},
	{PhaseStart, MarkAllocated, MarkStartAnswered},
	{PhaseAll, MarkAsked, markCommand},
}

// PhaseSamples are the workers' durations (ms) per phase step, and their
// ask heartbeats last, as Phases takes them.
type PhaseSamples [][]float64

// NewPhaseSamples returns empty samples.
func NewPhaseSamples() PhaseSamples { return make(PhaseSamples, len(phaseSteps)+1) }

// Add adds a worker's marks: no allocation per worker.
func (s PhaseSamples) Add(t *Marks) {
	for k, st := range phaseSteps {
		if from, to := t.at[st.from], t.at[st.to]; !from.IsZero() && !to.IsZero() {
			s[k] = append(s[k], float64(to.Sub(from).Microseconds())/1000)
		}
	}
	if !t.at[MarkAsked].IsZero() {
		s[len(phaseSteps)] = append(s[len(phaseSteps)], float64(t.askBeats))
	}
}

// Phases turns samples into the distribution per phase (nearest-rank
// percentiles), leaving out phases no worker has passed. It sorts samples.
func Phases(samples PhaseSamples) []Phase {
	var out []Phase
	for k, v := range samples {
		if len(v) == 0 {
			continue
		}
		slices.Sort(v)
		p := Phase{Unit: "ms", Count: len(v), P50: rank(v, 0.5), P90: rank(v, 0.9), Max: v[len(v)-1]}
		if k < len(phaseSteps) {
			p.Name = phaseSteps[k].name
		} else {
			p.Name, p.Unit = AskHeartbeatsPhase, "heartbeats"
		}
		out = append(out, p)
	}
	return out
}

// rank is the nearest-rank p-quantile of sorted v.
func rank(v []float64, p float64) float64 {
	return v[max(int(math.Ceil(p*float64(len(v))))-1, 0)]
}

// IsHealth reports whether r is a health report: device events and
// nothing else.
func IsHealth(r contract.DeviceReport) bool {
	return len(r.Health) > 0 && len(r.Resources) == 0 && r.Port == 0 && len(r.GPU) == 0 &&
		r.CommandStarted.IsZero() && r.Reserved.IsZero() && r.LauncherStarted.IsZero()
}

// ReportSeqs are the Seq of the newest full report (devices, port) and
// command-started report taken of one container. The two kinds are
// counted apart: a launcher sends its command-started report beside the
// report of its worker's port, and either may arrive first.
type ReportSeqs struct{ full, started, samples, health uint64 }

// Take checks r's Seq against s and records it; 0 (a kept report file of
// an older launcher) is taken while none with a Seq was. A report not
// newer than the last of its kind is refused with ErrStaleReport.
func (s *ReportSeqs) Take(r contract.DeviceReport) error {
	last := &s.full
	if len(r.Resources) == 0 && r.Port == 0 && !r.CommandStarted.IsZero() {
		last = &s.started
	}
	if IsSamples(r) {
		last = &s.samples // GPU samples are counted apart too
	}
	if IsHealth(r) {
		last = &s.health // and health reports: a port report may race one
	}
	if *last > 0 && r.Seq <= *last {
		return fmt.Errorf("report devices: %w: container %s sent seq %d, and %d was taken already", ErrStaleReport, r.Container, r.Seq, *last)
	}
	*last = r.Seq
	return nil
}

// MergeDevices returns a new map of old's resources with add's on top. A
// worker's device map is never written in place: status snapshots share it
// and are encoded outside the AM's lock.
func MergeDevices(old, add map[string][]resources.Properties) map[string][]resources.Properties {
	m := make(map[string][]resources.Properties, len(old)+len(add))
	maps.Copy(m, old)
	maps.Copy(m, add)
	return m
}
