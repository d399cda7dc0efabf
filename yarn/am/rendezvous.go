package am

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/xres/xres/conf"
	"github.com/xres/xres/resources/contract"
	"github.com/xres/xres/yarn"
	"github.com/xres/xres/yarn/amplan"
	"github.com/xres/xres/yarn/amstate"
	"github.com/xres/xres/yarn/amstatus"
)

// How worker groups find each other.
//
// Ranks: every worker holds a rank of its group, 0…Workers-1, from the
// moment it is allocated: the lowest free one, so a replacement takes the
// rank of the worker it replaces. A rank is free when no starting or
// running worker holds it (a worker stopped for a gang restart frees its
// rank at once).
//
// Readiness: a worker's launcher reserves its devices, POSTs its report
// (with its port) and then asks GET /api/rendezvous until the answer is
// ready (contract.Rendezvous). A worker is ready when
//   - its own report arrived, where its group waits at all;
//   - under gang, every rank of its group has a reporting worker;
//   - every group it depends on runs: at least its minimum of ranks are
//     held by workers that are ready themselves;
//   - under xres.rendezvous: torch, the master's address is known; under
//     tensorflow, the address of every rank of every group with a port.
//
// Gang restart: when a worker of a gang group is lost, the workers of the
// group already told to run are stopped (uncounted) and the gang forms
// again; only the lost worker counts against yarn.maximum-failed-containers.
//
// Standby spares (slotmanager.redundant-taskmanager-num): a container
// granted when every rank is held (or done) becomes a spare while the group
// has fewer than Plan.Spares. Its launcher reserves its devices, reports
// and waits in the rendezvous, which answers it "standby" (no rank, not
// counted in XRES_WORKERS or the success). When a worker is lost, the
// spare furthest along takes its rank at once (promoted: its launcher's
// next ask is ready, and it runs the command with that rank), and the
// container asked in the lost worker's place becomes the new spare.

// Worker environment variables the rendezvous sets (the launcher passes
// on only those contract.CheckRendezvousVar allows).
const (
	EnvGroup     = contract.EnvGroup
	EnvRank      = contract.EnvRank
	EnvWorldSize = contract.EnvWorldSize
)

// AddressesEnv names XRES_<GROUP>_ADDRESSES for group name: upper-cased,
// every character other than A-Z and 0-9 replaced by "_".
func AddressesEnv(group string) string { return contract.AddressesEnv(group) }

// assignRankLocked gives w the lowest free rank of its group; with none
// free, w becomes a standby spare while the group misses some.
func (a *AM) assignRankLocked(w *worker) {
	g := w.g
	if len(g.ranks) != g.Plan.Workers {
		g.ranks = append(g.ranks, make([]*worker, max(g.Plan.Workers-len(g.ranks), 0))...)
	}
	for r := min(g.rankHint, len(g.ranks)); r < len(g.ranks); r++ {
		if g.rankFree(r) {
			g.ranks[r] = w
			w.rank = r
			g.rankHint = r + 1
			return
		}
	}
	g.rankHint = len(g.ranks)
	w.rank = -1
	g.addSpare(w)
}

// addSpare makes w, which holds no rank, a standby spare of g while g has
// fewer than Plan.Spares; it reports whether it did.
func (g *group) addSpare(w *worker) bool {
	if len(g.liveSpares()) >= g.Plan.Spares {
		return false
	}
	w.spare = true
	g.spares = append(g.spares, w)
	return true
}

// adoptRankLocked gives w, a worker the earlier attempt saved as l, the
// rank it had (or its place as a spare) when still free, else as
// assignRankLocked does.
func (a *AM) adoptRankLocked(w *worker, l amstate.Live) {
	g := w.g
	w.rank = -1
	switch {
	case l.Spare && g.addSpare(w):
	case l.Rank != nil && *l.Rank >= 0 && *l.Rank < g.Plan.Workers && len(g.ranks) == g.Plan.Workers && g.rankFree(*l.Rank):
		w.rank = *l.Rank
		g.ranks[w.rank] = w
	default:
		a.assignRankLocked(w)
	}
}

// rankFree reports whether rank r wants a worker: none holds it and none
// has done its work (a rank that succeeded is not run again).
func (g *group) rankFree(r int) bool {
	w := g.ranks[r]
	return w == nil || (w.state != amstatus.StateSucceeded && g.holder(r) == nil)
}

// upState is the state of w once its container runs.
func (w *worker) upState() string {
	if w.spare {
		return amstatus.StateStandby
	}
	return amstatus.StateRunning
}

// replaceLocked asks one more container for w's group in place of w,
// which ended: a standby spare takes w's rank at once (the container asked
// becomes a spare), else the container asked does.
func (a *AM) replaceLocked(w *worker) {
	a.cfg.Metrics.Replaced()
	w.g.pending++
	if !w.spare {
		a.promoteLocked(w.g, w.rank, w)
	}
}

// promoteLocked gives free rank r of g to the spare furthest along
// (standing by with its devices reported, else standing by, else still
// starting); it reports whether one took it.
func (a *AM) promoteLocked(g *group, r int, lost *worker) bool {
	if r < 0 || r >= len(g.ranks) || !g.rankFree(r) {
		return false
	}
	var best *worker
	along := func(s *worker) int {
		switch {
		case s.state == amstatus.StateStandby && s.reported():
			return 2
		case s.state == amstatus.StateStandby:
			return 1
		}
		return 0
	}
	for _, s := range g.liveSpares() {
		if best == nil || along(s) > along(best) {
			best = s
		}
	}
	if best == nil {
		return false
	}
	g.spares = slices.DeleteFunc(g.spares, func(s *worker) bool { return s == best })
	best.spare, best.rank, best.promoted = false, r, a.cfg.Now()
	g.ranks[r] = best
	g.promotions++
	if best.state == amstatus.StateStandby {
		a.workers.set(best, amstatus.StateRunning)
	} else {
		a.workers.version++ // its saved rank changed
	}
	a.log.WithFields(logrus.Fields{"group": g.Name, "spare": best.c.ID, "node": best.c.NodeID, "rank": r, "replaces": lost.c.ID}).
		Info("promoted a standby spare to the lost worker's rank")
	a.checkAllRunningLocked()
	return true
}

// holder is the worker that holds rank r: starting or running, not
// stopped for a gang restart; nil when the rank is free.
func (g *group) holder(r int) *worker {
	if r < 0 || r >= len(g.ranks) {
		return nil
	}
	w := g.ranks[r]
	if w == nil || w.gangStopped || (w.state != amstatus.StateStarting && w.state != amstatus.StateRunning) {
		return nil
	}
	return w
}

// reported is whether w's launcher has reported (devices reserved, port
// chosen).
func (w *worker) reported() bool { return w.devices != nil }

// address is w's host:port ("" without a port).
func (w *worker) address() string {
	if w.port <= 0 {
		return ""
	}
	return net.JoinHostPort(w.c.Host(), strconv.Itoa(w.port))
}

// gangCount counts g's ranks that are held and, of those, reported.
func (g *group) gangCount() (held, reported int) {
	for r := range g.Plan.Workers {
		if w := g.holder(r); w != nil {
			held++
			if w.reported() {
				reported++
			}
		}
	}
	return held, reported
}

// addresses lists g's addresses in rank order; complete is false when a
// rank has none yet.
func (g *group) addresses() (out []string, complete bool) {
	complete = true
	for r := range g.Plan.Workers {
		w := g.holder(r)
		if w == nil || !w.reported() || w.address() == "" {
			complete = false
			out = append(out, "")
			continue
		}
		out = append(out, w.address())
	}
	return out, complete
}

func (a *AM) groupByName(name string) *group {
	for _, g := range a.groups {
		if g.Name == name {
			return g
		}
	}
	return nil
}

// readyLocked says whether w may run its command, or what it waits for.
// depth bounds the walk over dependencies (a cycle is refused by
// PlanGroups; this keeps a hand-made Config from looping).
func (a *AM) readyLocked(w *worker, depth int) (bool, string) {
	g := w.g
	if depth > len(a.groups) {
		return false, "the groups depend on each other in a cycle"
	}
	if !g.Plan.Waits() {
		return true, ""
	}
	if !w.reported() {
		return false, "its own device report"
	}
	if g.Plan.Gang {
		if _, rep := g.gangCount(); rep < g.Plan.Workers {
			return false, fmt.Sprintf("gang start%s: %d of %d workers have reserved their devices", g.label(), rep, g.Plan.Workers)
		}
	}
	for _, name := range g.Plan.DependsOn {
		h := a.groupByName(name)
		if h == nil {
			return false, fmt.Sprintf("group %s, which is not a group of this application", name)
		}
		if ok, why := a.runningLocked(h, depth+1); !ok {
			return false, fmt.Sprintf("group %s (depends-on): %s", name, why)
		}
	}
	switch g.Plan.Rendezvous {
	case amplan.RendezvousTorch:
		if m := a.masterLocked(g); m != nil && m.address() == "" {
			return false, fmt.Sprintf("the torch master (rank 0%s) to report its port", m.g.label())
		} else if m == nil && a.masterGroupLocked(g) != nil {
			return false, "the torch master (rank 0) to be allocated"
		}
	case amplan.RendezvousTensorflow:
		for _, h := range a.groups {
			if h.Plan.Port == 0 {
				continue
			}
			if _, ok := h.addresses(); !ok {
				return false, fmt.Sprintf("the addresses of every worker%s (TF_CONFIG)", h.label())
			}
		}
	}
	return true, ""
}

// runningLocked says whether group h runs for its dependents: at least
// its minimum of ranks are held by workers that are ready (and, where the
// worker picks its port, that have reported it).
func (a *AM) runningLocked(h *group, depth int) (bool, string) {
	n := 0
	var why string
	for r := range h.Plan.Workers {
		w := h.holder(r)
		if w == nil {
			continue
		}
		ok, reason := a.readyLocked(w, depth)
		if ok && h.Plan.Port == amplan.PortWorker && w.port <= 0 {
			ok, reason = false, fmt.Sprintf("rank %d%s to report the port it serves on (%s)", r, h.label(), contract.EnvPortFile)
		}
		if ok {
			n++
		} else if why == "" {
			why = reason
		}
	}
	if n >= h.minimum() {
		return true, ""
	}
	msg := fmt.Sprintf("%d of %d workers running", n, h.minimum())
	if why != "" {
		msg += "; they wait for " + why
	}
	return false, msg
}

// masterGroupLocked is the group whose rank 0 is g's torch master: g
// itself when it has a port, else its first dependency with one; nil:
// none.
func (a *AM) masterGroupLocked(g *group) *group {
	if g.Plan.Port != 0 {
		return g
	}
	for _, name := range g.Plan.DependsOn {
		if h := a.groupByName(name); h != nil && h.Plan.Port != 0 {
			return h
		}
	}
	return nil
}

// masterLocked is the worker that holds rank 0 of g's master group.
func (a *AM) masterLocked(g *group) *worker {
	if h := a.masterGroupLocked(g); h != nil {
		return h.holder(0)
	}
	return nil
}

// Rendezvous answers the launcher of container id: its rank, and, once it
// may run, its environment and the addresses to wait for.
func (a *AM) Rendezvous(id string) (contract.Rendezvous, error) {
	id = strings.TrimSpace(id)
	a.mu.Lock()
	defer a.mu.Unlock()
	w := a.workers.get(id)
	if w == nil || !strings.HasPrefix(id, "container_") {
		return contract.Rendezvous{}, fmt.Errorf("rendezvous: %w: %q", amstatus.ErrUnknownContainer, id)
	}
	g := w.g
	out := contract.Rendezvous{Group: g.Name, Rank: w.rank, WorldSize: g.Plan.Workers}
	if w.spare && w.live() {
		out.Standby = true
		out.Waiting = "its own device report"
		if w.reported() {
			out.Waiting = fmt.Sprintf("standby: a spare%s (%s); it runs the worker command with the rank of the next worker lost",
				g.label(), conf.RedundantWorkers.Key)
		}
		return out, nil
	}
	if w.rank < 0 || w.gangStopped || (w.state != amstatus.StateStarting && w.state != amstatus.StateRunning) {
		out.Waiting = "nothing: this worker is being stopped"
		return out, nil
	}
	ok, why := a.readyLocked(w, 0)
	if !ok {
		out.Waiting = why
		return out, nil
	}
	out.Ready = true
	w.went = true
	out.Env = a.workerEnvLocked(w)
	for _, name := range g.Plan.DependsOn {
		if h := a.groupByName(name); h != nil && h.Plan.Port != 0 {
			addrs, _ := h.addresses()
			for _, ad := range addrs {
				if ad != "" {
					out.Probe = append(out.Probe, ad)
				}
			}
		}
	}
	return out, nil
}

// workerEnvLocked is the environment a ready worker adds.
func (a *AM) workerEnvLocked(w *worker) map[string]string {
	g := w.g
	env := map[string]string{
		EnvGroup:     g.Name,
		EnvRank:      strconv.Itoa(w.rank),
		EnvWorldSize: strconv.Itoa(g.Plan.Workers),
	}
	addrOf := func(h *group) {
		if h.Plan.Port == 0 {
			return
		}
		if addrs, ok := h.addresses(); ok {
			env[AddressesEnv(h.Name)] = strings.Join(addrs, ",")
		}
	}
	addrOf(g)
	for _, name := range g.Plan.DependsOn {
		if h := a.groupByName(name); h != nil {
			addrOf(h)
		}
	}
	switch g.Plan.Rendezvous {
	case amplan.RendezvousTorch:
		local, size := 0, 0
		for r := range g.Plan.Workers {
			if h := g.holder(r); h != nil && h.c.Host() == w.c.Host() {
				if r < w.rank {
					local++
				}
				size++
			}
		}
		env[contract.EnvTorchRank] = strconv.Itoa(w.rank)
		env[contract.EnvTorchWorldSize] = strconv.Itoa(g.Plan.Workers)
		env[contract.EnvTorchLocalRank] = strconv.Itoa(local)
		env[contract.EnvTorchLocalWorldSize] = strconv.Itoa(size)
		if m := a.masterLocked(g); m != nil && m.address() != "" {
			env[contract.EnvTorchMasterAddr] = m.c.Host()
			env[contract.EnvTorchMasterPort] = strconv.Itoa(m.port)
		}
	case amplan.RendezvousTensorflow:
		cluster := map[string][]string{}
		for _, h := range a.groups {
			if h.Plan.Port != 0 {
				cluster[h.Name], _ = h.addresses()
			}
		}
		tf := map[string]any{"cluster": cluster, "task": map[string]any{"type": g.Name, "index": w.rank}}
		b, _ := json.Marshal(tf)
		env[contract.EnvTFConfig] = string(b)
	}
	return env
}

// gangLostLocked restarts w's gang when w, a member, is lost and
// replaced: every other worker of the group already told to run is
// stopped (uncounted, replaced) and the gang forms again within
// xres.gang.timeout.
func (a *AM) gangLostLocked(ctx context.Context, w *worker) {
	g := w.g
	if !g.Plan.Gang || a.result != nil || w.spare {
		return
	}
	g.gangSince = time.Time{}
	var stop []*worker
	for r := range g.Plan.Workers {
		if h := g.holder(r); h != nil && h != w && h.went {
			h.gangStopped = true
			g.rankHint = 0
			stop = append(stop, h)
			a.promoteLocked(g, r, h)
		}
	}
	if len(stop) == 0 {
		return
	}
	g.gangRestarts++
	a.log.WithFields(logrus.Fields{"group": g.Name, "lost": w.c.ID, "stopping": len(stop)}).Warn("a gang worker was lost; restarting the gang (every rank)")
	a.startWG.Add(1)
	go func() {
		defer a.startWG.Done()
		for _, h := range stop {
			a.mu.Lock()
			token := a.nmTokens[h.c.NodeID]
			a.mu.Unlock()
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), a.cfg.CallTimeout)
			if err := a.nm.StopContainer(cctx, h.c, token); err != nil {
				a.log.WithError(err).WithField("container", h.c.ID).Warn("stopping a gang worker failed; the RM reports it when it ends")
			}
			cancel()
		}
	}()
}

// gangStoppedEndedLocked records the end of a worker stopped for a gang
// restart: replaced, not counted as a failure.
func (a *AM) gangStoppedEndedLocked(w *worker, st yarn.Completed) {
	a.workers.set(w, amstatus.StateFailed)
	w.exit, w.diag, w.finished = st.ExitStatus, "stopped for a gang restart: "+st.Diagnostics, a.cfg.Now()
	w.g.pending++
	w.g.restarts++
}

// gangTimeoutLocked fails the application when a gang group has waited
// longer than its xres.gang.timeout for all its workers to be allocated
// and reserve their devices; nil otherwise.
func (a *AM) gangTimeoutLocked() *Result {
	now := a.cfg.Now()
	for _, g := range a.groups {
		if !g.Plan.Gang || g.Plan.GangTimeout <= 0 {
			continue
		}
		held, rep := g.gangCount()
		if rep >= g.Plan.Workers {
			g.gangSince = time.Time{}
			continue
		}
		if g.gangSince.IsZero() {
			g.gangSince = now
			continue
		}
		if waited := now.Sub(g.gangSince); waited >= g.Plan.GangTimeout {
			var missing []string
			for r := range g.Plan.Workers {
				if h := g.holder(r); h == nil || !h.reported() {
					missing = append(missing, strconv.Itoa(r))
				}
			}
			name := g.Name
			if name == "" {
				name = "(the only group)"
			}
			d := fmt.Sprintf("gang start of worker group %s timed out after %s (%s): %d of %d workers allocated, %d of them with devices reserved; ranks without a ready worker: %s. The application's containers are released, so it holds nothing another application waits for",
				name, g.Plan.GangTimeout, conf.GangTimeout.Key, held, g.Plan.Workers, rep, strings.Join(missing, ", "))
			if u := a.unplaceableLocked(); u != "" {
				d += "; " + u
			}
			a.log.WithField("group", g.Name).Error(d)
			return &Result{Status: yarn.StatusFailed, Diagnostics: d}
		}
	}
	return nil
}
