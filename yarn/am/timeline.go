package am

import (
	"math"
	"slices"
	"time"

	"github.com/xres/xres/resources/contract"
	"github.com/xres/xres/yarn/amstatus"
)

// The marks of a worker's timeline, in the order a start passes them: the
// first four as the AM saw them, the last three as the worker's launcher
// reported them (on its host's clock).
const (
	markAsked         = iota // the heartbeat that carried the ask this container answers
	markAllocated            // the heartbeat that brought the container
	markStartSent            // StartContainers called
	markStartAnswered        // the NodeManager accepted it
	markLauncher             // the container-launcher started
	markReserved             // its devices were reserved (its report)
	markCommand              // the worker command started
	nMarks
)

// timeline is a worker's marks (zero: not known) and how many heartbeats
// after the one that carried its ask brought the container (0: that
// heartbeat's own answer).
type timeline struct {
	at       [nMarks]time.Time
	askBeats int
}

// askMark is one container asked for and not granted yet: when the
// heartbeat that asked it was sent, and its number.
type askMark struct {
	at   time.Time
	beat int
}

// askedLocked keeps g's outstanding asks at count after a heartbeat
// (number beat, sent at sent) delivered that count: new ones are marked
// with it, the newest dropped when the count fell.
func (g *group) askedLocked(count, beat int, sent time.Time) {
	for len(g.asks) < count {
		g.asks = append(g.asks, askMark{at: sent, beat: beat})
		if g.firstAsk.IsZero() {
			g.firstAsk = sent
		}
	}
	if len(g.asks) > count {
		g.asks = g.asks[:max(count, 0)]
	}
}

// grantedLocked marks w's ask and allocation: the oldest outstanding ask
// of its group is the one it answers.
func (a *AM) grantedLocked(w *worker) {
	g := w.g
	w.tl.at[markAllocated] = w.started
	if len(g.asks) > 0 {
		m := g.asks[0]
		g.asks[0] = askMark{}
		g.asks = g.asks[1:]
		w.tl.at[markAsked] = m.at
		w.tl.askBeats = a.beats - m.beat
	}
}

// reportedLocked takes the marks of a launcher's report.
func (w *worker) reportedLocked(r contract.DeviceReport) {
	for _, m := range [...]struct {
		i int
		t time.Time
	}{{markLauncher, r.LauncherStarted}, {markReserved, r.Reserved}, {markCommand, r.CommandStarted}} {
		if !m.t.IsZero() {
			w.tl.at[m.i] = m.t
		}
	}
}

// firstAskLocked is when the application's first ask was sent (by this AM
// attempt); zero before it.
func (a *AM) firstAskLocked() time.Time {
	var first time.Time
	for _, g := range a.groups {
		if t := g.firstAsk; !t.IsZero() && (first.IsZero() || t.Before(first)) {
			first = t
		}
	}
	return first
}

func (t *timeline) status() *amstatus.Timeline {
	if t.at[markAllocated].IsZero() {
		return nil // adopted from an earlier attempt: nothing seen
	}
	return &amstatus.Timeline{Asked: t.at[markAsked], AskHeartbeats: t.askBeats, Allocated: t.at[markAllocated],
		StartSent: t.at[markStartSent], StartAnswered: t.at[markStartAnswered],
		LauncherStarted: t.at[markLauncher], DevicesReserved: t.at[markReserved], CommandStarted: t.at[markCommand]}
}

// phaseSteps are the phases Status lists: each from one mark to another.
var phaseSteps = []struct {
	name     string
	from, to int
}{
	{amstatus.PhaseScheduling, markAsked, markAllocated},
	{amstatus.PhaseStartQueue, markAllocated, markStartSent},
	{amstatus.PhaseStartCall, markStartSent, markStartAnswered},
	{amstatus.PhaseLocalization, markStartAnswered, markLauncher},
	{amstatus.PhaseReservation, markLauncher, markReserved},
	{amstatus.PhaseRendezvous, markReserved, markCommand},
	{amstatus.PhaseStart, markAllocated, markStartAnswered},
	{amstatus.PhaseAll, markAsked, markCommand},
}

// phaseSamplesLocked collects the workers' durations (ms) per phase step,
// and their ask heartbeats last: O(workers), no allocation per worker.
func (a *AM) phaseSamplesLocked() [][]float64 {
	out := make([][]float64, len(phaseSteps)+1)
	a.workers.each(func(w *worker) bool {
		t := &w.tl
		for k, st := range phaseSteps {
			if from, to := t.at[st.from], t.at[st.to]; !from.IsZero() && !to.IsZero() {
				out[k] = append(out[k], float64(to.Sub(from).Microseconds())/1000)
			}
		}
		if !t.at[markAsked].IsZero() {
			out[len(phaseSteps)] = append(out[len(phaseSteps)], float64(t.askBeats))
		}
		return true
	})
	return out
}

// Phases turns phaseSamples into the distribution per phase (nearest-rank
// percentiles), leaving out phases no worker has passed.
func Phases(samples [][]float64) []amstatus.Phase {
	var out []amstatus.Phase
	for k, v := range samples {
		if len(v) == 0 {
			continue
		}
		slices.Sort(v)
		p := amstatus.Phase{Unit: "ms", Count: len(v), P50: rank(v, 0.5), P90: rank(v, 0.9), Max: v[len(v)-1]}
		if k < len(phaseSteps) {
			p.Name = phaseSteps[k].name
		} else {
			p.Name, p.Unit = amstatus.AskHeartbeatsPhase, "heartbeats"
		}
		out = append(out, p)
	}
	return out
}

// rank is the nearest-rank p-quantile of sorted v.
func rank(v []float64, p float64) float64 {
	return v[max(int(math.Ceil(p*float64(len(v))))-1, 0)]
}
