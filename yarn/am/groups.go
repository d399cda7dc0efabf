package am

import (
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/xres/xres/conf"
	"github.com/xres/xres/yarn"
	"github.com/xres/xres/yarn/amplan"
	"github.com/xres/xres/yarn/amstatus"
)

// group is a Group with its state.
type group struct {
	amplan.Group
	id        int64 // allocation_request_id and priority of its ask
	pending   int   // containers still wanted
	lastAsked int   // Count last delivered to the RM; -1 forces a send
	count     map[string]int
	succeeded int
	failures  int
	restarts  int
	firstFail *worker
	minTime   time.Time // first time its minimum was running
	// The rendezvous (rendezvous.go): the worker holding each rank, since
	// when a gang has waited to be complete, and its restarts.
	ranks []*worker
	// rankHint: every rank below it is taken (rankFree false), so
	// assignRankLocked scans from it; set back to 0 whenever a worker may
	// have given its rank up (roster.set to a state other than starting or
	// running, a gang stop). O(1) amortised per worker instead of a scan of
	// every rank (2,000 containers into 10,000 ranks: 20 million checks).
	rankHint     int
	gangSince    time.Time
	gangRestarts int
	// spares are its standby spares (some may have ended: liveSpares);
	// promotions counts those that took a lost worker's rank.
	spares     []*worker
	promotions int
	// asks are its containers asked for and not granted yet (their
	// workers' timelines).
	asks amstatus.Asks
}

// newGroups builds the groups' state; each group's launch context gets the
// rendezvous environment (amplan.RendezvousLaunch) under the AM's trackingURL.
func newGroups(gs []amplan.Group, trackingURL string) []*group {
	out := make([]*group, len(gs))
	for i, g := range gs {
		g.Launch = amplan.RendezvousLaunch(g, trackingURL)
		out[i] = &group{Group: g, id: int64(i) + 1, pending: g.Plan.Workers + g.Plan.Spares, lastAsked: -1, count: map[string]int{},
			ranks: make([]*worker, g.Plan.Workers)}
	}
	return out
}

// label names the group in messages: "" for the only group, else
// " of group NAME".
func (g *group) label() string {
	if g.Name == "" {
		return ""
	}
	return " of group " + g.Name
}

// active is how many of its workers (spares aside) are starting or
// running.
func (g *group) active() int {
	n := g.count[amstatus.StateStarting] + g.count[amstatus.StateRunning]
	for _, s := range g.liveSpares() {
		if s.state == amstatus.StateStarting {
			n--
		}
	}
	return n
}

// liveSpares drops the spares that ended from g.spares and returns the
// others.
func (g *group) liveSpares() []*worker {
	kept := g.spares[:0]
	for _, s := range g.spares {
		if s.spare && s.live() {
			kept = append(kept, s)
		}
	}
	clear(g.spares[len(kept):])
	g.spares = kept
	return kept
}

// workersWanted is how many of its pending containers are to run the
// command: those beyond the spares it misses (a container granted takes a
// free rank first, so a missing worker is asked before a missing spare).
func (g *group) workersWanted() int {
	return max(g.pending-max(g.Plan.Spares-len(g.liveSpares()), 0), 0)
}

// minimum is how many of its workers must run: all of them, or under
// scheduler-mode: reactive, Plan.MinWorkers.
func (g *group) minimum() int {
	if g.Plan.Reactive {
		return min(max(g.Plan.MinWorkers, 1), g.Plan.Workers)
	}
	return g.Plan.Workers
}

// needy reports whether the group waits for workers it needs: some are
// wanted (spares are not needed) and, under reactive mode, fewer than its
// minimum run.
func (g *group) needy() bool {
	return g.workersWanted() > 0 && (!g.Plan.Reactive || g.count[amstatus.StateRunning] < g.minimum())
}

// done reports whether the group has finished its work: every wanted
// worker exited 0, or under reactive mode at least its minimum did and
// none is left running.
func (g *group) done() bool {
	if g.succeeded >= g.Plan.Workers {
		return true
	}
	return g.Plan.Reactive && g.succeeded >= g.minimum() && g.active() == 0
}

// tag is the placement allocation tag of the group's workers ("":
// WorkerAllocationTag).
func (g *group) tag() string {
	if g.Name == "" {
		return ""
	}
	return WorkerAllocationTag + "-" + g.Name
}

// priority is its ask's priority (0: WorkerPriority).
func (g *group) priority() int32 {
	if g.id == 1 {
		return 0
	}
	return int32(g.id)
}

// groupByID finds the group whose ask has allocation_request_id id.
func (a *AM) groupByID(id int64) *group {
	if id < 1 || id > int64(len(a.groups)) {
		return nil
	}
	return a.groups[id-1]
}

// groupOfSize is the group a container of size r most likely ran for,
// when its allocation_request_id is unknown: the first whose profile asks
// exactly r's extended resources and no more memory or vcores than r has;
// else the first group.
func (a *AM) groupOfSize(r yarn.Resource) *group {
	for _, g := range a.groups {
		p := g.Plan.Profile
		if p.MemoryMB <= r.MemoryMB && p.VCores <= r.VCores && maps.Equal(p.Extra, r.Extra) {
			return g
		}
	}
	return a.groups[0]
}

// totals sums the groups' counters.
type totals struct {
	workers, pending, succeeded, failures, restarts int
}

func (a *AM) totalsLocked() totals {
	var t totals
	for _, g := range a.groups {
		t.workers += g.Plan.Workers
		t.pending += g.pending
		t.succeeded += g.succeeded
		t.failures += g.failures
		t.restarts += g.restarts
	}
	return t
}

// unplaceableLocked explains pending workers a placement constraint
// keeps out: more workers of a group wanted than the cluster's nodes times
// its xres.placement.max-workers-per-node. "" when none.
func (a *AM) unplaceableLocked() string {
	var out []string
	for _, g := range a.groups {
		k := g.Plan.MaxWorkersPerNode
		if k <= 0 || g.pending == 0 || a.nodes.Cluster() == 0 {
			continue
		}
		room := a.nodes.Cluster() * k
		n := min(g.workersWanted(), g.Plan.Workers-room)
		if n <= 0 {
			continue
		}
		out = append(out, fmt.Sprintf("%d worker(s)%s cannot be placed: %s=%d and the cluster has %d nodes (room for %d of the %d workers); they wait for a node to join",
			n, g.label(), conf.PlacementMaxWorkersPerNode.Key, k, a.nodes.Cluster(), room, g.Plan.Workers))
	}
	return strings.Join(out, "; ")
}
