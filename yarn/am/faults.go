package am

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/xres/xres/conf"
	"github.com/xres/xres/resources/contract"
	"github.com/xres/xres/yarn"
	"github.com/xres/xres/yarn/amnm"
	"github.com/xres/xres/yarn/amstatus"
)

// goneNodeStates are the node states whose workers are replaced at once,
// before the RM reports their containers completed. A DECOMMISSIONING
// node's workers run on (graceful decommission lets them finish; the RM
// ends those still running when the node is DECOMMISSIONED), and so do an
// UNHEALTHY node's (a health check that flaps must not kill healthy
// workers; when the RM takes the node out of scheduling it completes
// their containers as ABORTED, which replaces them without counting).
var goneNodeStates = map[string]bool{"LOST": true, "DECOMMISSIONED": true, "SHUTDOWN": true}

// blacklistTail is how many stderr lines of a node's last launcher failure
// the hopeless-cluster diagnostic quotes.
const blacklistTail = 3

// nodesLocked takes in a heartbeat's view of the cluster: its node count
// and the nodes that changed state. The workers of a node that is gone
// (LOST, DECOMMISSIONED, SHUTDOWN) are replaced without counting as
// failures; those on a node still reachable are given back so they do not
// run beside their replacements.
func (a *AM) nodesLocked(resp yarn.AllocateResponse) {
	if resp.ClusterNodes > 0 {
		if resp.ClusterNodes != a.clusterNodes {
			a.nodesStale = true
		}
		a.clusterNodes = resp.ClusterNodes
	}
	if len(resp.UpdatedNodes) > 0 {
		a.nodesStale = true
	}
	gone := map[string]string{}
	for _, u := range resp.UpdatedNodes {
		if goneNodeStates[u.State] {
			gone[u.NodeID] = u.State
		}
	}
	if len(gone) == 0 {
		return
	}
	a.workers.each(func(w *worker) bool {
		state, ok := gone[w.c.NodeID]
		if !ok || !w.live() {
			return true
		}
		a.workers.set(w, amstatus.StateFailed)
		w.exit, w.finished = yarn.ExitAborted, a.cfg.Now()
		w.diag = fmt.Sprintf("node %s is %s; worker replaced", w.c.NodeID, state)
		if state != "LOST" {
			a.releaseLocked(w.c.ID)
		}
		a.replaceLocked(w)
		w.g.restarts++
		a.log.WithFields(logrus.Fields{"container": w.c.ID, "node": w.c.NodeID, "node_state": state}).Warn("node gone; replacing its worker")
		return true
	})
}

// blacklistLocked keeps w's host off the asks until BlacklistExpiry has
// passed (for ever when it is 0), remembering why for the diagnostic.
func (a *AM) blacklistLocked(w *worker) {
	host := w.c.Host()
	if a.blUntil == nil {
		a.blUntil, a.blBy = map[string]time.Time{}, map[string]*worker{}
	}
	if !a.blacklist[host] {
		a.nodesStale = true
	}
	a.blacklist[host] = true
	if a.cfg.BlacklistExpiry > 0 {
		a.blUntil[host] = a.cfg.Now().Add(a.cfg.BlacklistExpiry)
	}
	a.blBy[host] = w
}

// blacklistWhy is why w's host was blacklisted: its exit and the last
// lines of its stderr (once fetched) or YARN's diagnostics.
func blacklistWhy(w *worker) string {
	why := fmt.Sprintf("container %s exited with %s", w.c.ID, exitText(w.exit))
	tail := w.tail
	if len(tail) > blacklistTail {
		tail = tail[len(tail)-blacklistTail:]
	}
	if len(tail) > 0 {
		why += ": " + strings.Join(tail, " | ")
	} else if d := strings.TrimSpace(w.diag); d != "" {
		why += ": " + d
	}
	return why
}

// expireBlacklistLocked takes the hosts whose blacklisting has expired off
// the blacklist and queues their removal for the RM.
func (a *AM) expireBlacklistLocked() {
	now := a.cfg.Now()
	for host, until := range a.blUntil {
		if !now.Before(until) {
			delete(a.blUntil, host)
			delete(a.blacklist, host)
			if a.blSent[host] {
				a.blRemove = append(a.blRemove, host)
			}
			delete(a.blSent, host)
			a.log.WithField("host", host).Info("blacklisting expired; the host may get workers again")
		}
	}
}

// hopelessLocked ends an application no node can serve while a group
// needs workers (all of them, or under reactive mode its minimum): every
// node of the cluster blacklisted (as Spark does), or none granted for
// RequestTimeout (Flink's slot.request.timeout).
func (a *AM) hopelessLocked() *Result {
	var needy []*group
	for _, g := range a.groups {
		if g.needy() {
			needy = append(needy, g)
		}
	}
	if len(needy) == 0 {
		a.waitingSince = time.Time{}
		return nil
	}
	if a.nodes == nil && a.clusterNodes > 0 && len(a.blacklist) >= a.clusterNodes {
		return &Result{Status: yarn.StatusFailed, Diagnostics: fmt.Sprintf(
			"no node can run a worker: all %d nodes of the cluster are blacklisted after their container-launcher failed: %s",
			a.clusterNodes, a.blacklistTextLocked())}
	}
	for _, g := range needy {
		hosts := a.hostsForLocked(g)
		if len(hosts) == 0 || slices.ContainsFunc(hosts, func(h string) bool { return !a.blacklist[h] }) {
			continue
		}
		where := "of the cluster"
		if l := g.Plan.NodeLabel; l != "" {
			where = "with node label " + l
		}
		return &Result{Status: yarn.StatusFailed, Diagnostics: fmt.Sprintf(
			"no node can run a worker%s: all %d hosts %s (%s) are blacklisted after their container-launcher failed: %s",
			g.label(), len(hosts), where, strings.Join(hosts, ", "), a.blacklistTextLocked())}
	}
	now := a.cfg.Now()
	if n := a.workers.len(); a.waitingSince.IsZero() || n != a.waitedWorkers {
		a.waitingSince, a.waitedWorkers = now, n
		return nil
	}
	if a.cfg.RequestTimeout > 0 && now.Sub(a.waitingSince) >= a.cfg.RequestTimeout {
		var wanted []string
		for _, g := range needy {
			w := fmt.Sprintf("%d worker containers%s (%s each)", g.pending, g.label(), g.Plan.Profile.String())
			if g.Plan.Reactive {
				w += fmt.Sprintf(", %d running of the %d needed (%s)", g.count[amstatus.StateRunning], g.minimum(), conf.ReactiveMinWorkers.Key)
			}
			wanted = append(wanted, w)
		}
		d := fmt.Sprintf("%s not granted within %s=%s (%d nodes in the cluster)",
			strings.Join(wanted, " and "), conf.SlotRequestTimeout.Key, a.cfg.RequestTimeout, a.clusterNodes)
		if len(a.blacklist) > 0 {
			d += "; blacklisted: " + a.blacklistTextLocked()
		}
		if u := a.unplaceableLocked(); u != "" {
			d += "; " + u
		}
		return &Result{Status: yarn.StatusFailed, Diagnostics: d}
	}
	return nil
}

// NodeLister lists the cluster's NodeManagers (getClusterNodes), for the
// hopeless check: which hosts can run a group's ask. *yarn.Client is one.
type NodeLister interface {
	GetClusterNodes(ctx context.Context, states ...string) ([]yarn.NodeReport, error)
}

// usableNode says whether a node in state may still run a worker.
func usableNode(state string) bool {
	return !goneNodeStates[state] && state != "DECOMMISSIONING"
}

// hostsForLocked are the distinct hosts that can run g's ask, sorted: those
// of the usable nodes within its node label (any node for the default
// partition: a non-exclusive label serves it too). nil while the AM has
// no node list (Config.Nodes nil, or not answered yet).
func (a *AM) hostsForLocked(g *group) []string {
	if a.nodes == nil {
		return nil
	}
	seen := map[string]struct{}{}
	for _, n := range a.nodes {
		if !usableNode(n.State) || (g.Plan.NodeLabel != "" && !slices.Contains(n.Labels, g.Plan.NodeLabel)) {
			continue
		}
		seen[yarn.Container{NodeID: n.ID}.Host()] = struct{}{}
	}
	return sortedKeys(seen)
}

// maxLocalityHosts bounds the hosts an ask names (localityLocked): beyond
// it the ask is ANY alone, as before.
const maxLocalityHosts = 500

// localityLocked are the hosts and racks g's ask names besides ANY
// (yarn.Ask.Hosts): every usable host of the node list that is not
// blacklisted, and their racks; none without a node list, for an ask with a
// node label or a per-node bound (a SchedulingRequest), or beyond
// maxLocalityHosts. Naming every host with the whole count leaves the
// placement to the RM as an ANY ask does, but lets it grant node-local,
// many containers per node heartbeat, where ANY grants are off-switch, one
// per node heartbeat under the CapacityScheduler's defaults.
func (a *AM) localityLocked(g *group) (hosts, racks []string) {
	if a.nodes == nil || g.Plan.NodeLabel != "" || g.Plan.MaxWorkersPerNode > 0 {
		return nil, nil
	}
	rackSet := map[string]struct{}{}
	hostSet := map[string]struct{}{}
	for _, n := range a.nodes {
		host := yarn.Container{NodeID: n.ID}.Host()
		if !usableNode(n.State) || a.blacklist[host] {
			continue
		}
		hostSet[host] = struct{}{}
		rackSet[cmp.Or(n.Rack, yarn.DefaultRack)] = struct{}{}
	}
	if len(hostSet) == 0 || len(hostSet) > maxLocalityHosts {
		return nil, nil
	}
	return sortedKeys(hostSet), sortedKeys(rackSet)
}

// lastHostLocked says whether blacklisting host leaves g no host to run on.
func (a *AM) lastHostLocked(g *group, host string) bool {
	if a.blacklist[host] {
		return false
	}
	if a.nodes == nil {
		return a.clusterNodes > 0 && len(a.blacklist)+1 >= a.clusterNodes
	}
	hosts := a.hostsForLocked(g)
	return slices.Contains(hosts, host) && !slices.ContainsFunc(hosts, func(h string) bool { return h != host && !a.blacklist[h] })
}

// refreshNodes reads the node list (Config.Nodes) at the first heartbeat,
// and again while hosts are blacklisted when the blacklist or the cluster
// changed since the last read, off the AM's lock. A failed read keeps the
// last list.
func (a *AM) refreshNodes(ctx context.Context) {
	a.mu.Lock()
	stale := a.cfg.Nodes != nil && (!a.nodesRead || a.nodesStale && len(a.blacklist) > 0)
	if stale {
		a.nodesRead, a.nodesStale = true, false
	}
	a.mu.Unlock()
	if !stale {
		return
	}
	cctx, cancel := context.WithTimeout(ctx, a.cfg.CallTimeout)
	nodes, err := a.cfg.Nodes.GetClusterNodes(cctx)
	cancel()
	if err != nil {
		a.log.WithError(err).Warn("could not list the cluster's nodes; the blacklist is compared with the node count")
		return
	}
	if nodes == nil {
		nodes = []yarn.NodeReport{}
	}
	a.mu.Lock()
	a.nodes = nodes
	a.mu.Unlock()
}

func (a *AM) blacklistTextLocked() string {
	hosts := sortedKeys(a.blacklist)
	for i, h := range hosts {
		if w := a.blBy[h]; w != nil {
			hosts[i] = h + " (" + blacklistWhy(w) + ")"
		}
	}
	return strings.Join(hosts, "; ")
}

// adoptedTries bounds the reads of an adopted worker's device report (the
// launcher may still be discovering when the new attempt registers).
const adoptedTries = 6

// AdoptedConcurrency bounds the NodeManager requests in flight for the
// workers adopted from an earlier attempt (their status, their device
// report); adoptedTimeout bounds each.
const (
	AdoptedConcurrency = 16
	adoptedTimeout     = 10 * time.Second
)

// neverStartedMsg is how a NodeManager answers for a container it was
// never asked to start (or has forgotten long since).
const neverStartedMsg = "is not handled by this NodeManager"

// learnAdopted, for the workers adopted from an earlier attempt, asks the
// NodeManager whether each the attempt saved no start of ever ran (one
// that never did is released and asked for again, counted neither failed
// nor replaced), and reads the device report each launcher kept in its
// log folder (contract.ReportFile). At most AdoptedConcurrency requests
// are in flight, each bounded by adoptedTimeout, off the heartbeat (Run
// waits for them).
func (a *AM) learnAdopted(ctx context.Context) {
	a.mu.Lock()
	ws := a.adopted
	a.adopted = nil
	a.mu.Unlock()
	if len(ws) == 0 {
		return
	}
	a.startWG.Add(1)
	go func() {
		defer a.startWG.Done()
		if sc, ok := a.nm.(amnm.StatusChecker); ok {
			ws = a.verifyAdopted(ctx, sc, ws)
		}
		if a.logs == nil {
			return
		}
		delay := time.Second
		for try := 1; len(ws) > 0; try++ {
			last := try == adoptedTries
			var again []*worker
			var mu sync.Mutex
			a.pool(ctx, ws, func(w *worker) {
				if !a.learnDevices(ctx, w, last) {
					mu.Lock()
					again = append(again, w)
					mu.Unlock()
				}
			})
			if last || ctx.Err() != nil {
				return
			}
			ws = again
			if len(ws) == 0 {
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-a.cfg.After(delay):
			}
			delay *= 2
		}
	}()
}

// pool runs fn for each of ws, AdoptedConcurrency at a time.
func (a *AM) pool(ctx context.Context, ws []*worker, fn func(*worker)) {
	work := make(chan *worker)
	var wg sync.WaitGroup
	for range min(AdoptedConcurrency, len(ws)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for w := range work {
				fn(w)
			}
		}()
	}
	for _, w := range ws {
		if ctx.Err() != nil {
			break
		}
		work <- w
	}
	close(work)
	wg.Wait()
}

// verifyAdopted asks the NodeManagers about the adopted workers no saved
// state shows started, and gives back those never started. It returns the
// workers still adopted.
func (a *AM) verifyAdopted(ctx context.Context, sc amnm.StatusChecker, ws []*worker) []*worker {
	var (
		mu   sync.Mutex
		kept []*worker
	)
	a.pool(ctx, ws, func(w *worker) {
		keep := true
		if w.unverified {
			a.mu.Lock()
			token := a.nmTokens[w.c.NodeID]
			a.mu.Unlock()
			cctx, cancel := context.WithTimeout(ctx, min(a.cfg.CallTimeout, adoptedTimeout))
			_, err := sc.GetContainerStatus(cctx, w.c, token)
			cancel()
			ce := (*yarn.ContainerError)(nil)
			if errors.As(err, &ce) && strings.Contains(ce.Message, neverStartedMsg) {
				keep = !a.neverStarted(w)
			} else if err != nil {
				a.log.WithError(err).WithField("container", w.c.ID).Warn("could not ask the NodeManager about an adopted worker; taking it as running")
			}
		}
		if keep {
			mu.Lock()
			kept = append(kept, w)
			mu.Unlock()
		}
	})
	return kept
}

// neverStarted gives back an adopted container its NodeManager never
// started (the earlier attempt was granted it and ended first): it is no
// worker, failed or replaced, and its group asks for one more. It reports
// false when the worker ended meanwhile.
func (a *AM) neverStarted(w *worker) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if w.state != amstatus.StateRunning && w.state != amstatus.StateStandby {
		return false
	}
	a.workers.remove(w)
	w.state = amstatus.StateFailed // out of the roster: frees its rank or spare place
	a.releaseLocked(w.c.ID)
	a.replaceLocked(w)
	a.log.WithFields(logrus.Fields{"container": w.c.ID, "node": w.c.NodeID}).
		Info("an earlier attempt's container was never started; releasing it and asking for another")
	return true
}

// learnDevices reads w's device report once; it reports false when it is
// to be tried again.
func (a *AM) learnDevices(ctx context.Context, w *worker, last bool) bool {
	log := a.log.WithField("container", w.c.ID)
	cctx, cancel := context.WithTimeout(ctx, min(a.cfg.CallTimeout, adoptedTimeout))
	lines, err := a.logs.Tail(cctx, w.c, contract.ReportFile, 1)
	cancel()
	var rep contract.DeviceReport
	if err == nil && len(lines) == 1 {
		if err = json.Unmarshal([]byte(lines[0]), &rep); err == nil && rep.Container != w.c.ID {
			err = fmt.Errorf("%s names container %q", contract.ReportFile, rep.Container)
		}
	} else if err == nil {
		err = fmt.Errorf("%s is empty", contract.ReportFile)
	}
	if err == nil {
		if err = a.ReportDevices(rep); errors.Is(err, amstatus.ErrStaleReport) {
			err = nil // its launcher's newer report came first
		}
	}
	if err == nil {
		log.Info("learnt the adopted worker's devices from its launcher's report")
		return true
	}
	if last || ctx.Err() != nil {
		log.WithError(err).Warn("could not learn the adopted worker's devices; the tracking page shows none")
		return true
	}
	return false
}
