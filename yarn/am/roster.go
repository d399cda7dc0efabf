package am

import (
	"sort"

	"github.com/xres/xres/yarn/amstatus"
)

// identity is what a container the RM hands the AM is. classifyLocked is
// the one place that decides it.
type identity int

const (
	// idNew answers the worker ask: it becomes a worker and is started.
	idNew identity = iota
	// idKnown is already a worker of this AM (re-delivered, e.g. on a
	// resync after an RM restart), or a container it already gave back:
	// nothing is done, it is neither started nor released again.
	idKnown
	// idPrevious ran a worker for an earlier attempt of the application
	// (containers_from_previous_attempts): it is adopted as running,
	// never started again.
	idPrevious
	// idSurplus is not wanted: it is released.
	idSurplus
)

// roster holds the workers: by container id, in allocation order, and a
// count per state kept as states change, so that every container event
// (allocated, started, completed, reported) costs O(1) and only Status
// and the final stop walk the whole list.
//
// It is bounded for applications that run for ever: the workers still
// starting or running are all kept, the finished ones only the newest
// keep of them (the counts stay those of every worker), and the ids of
// released containers until the RM reports them completed, at most
// maxReleased.
type roster struct {
	byID  map[string]*worker
	order []*worker // allocation order; nil where a finished worker was forgotten
	holes int       // nil entries in order
	// count is every worker's, per state; listed those still kept.
	count  map[string]int
	listed map[string]int
	// running are the workers in StateRunning or StateStandby (the state
	// saved for a next attempt).
	running map[string]*worker
	// finished are the finished workers kept, oldest first from finHead.
	finished  []*worker
	finHead   int
	keep      int
	forgotten int // finished workers no longer kept
	released  map[string]struct{}
	relOrder  []string // released ids, oldest first from relHead (some already confirmed)
	relHead   int
	hosts     []string // hosts of the workers, in first-allocation order
	hostSeen  map[string]struct{}
	// version counts the changes of state (what a saved state is of).
	version int
	// scans counts walks over every worker (each); the unit tests check
	// that no per-container event walks the list.
	scans int
}

// DefaultFinishedHistory is how many finished workers the AM lists (the
// newest); older ones are counted only.
const DefaultFinishedHistory = 1000

// maxReleased bounds the released container ids the AM remembers while
// the RM has not reported them completed.
const maxReleased = 10000

func newRoster(keep int) roster {
	if keep <= 0 {
		keep = DefaultFinishedHistory
	}
	return roster{byID: map[string]*worker{}, count: map[string]int{}, listed: map[string]int{}, running: map[string]*worker{},
		released: map[string]struct{}{}, hostSeen: map[string]struct{}{}, keep: keep}
}

func (r *roster) get(id string) *worker { return r.byID[id] }

// add records a new worker in its current state.
func (r *roster) add(w *worker) {
	r.byID[w.c.ID] = w
	w.pos = len(r.order)
	r.order = append(r.order, w)
	r.count[w.state]++
	r.listed[w.state]++
	w.g.count[w.state]++
	r.version++
	if h := w.c.Host(); !has(r.hostSeen, h) {
		r.hostSeen[h] = struct{}{}
		r.hosts = append(r.hosts, h)
	}
	r.track(w)
}

func has(set map[string]struct{}, k string) bool {
	_, ok := set[k]
	return ok
}

// set moves w to state.
func (r *roster) set(w *worker, state string) {
	r.count[w.state]--
	r.listed[w.state]--
	w.g.count[w.state]--
	if w.state == amstatus.StateRunning || w.state == amstatus.StateStandby {
		delete(r.running, w.c.ID)
	}
	w.state = state
	if state != amstatus.StateStarting && state != amstatus.StateRunning {
		w.g.rankHint = 0 // its rank may be free now (assignRankLocked)
	}
	r.count[state]++
	r.listed[state]++
	w.g.count[state]++
	r.version++
	r.track(w)
}

// track files w by its new state: running, or finished (forgetting the
// oldest finished worker beyond keep).
func (r *roster) track(w *worker) {
	switch w.state {
	case amstatus.StateRunning, amstatus.StateStandby:
		r.running[w.c.ID] = w
	case amstatus.StateSucceeded, amstatus.StateFailed:
		r.finished = append(r.finished, w)
		if len(r.finished)-r.finHead > r.keep {
			r.forget(r.finished[r.finHead])
			r.finished[r.finHead] = nil
			r.finHead++
			if r.finHead > len(r.finished)/2 {
				r.finished = append(r.finished[:0], r.finished[r.finHead:]...)
				r.finHead = 0
			}
		}
	}
}

// forget drops a finished worker from the lists (its counts stay).
func (r *roster) forget(w *worker) {
	delete(r.byID, w.c.ID)
	r.listed[w.state]--
	r.order[w.pos] = nil
	r.holes++
	r.forgotten++
	if r.holes > len(r.order)/2 {
		kept := r.order[:0]
		for _, x := range r.order {
			if x != nil {
				x.pos = len(kept)
				kept = append(kept, x)
			}
		}
		clear(r.order[len(kept):])
		r.order, r.holes = kept, 0
	}
}

// remove drops w, which turned out to be no worker (a container an
// earlier attempt never started), from the lists and the counts.
func (r *roster) remove(w *worker) {
	r.count[w.state]--
	r.listed[w.state]--
	w.g.count[w.state]--
	delete(r.running, w.c.ID)
	delete(r.byID, w.c.ID)
	r.order[w.pos] = nil
	r.holes++
	r.version++
}

// release remembers that the container was given back; it reports false
// when it already was.
func (r *roster) release(id string) bool {
	if has(r.released, id) {
		return false
	}
	r.released[id] = struct{}{}
	r.relOrder = append(r.relOrder, id)
	if len(r.relOrder)-r.relHead > maxReleased {
		delete(r.released, r.relOrder[r.relHead])
		r.relOrder[r.relHead] = ""
		r.relHead++
	}
	if r.relHead > len(r.relOrder)/2 {
		r.relOrder = append(r.relOrder[:0], r.relOrder[r.relHead:]...)
		r.relHead = 0
	}
	return true
}

// releaseDone forgets a released container the RM reported completed: it
// is gone, no RM can hand it back.
func (r *roster) releaseDone(id string) { delete(r.released, id) }

func (r *roster) isReleased(id string) bool { return has(r.released, id) }

// each calls fn for the workers kept, in allocation order, until it
// returns false.
func (r *roster) each(fn func(*worker) bool) {
	r.scans++
	for _, w := range r.order {
		if w != nil && !fn(w) {
			return
		}
	}
}

// len is how many workers are kept (listed).
func (r *roster) len() int { return len(r.order) - r.holes }

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
