package am

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
type roster struct {
	byID     map[string]*worker
	order    []*worker
	count    map[string]int
	released map[string]struct{}
	hosts    []string // hosts of the workers, in first-allocation order
	hostSeen map[string]struct{}
	// scans counts walks over every worker (each); the unit tests check
	// that no per-container event walks the list.
	scans int
}

func newRoster() roster {
	return roster{byID: map[string]*worker{}, count: map[string]int{}, released: map[string]struct{}{},
		hostSeen: map[string]struct{}{}}
}

func (r *roster) get(id string) *worker { return r.byID[id] }

// add records a new worker in its current state.
func (r *roster) add(w *worker) {
	r.byID[w.c.ID] = w
	r.order = append(r.order, w)
	r.count[w.state]++
	w.g.count[w.state]++
	if h := w.c.Host(); !has(r.hostSeen, h) {
		r.hostSeen[h] = struct{}{}
		r.hosts = append(r.hosts, h)
	}
}

func has(set map[string]struct{}, k string) bool {
	_, ok := set[k]
	return ok
}

// set moves w to state.
func (r *roster) set(w *worker, state string) {
	r.count[w.state]--
	w.g.count[w.state]--
	w.state = state
	r.count[state]++
	w.g.count[state]++
}

// release remembers that the container was given back; it reports false
// when it already was.
func (r *roster) release(id string) bool {
	if has(r.released, id) {
		return false
	}
	r.released[id] = struct{}{}
	return true
}

func (r *roster) isReleased(id string) bool { return has(r.released, id) }

// each calls fn for the workers in allocation order until it returns
// false.
func (r *roster) each(fn func(*worker) bool) {
	r.scans++
	for _, w := range r.order {
		if !fn(w) {
			return
		}
	}
}

func (r *roster) len() int { return len(r.order) }
