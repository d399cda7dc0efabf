package am

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/xres/xres/conf"
	"github.com/xres/xres/resources/contract"
	"github.com/xres/xres/yarn"
	"github.com/xres/xres/yarn/ammetrics"
	"github.com/xres/xres/yarn/amnm"
	"github.com/xres/xres/yarn/amnodes"
	"github.com/xres/xres/yarn/amstatus"
)

// nodesLocked takes in a heartbeat's view of the cluster: its node count
// and the nodes that changed state. The workers of a node that is gone
// (LOST, DECOMMISSIONED, SHUTDOWN) are replaced without counting as
// failures; those on a node still reachable are given back so they do not
// run beside their replacements.
func (a *AM) nodesLocked(resp yarn.AllocateResponse) {
	gone := a.nodes.Heartbeat(resp.ClusterNodes, resp.UpdatedNodes)
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
		a.cfg.Metrics.Failed(ammetrics.ClassCluster)
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
	var until time.Time
	if a.cfg.BlacklistExpiry > 0 {
		until = a.cfg.Now().Add(a.cfg.BlacklistExpiry)
	}
	a.nodes.Blacklist(w.c.Host(), w, until)
}

// BlacklistWhy is why w's host was blacklisted (amnodes.Cause): its exit
// and the last lines of its stderr (once fetched) or YARN's diagnostics.
func (w *worker) BlacklistWhy() string {
	return amnodes.Why(w.c.ID, exitText(w.exit), w.tail, w.diag)
}

// expireBlacklistLocked takes the hosts whose blacklisting has expired off
// the blacklist and queues their removal for the RM.
func (a *AM) expireBlacklistLocked() {
	for _, host := range a.nodes.Expire(a.cfg.Now()) {
		a.log.WithField("host", host).Info("blacklisting expired; the host may get workers again")
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
	if a.nodes.AllBlacklisted() {
		return &Result{Status: yarn.StatusFailed, Diagnostics: fmt.Sprintf(
			"no node can run a worker: all %d nodes of the cluster are blacklisted after their container-launcher failed: %s",
			a.nodes.Cluster(), a.nodes.Text())}
	}
	for _, g := range needy {
		hosts := a.nodes.HostsFor(g.Plan.NodeLabel)
		if !a.nodes.AllOff(hosts) {
			continue
		}
		where := "of the cluster"
		if l := g.Plan.NodeLabel; l != "" {
			where = "with node label " + l
		}
		return &Result{Status: yarn.StatusFailed, Diagnostics: fmt.Sprintf(
			"no node can run a worker%s: all %d hosts %s (%s) are blacklisted after their container-launcher failed: %s",
			g.label(), len(hosts), where, strings.Join(hosts, ", "), a.nodes.Text())}
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
			strings.Join(wanted, " and "), conf.SlotRequestTimeout.Key, a.cfg.RequestTimeout, a.nodes.Cluster())
		if a.nodes.Len() > 0 {
			d += "; blacklisted: " + a.nodes.Text()
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

// lastHostLocked says whether blacklisting host leaves g no host to run on.
func (a *AM) lastHostLocked(g *group, host string) bool {
	return a.nodes.LastHost(g.Plan.NodeLabel, host)
}

// refreshNodes reads the node list (Config.Nodes) at the first heartbeat,
// and again while hosts are blacklisted when the blacklist or the cluster
// changed since the last read, off the AM's lock. A failed read keeps the
// last list.
func (a *AM) refreshNodes(ctx context.Context) {
	a.mu.Lock()
	stale := a.cfg.Nodes != nil && a.nodes.ToRead()
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
	a.mu.Lock()
	a.nodes.SetList(nodes)
	a.mu.Unlock()
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
