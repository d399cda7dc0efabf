package am

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/xres/xres/conf"
	"github.com/xres/xres/resources"
	"github.com/xres/xres/yarn"
	"github.com/xres/xres/yarn/ammetrics"
	"github.com/xres/xres/yarn/amnm"
	"github.com/xres/xres/yarn/amnodes"
	"github.com/xres/xres/yarn/amplan"
	"github.com/xres/xres/yarn/amstarts"
	"github.com/xres/xres/yarn/amstate"
	"github.com/xres/xres/yarn/amstatus"
	"github.com/xres/xres/yarn/internal/logutil"
	"github.com/xres/xres/yarn/security"
)

// WorkerAskID is the allocation_request_id of the worker ask (of the first
// group; group i asks with id i+1).
const WorkerAskID int64 = 1

// Defaults for Config fields left zero.
const (
	DefaultStderrLines = 20
	DefaultCallTimeout = 30 * time.Second
	// DefaultRMMaxWait and DefaultRMRetryInterval are Hadoop's defaults of
	// yarn.resourcemanager.connect.max-wait.ms and .retry-interval.ms.
	DefaultRMMaxWait       = yarn.DefaultRMConnectMaxWait
	DefaultRMRetryInterval = yarn.DefaultRMConnectRetryInterval
	// DefaultMaxStarts and DefaultMaxStartsPerNode bound the container
	// starts in flight, overall and per NodeManager.
	DefaultMaxStarts        = 256
	DefaultMaxStartsPerNode = 16
	// DefaultStartBatch is how many of one node's containers go in one
	// startContainers call, when the NMClient is a BatchStarter.
	DefaultStartBatch = 32
	// DefaultPilotWait is Config.PilotWait's default.
	DefaultPilotWait = 5 * time.Second
)

// Config is everything the AM core needs besides its clients.
type Config struct {
	AppID string // application (attempt) id, for status and logs
	// Groups are the worker groups, in order. When empty, Plan, Owners
	// and Launch are the one group (unnamed).
	Groups   []amplan.Group
	Plan     amplan.Plan          // workers, profile, failure limit
	Owners   map[string]string    // YARN key → external resource name (messages)
	Launch   yarn.LaunchContext   // how each worker container is started
	Register yarn.RegisterRequest // host, RPC port and tracking URL told to the RM

	Heartbeat        time.Duration // allocate interval (DefaultHeartbeat)
	RequestHeartbeat time.Duration // allocate interval while containers are awaited (DefaultRequestHeartbeat)
	CallTimeout      time.Duration // deadline of each RM/NM call (DefaultCallTimeout)
	// The RM unreachable, as Hadoop's AMRMClient takes it: heartbeats are
	// retried every RMRetryInterval (yarn.resourcemanager.connect.retry-interval.ms)
	// and the AM gives up once they have failed for RMMaxWait
	// (yarn.resourcemanager.connect.max-wait.ms); workers keep running meanwhile.
	RMMaxWait        time.Duration // DefaultRMMaxWait
	RMRetryInterval  time.Duration // DefaultRMRetryInterval
	StderrLines      int           // stderr lines quoted in a failure diagnostic (DefaultStderrLines)
	MaxStarts        int           // container starts in flight at once (DefaultMaxStarts)
	MaxStartsPerNode int           // of those, on one NodeManager (DefaultMaxStartsPerNode)
	StartBatch       int           // containers of one node per start call, with a BatchStarter (DefaultStartBatch)
	// PilotWait bounds how long a node's other containers wait for its
	// pilot (amstarts.Queue, pilot mode: when the workers have files to localize)
	// to report (DefaultPilotWait).
	PilotWait time.Duration

	// Launcher exit codes (cmd/container-launcher). A worker that exits
	// with one of BadNodeExits failed on its node (device discovery): the
	// node is blacklisted and the worker replaced. One of BadJobExits means
	// the job itself is wrong (configuration, worker command): no
	// replacement can help, the application fails at once.
	BadNodeExits []int
	BadJobExits  []int
	// DeviceExits: a worker that exits with one of them lost a device of
	// its node (a GPU that failed, quarantined there): replaced without
	// counting, as the cluster's fault, and the node kept (its other
	// devices are fine).
	DeviceExits []int
	// BlacklistExpiry is how long a node stays blacklisted (0: until the
	// application ends). RequestTimeout fails the application when workers
	// are wanted and none is granted for that long (0: no bound).
	BlacklistExpiry time.Duration
	RequestTimeout  time.Duration

	Log logrus.FieldLogger
	// After waits for the next heartbeat; nil means time.After. Tests pass
	// a function returning a ready channel.
	After func(time.Duration) <-chan time.Time
	Now   func() time.Time
	// SubmitTime is when the client submitted the application
	// (APP_SUBMIT_TIME_ENV); zero if unknown. Status reports how long after
	// it every worker was running.
	SubmitTime time.Time
	// PeakRSS reports the AM process's peak resident memory in KiB, for
	// Status; nil if unknown.
	PeakRSS func() int64
	// Metrics counts the AM's events for /metrics (gpumetrics.go); nil:
	// none counted. Idle is the idle-GPU rule (zero: the defaults).
	Metrics *ammetrics.Metrics
	Idle    amstatus.IdleRule
	// State keeps what this attempt knows for the next one (AM restart):
	// the workers that finished and those it started. nil: a next attempt
	// starts from the containers the RM hands it alone.
	State amstate.Store
	// Nodes lists the cluster's NodeManagers: the AM fails as hopeless
	// once every host that can run a group's ask (distinct hosts, within
	// its node label) is blacklisted. nil: once the blacklisted hosts are
	// as many as the RM's NodeManagers.
	Nodes NodeLister
	// FinishedHistory is how many finished workers Status lists, the
	// newest (DefaultFinishedHistory); the counts cover every worker.
	FinishedHistory int
}

// Result is how the application ended.
type Result struct {
	Status      yarn.FinalStatus
	Diagnostics string
}

type worker struct {
	c        yarn.Container
	g        *group
	state    string
	exit     int
	diag     string
	started  time.Time
	finished time.Time
	devices  map[string][]resources.Properties
	launched bool // StartContainer was called (or the container was adopted)
	// unverified: adopted from an earlier attempt that recorded no start
	// of it; its NodeManager is asked whether it ever ran.
	unverified bool
	pos        int // index in roster.order
	// The rendezvous (rendezvous.go): its rank in the group, the port its
	// launcher reported, whether it was told to run, and whether the AM
	// stopped it for a gang restart.
	rank        int
	port        int
	went        bool
	gangStopped bool
	// spare: a standby spare of its group (rank -1) until promoted, when
	// it takes a lost worker's rank (promoted is when).
	spare    bool
	promoted time.Time
	// tail is the last lines of the failed worker's stderr, once fetched;
	// tailDone, when not nil, is closed when a fetch in the background
	// (off the heartbeat) has set tail.
	tail     []string
	tailDone chan struct{}
	tl       amstatus.Marks      // its start, step by step
	seqs     amstatus.ReportSeqs // the newest reports taken
	gpu      *amstatus.GPUTrack  // its GPU samples; nil: none sent
}

// live reports whether w's container is wanted and not known to have
// ended: starting, running or standing by.
func (w *worker) live() bool {
	return w.state == amstatus.StateStarting || w.state == amstatus.StateRunning || w.state == amstatus.StateStandby
}

// AM is the ApplicationMaster state machine. Run drives it; Status and
// ReportDevices may be called concurrently (tracking server).
type AM struct {
	cfg  Config
	rm   RMClient
	nm   amnm.NMClient
	logs amnm.LogFetcher
	log  logrus.FieldLogger

	mu         sync.Mutex
	state      string
	groups     []*group
	workers    roster
	starts     *amstarts.Queue[*worker]
	startCtx   context.Context // the starts' context, once handle has run
	startWG    sync.WaitGroup  // start goroutines
	releases   []string
	nmTokens   map[string]security.Token
	result     *Result
	limits     amplan.ClusterLimits
	earlyDevs  map[string]map[string][]resources.Properties
	earlySeqs  map[string]amstatus.ReportSeqs // of earlyDevs
	allRunning time.Time                      // first time every wanted worker was running
	minRunning time.Time                      // first time every group's minimum was running

	// Fault handling (faults.go).
	nodes         *amnodes.Nodes[*worker] // the cluster's nodes and the blacklist
	waitingSince  time.Time               // workers wanted and none granted since
	waitedWorkers int                     // workers.len() when waitingSince was set
	adopted       []*worker               // previous attempt's workers whose devices are still to be read
	beats         int                     // heartbeats the RM answered (the asks' marks)

	// Across attempts (state.go).
	saver        *stateSaver
	savedVersion int                     // roster version of the last snapshot saved
	prevLive     map[string]amstate.Live // workers the earlier attempt saved as running, not (yet) adopted

	idleGPUs map[string]*worker // workers with a GPU listed idle when last sampled (gpumetrics.go)
}

// New builds an AM. logs may be nil (diagnostics then carry no stderr).
func New(cfg Config, rm RMClient, nm amnm.NMClient, logs amnm.LogFetcher) (*AM, error) {
	if rm == nil || nm == nil {
		return nil, errors.New("new application master: RM and NM clients are required")
	}
	if len(cfg.Groups) == 0 {
		cfg.Groups = []amplan.Group{{Plan: cfg.Plan, Launch: cfg.Launch, Owners: cfg.Owners}}
	}
	for _, g := range cfg.Groups {
		name := ""
		if g.Name != "" {
			name = " group " + g.Name
		}
		if g.Plan.Workers < 1 {
			return nil, fmt.Errorf("new application master: %w:%s plan has %d workers", amplan.ErrBadConfig, name, g.Plan.Workers)
		}
		if len(g.Launch.Commands) == 0 {
			return nil, fmt.Errorf("new application master: %w:%s no worker command", amplan.ErrBadConfig, name)
		}
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = amplan.DefaultHeartbeat
	}
	if cfg.RequestHeartbeat <= 0 {
		cfg.RequestHeartbeat = amplan.DefaultRequestHeartbeat
	}
	if cfg.CallTimeout <= 0 {
		cfg.CallTimeout = DefaultCallTimeout
	}
	if cfg.RMMaxWait <= 0 {
		cfg.RMMaxWait = DefaultRMMaxWait
	}
	if cfg.RMRetryInterval <= 0 {
		cfg.RMRetryInterval = DefaultRMRetryInterval
	}
	if cfg.StderrLines <= 0 {
		cfg.StderrLines = DefaultStderrLines
	}
	if cfg.MaxStarts <= 0 {
		cfg.MaxStarts = DefaultMaxStarts
	}
	if cfg.MaxStartsPerNode <= 0 {
		cfg.MaxStartsPerNode = DefaultMaxStartsPerNode
	}
	if _, ok := nm.(amnm.BatchStarter); !ok {
		cfg.StartBatch = 1
	} else if cfg.StartBatch <= 0 {
		cfg.StartBatch = DefaultStartBatch
	}
	if cfg.After == nil {
		cfg.After = time.After
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	log := logutil.OrDiscard(cfg.Log)
	if cfg.PilotWait <= 0 {
		cfg.PilotWait = DefaultPilotWait
	}
	pilot := false
	for _, g := range cfg.Groups {
		pilot = pilot || len(g.Launch.LocalResources) > 0
	}
	starts := amstarts.New[*worker](cfg.MaxStarts, cfg.MaxStartsPerNode, pilot)
	a := &AM{
		cfg: cfg, rm: rm, nm: nm, logs: logs,
		log:       log.WithField("app", cfg.AppID),
		state:     "NEW",
		groups:    newGroups(cfg.Groups, cfg.Register.TrackingURL),
		workers:   newRoster(cfg.FinishedHistory),
		starts:    starts,
		nodes:     amnodes.New[*worker](),
		nmTokens:  map[string]security.Token{},
		earlyDevs: map[string]map[string][]resources.Properties{},
		earlySeqs: map[string]amstatus.ReportSeqs{},
	}
	cfg.Metrics.SetSource(cfg.AppID, a)
	return a, nil
}

// Run registers, checks the profile, runs the allocate loop until every
// worker has exited 0 (SUCCEEDED) or the failures pass the limit (FAILED),
// and unregisters. The error is for what is not an application outcome:
// the RM unreachable, an AM_SHUTDOWN order (ErrShutdown) or ctx ending.
//
// Containers are started concurrently, beside the heartbeat (at most
// MaxStarts at once, MaxStartsPerNode per NodeManager): a slow NodeManager
// delays neither the heartbeat nor the starts on other nodes. Run returns
// once every start it began has ended.
func (a *AM) Run(ctx context.Context) (Result, error) {
	sctx, stopStarts := context.WithCancel(ctx)
	defer a.startWG.Wait()
	defer stopStarts()
	a.loadState(ctx)
	if err := a.register(ctx); err != nil {
		return Result{}, err
	}
	a.learnAdopted(sctx)
	var bad []string
	for _, g := range a.groups {
		if err := amplan.CheckProfile(g.Plan.Profile, a.limits, g.Owners); err != nil {
			if g.Name != "" {
				err = fmt.Errorf("worker group %s: %w", g.Name, err)
			}
			bad = append(bad, err.Error())
		}
	}
	if len(bad) > 0 {
		d := strings.Join(bad, "\n")
		a.log.WithField("problems", d).Error("container profile rejected")
		return a.finish(ctx, Result{Status: yarn.StatusFailed, Diagnostics: d})
	}
	a.mu.Lock()
	a.state = "RUNNING"
	a.mu.Unlock()
	a.startSaver(context.WithoutCancel(ctx))
	defer a.stopSaver()
	// The node list before the first ask, which it makes node-local
	// (localityLocked).
	a.refreshNodes(ctx)

	out := rmOutage{maxWait: a.cfg.RMMaxWait}
	for {
		req := a.buildRequest()
		sent := a.cfg.Now()
		resp, err := a.allocate(ctx, req)
		unreachable := false // the RM did not answer: wait the retry interval
		switch {
		case err == nil:
			if d := out.ended(a.cfg.Now()); d > 0 {
				a.log.WithField("down_for", d.Round(time.Millisecond).String()).Info("resource manager answers again")
			}
			a.delivered(req, sent)
		case ctx.Err() != nil:
			return Result{}, fmt.Errorf("run application master: %w", ctx.Err())
		case errors.Is(err, yarn.ErrApplicationMasterNotRegistered):
			// The RM restarted (or failed over) and lost this attempt: register
			// again. Bounded like a failed heartbeat, so that an RM that keeps
			// forgetting the attempt cannot spin the loop.
			if gaveUp := out.failed(a.cfg.Now(), err); gaveUp != nil {
				return Result{}, gaveUp
			}
			a.log.WithError(err).Warn("resource manager lost this attempt; registering again")
			a.cfg.Metrics.Reregistered()
			if err := a.register(ctx); err != nil {
				unreachable = true
				a.log.WithError(err).Warn("register again failed; retrying")
			} else {
				a.learnAdopted(sctx)
			}
		case errors.Is(err, yarn.ErrPlacementUnsupported):
			k := 0
			for _, g := range a.groups {
				k = max(k, g.Plan.MaxWorkersPerNode)
			}
			r := &Result{Status: yarn.StatusFailed, Diagnostics: fmt.Sprintf(
				"%s=%d needs the ResourceManager's %s=scheduler (or placement-processor); this RM has it disabled and refused the worker ask: %v",
				conf.PlacementMaxWorkersPerNode.Key, k, yarn.PlacementConstraintsHandlerKey, err)}
			stopStarts()
			a.stopRunning(ctx, r)
			return a.finish(ctx, *r)
		default:
			if gaveUp := out.failed(a.cfg.Now(), err); gaveUp != nil {
				return Result{}, gaveUp
			}
			unreachable = true
			a.log.WithError(err).WithFields(logrus.Fields{"failed_heartbeats": out.count,
				"failing_for": out.since(a.cfg.Now()).Round(time.Millisecond).String()}).Warn("heartbeat failed; workers keep running, retrying")
		}
		if err == nil {
			if resp.Shutdown {
				return Result{}, ErrShutdown
			}
			a.handle(ctx, sctx, resp)
			a.refreshNodes(ctx)
			if r := a.outcome(); r != nil {
				stopStarts()
				a.stopRunning(ctx, r)
				return a.finish(ctx, *r)
			}
		}
		a.saveState()
		wait := a.interval()
		if unreachable {
			wait = a.cfg.RMRetryInterval
		}
		select {
		case <-ctx.Done():
			return Result{}, fmt.Errorf("run application master: %w", ctx.Err())
		case <-a.cfg.After(wait):
		}
	}
}

// rmOutage follows a run of failed heartbeats (or re-registrations): the
// AM gives up once they have lasted maxWait, as Hadoop's RM proxy does after
// yarn.resourcemanager.connect.max-wait.ms. A heartbeat that succeeds ends
// the run; re-registering alone does not (an RM that keeps forgetting the
// attempt is not answering).
type rmOutage struct {
	maxWait time.Duration
	start   time.Time // first failure of the current run; zero: none
	count   int
}

// failed records a failure at now; it returns the error to end the AM with
// once the run has lasted maxWait, else nil.
func (o *rmOutage) failed(now time.Time, err error) error {
	if o.count == 0 {
		o.start = now
	}
	o.count++
	if d := now.Sub(o.start); d >= o.maxWait {
		return fmt.Errorf("run application master: the resource manager has not answered for %s (%d heartbeats failed; %s is %s): %w",
			d.Round(time.Second), o.count, yarn.KeyRMConnectMaxWait, o.maxWait, err)
	}
	return nil
}

// ended ends a run of failures at now and returns how long it lasted (0: none).
func (o *rmOutage) ended(now time.Time) time.Duration {
	if o.count == 0 {
		return 0
	}
	d := now.Sub(o.start)
	o.count, o.start = 0, time.Time{}
	return d
}

// since is how long the current run of failures has lasted.
func (o *rmOutage) since(now time.Time) time.Duration { return now.Sub(o.start) }

func (a *AM) register(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, a.cfg.CallTimeout)
	defer cancel()
	resp, err := a.rm.Register(cctx, a.cfg.Register)
	if err != nil {
		return fmt.Errorf("register application master: %w", err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.limits = amplan.ClusterLimits{Types: resp.ResourceTypes, Max: resp.MaxCapability}
	for _, t := range resp.NMTokens {
		a.nmTokens[t.NodeID] = t.Token
	}
	for _, c := range resp.PreviousContainers {
		if a.workers.isReleased(c.ID) {
			// Given back before the RM restarted, and recovered by it from
			// its NodeManager: the release was lost with the RM's state.
			if !slices.Contains(a.releases, c.ID) {
				a.releases = append(a.releases, c.ID)
			}
			continue
		}
		a.classifiedLocked(c, true)
	}
	// After a (re-)registration the RM has forgotten asks and blacklist.
	for _, g := range a.groups {
		g.lastAsked = -1
	}
	a.nodes.Registered()
	a.log.WithFields(logrus.Fields{"queue": resp.Queue, "max": resp.MaxCapability.String()}).Info("registered")
	return nil
}

func (a *AM) allocate(ctx context.Context, req yarn.AllocateRequest) (yarn.AllocateResponse, error) {
	cctx, cancel := context.WithTimeout(ctx, a.cfg.CallTimeout)
	defer cancel()
	sent := time.Now()
	resp, err := a.rm.Allocate(cctx, req)
	a.cfg.Metrics.Allocated(time.Since(sent), err != nil)
	return resp, err
}

func (a *AM) interval() time.Duration {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, g := range a.groups {
		if g.needy() {
			return a.cfg.RequestHeartbeat
		}
	}
	return a.cfg.Heartbeat
}

// buildRequest sends the ask only when its total changed since the RM last
// got it (or after registering), the releases not yet delivered, and the
// blacklist entries the RM does not know.
func (a *AM) buildRequest() yarn.AllocateRequest {
	a.mu.Lock()
	defer a.mu.Unlock()
	var req yarn.AllocateRequest
	for _, g := range a.groups {
		if g.pending != g.lastAsked {
			ask := yarn.Ask{ID: g.id, Priority: g.priority(), Profile: g.Plan.Profile, Count: g.pending,
				NodeLabel: g.Plan.NodeLabel, MaxPerNode: g.Plan.MaxWorkersPerNode, Tag: g.tag()}
			ask.Hosts, ask.Racks = a.nodes.Locality(g.Plan.NodeLabel != "" || g.Plan.MaxWorkersPerNode > 0)
			req.Asks = append(req.Asks, ask)
		}
	}
	req.Release = append(req.Release, a.releases...)
	a.expireBlacklistLocked()
	req.BlacklistAdd, req.BlacklistRemove = a.nodes.Changes()
	t := a.totalsLocked()
	req.Progress = float32(t.succeeded) / float32(t.workers)
	return req
}

// delivered notes what the heartbeat sent at sent delivered: its asks,
// releases and blacklist changes.
func (a *AM) delivered(req yarn.AllocateRequest, sent time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.beats++
	for _, ask := range req.Asks {
		if g := a.groupByID(ask.ID); g != nil {
			g.lastAsked = ask.Count
			g.asks.Asked(ask.Count, a.beats, sent)
		}
	}
	a.releases = a.releases[len(req.Release):]
	a.nodes.Delivered(req.BlacklistAdd, req.BlacklistRemove)
}

// handle takes in one heartbeat's answer. Its bookkeeping costs O(1) per
// container; the starts it queues run on their own goroutines (sctx).
func (a *AM) handle(ctx, sctx context.Context, resp yarn.AllocateResponse) {
	a.mu.Lock()
	a.nodesLocked(resp)
	for _, t := range resp.NMTokens {
		a.nmTokens[t.NodeID] = t.Token
	}
	for _, c := range resp.Allocated {
		a.classifiedLocked(c, false)
	}
	a.startCtx = sctx
	a.launchLocked(sctx)
	a.mu.Unlock()
	for _, st := range resp.Completed {
		a.completed(ctx, st)
	}
	if len(resp.Allocated)+len(resp.Completed) > 0 {
		// One line per heartbeat, not per container: at thousands of
		// workers a line each would cost more than the bookkeeping.
		// Failures, releases and adoptions are logged one by one.
		a.mu.Lock()
		t := a.totalsLocked()
		f := logrus.Fields{"allocated": len(resp.Allocated), "completed": len(resp.Completed),
			"starting": a.workers.count[amstatus.StateStarting], "running": a.workers.count[amstatus.StateRunning],
			"succeeded": t.succeeded, "failed": t.failures, "pending": t.pending}
		a.mu.Unlock()
		a.log.WithFields(f).Info("containers")
	}
}

// classifyLocked is the one place that decides what a container is: a new
// match for a group's ask, a known worker (or a container already given
// back), a previous attempt's worker, or surplus (with the reason). The
// group is that of the ask the container answers (for a previous
// attempt's whose id matches none, the one its size fits: groupOfSize).
func (a *AM) classifyLocked(c yarn.Container, previous bool) (identity, *group, string) {
	g := a.groupByID(c.AllocationRequestID)
	switch {
	case a.workers.get(c.ID) != nil:
		return idKnown, nil, "already a worker"
	case a.workers.isReleased(c.ID):
		return idKnown, nil, "already released"
	case previous:
		if g == nil {
			g = a.groupOfSize(c.Resource)
		}
		return idPrevious, g, ""
	case a.result != nil:
		return idSurplus, nil, "application is finishing"
	case g == nil:
		return idSurplus, nil, fmt.Sprintf("allocation request id %d matches no ask", c.AllocationRequestID)
	case g.pending == 0:
		return idSurplus, g, "surplus container"
	case a.nodes.Blacklisted(c.Host()):
		return idSurplus, g, "node is blacklisted"
	}
	return idNew, g, ""
}

// classifiedLocked acts on what classifyLocked decided: a new worker is
// queued to start, a previous attempt's is adopted as running, surplus is
// released, a known container is left alone.
func (a *AM) classifiedLocked(c yarn.Container, previous bool) {
	kind, g, reason := a.classifyLocked(c, previous)
	if !previous && kind != idKnown {
		// The RM lowered its outstanding count for the ask by this grant, as Hadoop's
		// AMRMClient expects: so does what the AM believes it holds, or a replacement asked
		// for with the same total as before would never be sent.
		if ag := a.groupByID(c.AllocationRequestID); ag != nil && ag.lastAsked > 0 {
			ag.lastAsked--
		}
	}
	switch kind {
	case idKnown:
		a.log.WithFields(logrus.Fields{"container": c.ID, "node": c.NodeID, "reason": reason}).Debug("container delivered again; ignored")
	case idSurplus:
		a.releaseLocked(c.ID)
		a.log.WithFields(logrus.Fields{"container": c.ID, "node": c.NodeID, "reason": reason}).Info("releasing container")
	case idPrevious, idNew:
		w := &worker{c: c, g: g, state: amstatus.StateStarting, started: a.cfg.Now(), exit: yarn.ExitInvalid}
		if devs := a.earlyDevs[c.ID]; devs != nil {
			w.devices = devs
			delete(a.earlyDevs, c.ID)
		}
		if seqs, ok := a.earlySeqs[c.ID]; ok {
			w.seqs = seqs
			delete(a.earlySeqs, c.ID)
		}
		if g.pending > 0 {
			g.pending--
		}
		if kind == idNew {
			w.tl.Granted(w.started, &g.asks, a.beats)
		}
		a.workers.add(w)
		if l, ok := a.prevLive[c.ID]; ok && kind == idPrevious {
			a.adoptRankLocked(w, l)
		} else {
			a.assignRankLocked(w)
		}
		if kind == idNew {
			a.starts.Push(w.c.NodeID, w)
			return
		}
		w.launched = true
		// One the earlier attempt saved as started runs; of any other,
		// its NodeManager is asked first (learnAdopted).
		if _, ok := a.prevLive[c.ID]; ok {
			delete(a.prevLive, c.ID)
		} else {
			w.unverified = true
		}
		a.workers.set(w, w.upState())
		a.log.WithFields(logrus.Fields{"container": c.ID, "node": c.NodeID, "spare": w.spare}).Info("adopted a worker of an earlier attempt")
		a.adopted = append(a.adopted, w)
		a.checkAllRunningLocked()
	}
}

// releaseLocked gives a container back to the RM with the next heartbeat,
// once.
func (a *AM) releaseLocked(id string) {
	if a.workers.release(id) {
		a.releases = append(a.releases, id)
	}
}

// warmLocked lets node's held starts go (pilot mode).
func (a *AM) warmLocked(node string) {
	if a.starts.Warm(node) && a.startCtx != nil && a.result == nil {
		a.launchLocked(a.startCtx)
	}
}

// launchLocked runs queued starts while the bounds allow. Each goroutine
// goes on with the next queued start when its own ends, so there are never
// more than MaxStarts of them.
func (a *AM) launchLocked(sctx context.Context) {
	for ws := a.starts.Next(a.cfg.StartBatch); ws != nil; ws = a.starts.Next(a.cfg.StartBatch) {
		a.startWG.Add(1)
		go func() {
			defer a.startWG.Done()
			for ws != nil {
				a.start(sctx, ws)
				a.mu.Lock()
				a.starts.Done(ws[0].c.NodeID)
				ws = a.starts.Next(a.cfg.StartBatch)
				a.mu.Unlock()
			}
		}()
	}
}

// start starts the containers of ws (one node's), in one call when the
// NMClient takes several, except those whose worker ended (the RM completed
// its container) or when the application is finishing meanwhile.
func (a *AM) start(ctx context.Context, ws []*worker) {
	a.mu.Lock()
	if a.result != nil || ctx.Err() != nil {
		a.mu.Unlock()
		return
	}
	var todo []*worker
	now := a.cfg.Now()
	for _, w := range ws {
		if w.state == amstatus.StateStarting {
			w.launched = true
			w.tl.Set(amstatus.MarkStartSent, now)
			todo = append(todo, w)
		}
	}
	if len(todo) == 0 {
		a.mu.Unlock()
		return
	}
	token := a.nmTokens[todo[0].c.NodeID]
	a.mu.Unlock()

	// One call per group: each group has its own launch context.
	slices.SortStableFunc(todo, func(x, y *worker) int { return int(x.g.id - y.g.id) })
	for len(todo) > 0 {
		g := todo[0].g
		var cs []yarn.Container
		for _, w := range todo {
			if w.g != g {
				break
			}
			cs = append(cs, w.c)
		}
		cctx, cancel := context.WithTimeout(ctx, a.cfg.CallTimeout)
		var errs []error
		if b, ok := a.nm.(amnm.BatchStarter); ok {
			errs = b.StartContainers(cctx, cs, token, g.Launch)
		} else {
			errs = []error{a.nm.StartContainer(cctx, cs[0], token, g.Launch)}
		}
		cancel()
		for i, w := range todo[:len(cs)] {
			a.started(ctx, w, errs[i])
		}
		todo = todo[len(cs):]
	}
}

// started records the outcome of w's start.
func (a *AM) started(ctx context.Context, w *worker, err error) {
	a.mu.Lock()
	if w.state != amstatus.StateStarting || a.result != nil {
		// Ended meanwhile, or the application is finishing: stopRunning
		// stops it if it started.
		a.mu.Unlock()
		return
	}
	if err != nil {
		a.releaseLocked(w.c.ID)
		a.warmLocked(w.c.NodeID)
		a.mu.Unlock()
		a.log.WithFields(logrus.Fields{"container": w.c.ID, "node": w.c.NodeID}).WithError(err).Warn("starting container failed")
		// A NodeManager that refused this container counts as a failure
		// of the worker; one that did not answer is the node's fault: its
		// containers are replaced elsewhere and it is blacklisted, so it
		// receives no more while the RM still reports it RUNNING.
		cause := yarn.CauseNode
		if ce := (*yarn.ContainerError)(nil); errors.As(err, &ce) {
			cause = yarn.CauseApp
		}
		a.failed(ctx, w, yarn.ExitInvalid, cause, fmt.Sprintf("could not start container: %v", err), false)
		return
	}
	w.tl.Set(amstatus.MarkStartAnswered, a.cfg.Now())
	if a.starts.Held(w.c.NodeID) {
		// The node's others go when its launcher reports (warmLocked), at
		// the latest after PilotWait.
		node := w.c.NodeID
		time.AfterFunc(a.cfg.PilotWait, func() {
			a.mu.Lock()
			defer a.mu.Unlock()
			a.warmLocked(node)
		})
	}
	a.workers.set(w, w.upState())
	all := a.checkAllRunningLocked()
	workers := a.totalsLocked().workers
	a.mu.Unlock()
	if all {
		f := logrus.Fields{"workers": workers}
		if !a.cfg.SubmitTime.IsZero() {
			f["since_submit"] = a.allRunning.Sub(a.cfg.SubmitTime).String()
		}
		a.log.WithFields(f).Info("all workers running")
	}
}

// checkAllRunningLocked notes the first moment each group's minimum runs,
// and every wanted worker, and reports whether all run now for the first
// time.
func (a *AM) checkAllRunningLocked() bool {
	all, mins := true, true
	for _, g := range a.groups {
		running := g.count[amstatus.StateRunning]
		if running >= g.minimum() && g.minTime.IsZero() {
			g.minTime = a.cfg.Now()
		}
		all = all && running >= g.Plan.Workers
		mins = mins && !g.minTime.IsZero()
	}
	if mins && a.minRunning.IsZero() {
		a.minRunning = a.cfg.Now()
		if !all {
			a.log.Info("the minimum of workers is running; the application runs while more are asked for (scheduler-mode: reactive)")
		}
	}
	if all && a.allRunning.IsZero() {
		a.allRunning = a.cfg.Now()
		return true
	}
	return false
}

func (a *AM) completed(ctx context.Context, st yarn.Completed) {
	a.mu.Lock()
	a.workers.releaseDone(st.ID)
	w := a.workers.get(st.ID)
	if w == nil {
		w = a.endedBetweenLocked(st.ID)
	}
	if w == nil || w.state == amstatus.StateSucceeded || w.state == amstatus.StateFailed {
		a.mu.Unlock()
		return
	}
	// A pilot that ended before its launcher reported leaves no reason to
	// hold its node's other starts.
	a.warmLocked(w.c.NodeID)
	if w.spare && st.ExitStatus == yarn.ExitSuccess {
		// Its launcher ended without running the command: nothing failed,
		// and nothing succeeded either.
		a.workers.set(w, amstatus.StateFailed)
		w.exit, w.diag, w.finished = st.ExitStatus, "standby spare ended before it was needed: "+st.Diagnostics, a.cfg.Now()
		a.replaceLocked(w)
		a.mu.Unlock()
		return
	}
	if st.ExitStatus == yarn.ExitSuccess {
		a.workers.set(w, amstatus.StateSucceeded)
		w.exit, w.diag, w.finished = yarn.ExitSuccess, st.Diagnostics, a.cfg.Now()
		w.g.succeeded++
		a.mu.Unlock()
		return
	}
	if w.gangStopped {
		a.gangStoppedEndedLocked(w, st)
		a.mu.Unlock()
		return
	}
	a.mu.Unlock()
	a.failed(ctx, w, st.ExitStatus, yarn.ExitCauseOf(st.ExitStatus), st.Diagnostics, true)
}

// endedBetweenLocked is the worker of container id when the earlier
// attempt saved it as running and it ended before this attempt registered
// (the RM reports it completed to this attempt instead): it is taken in as
// running, so that its completion counts. nil for any other container.
func (a *AM) endedBetweenLocked(id string) *worker {
	l, ok := a.prevLive[id]
	if !ok {
		return nil
	}
	delete(a.prevLive, id)
	var g *group
	for _, x := range a.groups {
		if x.Name == l.Group {
			g = x
		}
	}
	if g == nil {
		return nil
	}
	w := &worker{c: yarn.Container{ID: id, NodeID: l.Node, NodeHTTP: l.HTTP}, g: g, state: amstatus.StateRunning,
		started: a.cfg.Now(), exit: yarn.ExitInvalid, launched: true}
	if g.pending > 0 {
		g.pending--
	}
	a.workers.add(w)
	return w
}

// failed records a failed worker and decides: replace it, blacklist its
// node, or fail the application.
func (a *AM) failed(ctx context.Context, w *worker, exit int, cause yarn.ExitCause, diag string, ran bool) {
	log := a.log.WithFields(logrus.Fields{"container": w.c.ID, "node": w.c.NodeID, "exit": exit})
	g := w.g
	if cause == yarn.CauseApp && slices.Contains(a.cfg.DeviceExits, exit) {
		cause = yarn.CauseCluster // a failed GPU is not the application's fault
	}
	badNode := slices.Contains(a.cfg.BadNodeExits, exit)
	a.mu.Lock()
	// The stderr of a group's first failure is quoted if the application
	// fails later, a node's failure when every node is blacklisted. A
	// failure that ends the application waits for its own stderr and for
	// those still being fetched that its diagnostic quotes; any other
	// fetches in the background, so a dead NodeManager does not hold up
	// the heartbeat.
	fetch := (g.firstFail == nil && cause == yarn.CauseApp || badNode) && ran && a.logs != nil
	ending := a.endsApplicationLocked(w, exit, cause, badNode)
	var waits []chan struct{}
	if ending {
		waits = a.pendingTailsLocked(g)
	}
	a.mu.Unlock()
	var tail []string
	if fetch && ending {
		tail = a.fetchTail(ctx, w, log)
	}
	for _, ch := range waits {
		<-ch
	}

	a.mu.Lock()
	defer a.mu.Unlock()
	if w.state == amstatus.StateSucceeded || w.state == amstatus.StateFailed {
		return // the RM's completion and a failed start both report it
	}
	a.workers.set(w, amstatus.StateFailed)
	w.exit, w.diag, w.finished, w.tail = exit, diag, a.cfg.Now(), tail
	a.cfg.Metrics.Failed(ammetrics.ClassOf(cause))
	if fetch && !ending {
		done := make(chan struct{})
		w.tailDone = done
		go func() {
			t := a.fetchTail(ctx, w, log)
			a.mu.Lock()
			w.tail = t
			a.mu.Unlock()
			close(done)
		}()
	}
	if cause != yarn.CauseApp {
		// Not the worker's fault (yarn.ExitCauseOf, or a NodeManager that
		// did not answer): replaced without counting; a node whose disks
		// failed or that cannot start containers is not asked again.
		log.WithField("status", exitText(exit)).Warn("the cluster ended the worker; replacing it")
		if cause == yarn.CauseNode {
			a.blacklistLocked(w)
		}
		a.replaceLocked(w)
		g.restarts++
		a.gangLostLocked(ctx, w)
		return
	}
	g.failures++
	if g.firstFail == nil {
		g.firstFail = w
	}
	if badNode {
		log.Warn("container-launcher failed on this node; blacklisting it")
		a.blacklistLocked(w)
	}
	if slices.Contains(a.cfg.BadJobExits, exit) {
		log.Error("container-launcher reports an error of the job; failing the application")
		a.result = &Result{Status: yarn.StatusFailed, Diagnostics: a.diagnostic(w,
			"container-launcher reports an error of the job (configuration or worker command), which no replacement can fix")}
		return
	}
	if g.failures > g.Plan.MaxFailedContainers {
		log.Error("too many failed workers; failing the application")
		a.result = &Result{Status: yarn.StatusFailed, Diagnostics: a.diagnostic(g.firstFail,
			fmt.Sprintf("%d worker containers%s failed, more than %s=%d", g.failures, g.label(), conf.YarnMaxFailedContainers.Key, g.Plan.MaxFailedContainers))}
		return
	}
	log.WithField("failures", g.failures).Warn("worker failed; replacing it")
	a.replaceLocked(w)
	g.restarts++
	a.gangLostLocked(ctx, w)
}

// endsApplicationLocked says whether w's failure with exit ends the
// application: an error of the job, one failure more than its group
// tolerates, or the blacklisting of the last node.
func (a *AM) endsApplicationLocked(w *worker, exit int, cause yarn.ExitCause, badNode bool) bool {
	if cause != yarn.CauseApp {
		return false
	}
	if slices.Contains(a.cfg.BadJobExits, exit) || w.g.failures+1 > w.g.Plan.MaxFailedContainers {
		return true
	}
	return badNode && a.lastHostLocked(w.g, w.c.Host())
}

// pendingTailsLocked lists the background stderr fetches a diagnostic of
// g's failure or of the blacklist may quote.
func (a *AM) pendingTailsLocked(g *group) []chan struct{} {
	var out []chan struct{}
	if f := g.firstFail; f != nil && f.tailDone != nil {
		out = append(out, f.tailDone)
	}
	for _, w := range a.nodes.Causes() {
		if w.tailDone != nil && w != g.firstFail {
			out = append(out, w.tailDone)
		}
	}
	return out
}

// fetchTail reads the last lines of w's stderr, bounded by
// logFetchTimeout: a dead NodeManager holds its caller up only this long.
func (a *AM) fetchTail(ctx context.Context, w *worker, log logrus.FieldLogger) []string {
	cctx, cancel := context.WithTimeout(ctx, min(a.cfg.CallTimeout, logFetchTimeout))
	defer cancel()
	tail, err := a.logs.Tail(cctx, w.c, "stderr", a.cfg.StderrLines)
	if err != nil {
		log.WithError(err).Warn("could not fetch the container's stderr")
	}
	return tail
}

// logFetchTimeout bounds the fetch of a failed container's stderr.
const logFetchTimeout = 5 * time.Second

// maxDiagnostics bounds the YARN diagnostics quoted in a failure.
const maxDiagnostics = 1000

// diagnostic names the failing container, its host, exit code and the last
// stderr lines.
func (a *AM) diagnostic(w *worker, why string) string {
	tail := w.tail
	var b strings.Builder
	fmt.Fprintf(&b, "%s; first failure: container %s%s on %s exited with %s", why, w.c.ID, w.g.label(), w.c.Host(), exitText(w.exit))
	// YARN's own diagnostics explain its exit statuses (memory limits,
	// preemption, lost node); for a process's exit code they only repeat
	// the stderr tail, so they are quoted only when no tail was fetched.
	if d := strings.TrimSpace(w.diag); d != "" && (w.exit < 0 || len(tail) == 0) {
		if len(d) > maxDiagnostics {
			d = d[:maxDiagnostics] + "…"
		}
		fmt.Fprintf(&b, " (%s)", d)
	}
	if len(tail) > 0 {
		fmt.Fprintf(&b, "; last %d stderr lines:\n%s", len(tail), strings.Join(tail, "\n"))
	}
	return b.String()
}

func exitText(code int) string {
	names := map[int]string{
		yarn.ExitInvalid: "no exit status", yarn.ExitAborted: "ABORTED", yarn.ExitDisksFailed: "DISKS_FAILED",
		yarn.ExitPreempted: "PREEMPTED", yarn.ExitKilledExceedVMem: "KILLED_EXCEEDED_VMEM",
		yarn.ExitKilledExceedPMem: "KILLED_EXCEEDED_PMEM", yarn.ExitKilledByAM: "KILLED_BY_APPMASTER",
		yarn.ExitKilledByRM: "KILLED_BY_RESOURCEMANAGER", yarn.ExitKilledAfterFinish: "KILLED_AFTER_APP_COMPLETION",
		yarn.ExitKilledByScheduler: "KILLED_BY_CONTAINER_SCHEDULER", yarn.ExitKilledExcessLogs: "KILLED_FOR_EXCESS_LOGS",
	}
	if n, ok := names[code]; ok {
		return fmt.Sprintf("exit status %d (%s)", code, n)
	}
	return fmt.Sprintf("exit code %d", code)
}

func (a *AM) outcome() *Result {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.result == nil {
		a.result = a.hopelessLocked()
	}
	if a.result == nil {
		a.result = a.gangTimeoutLocked()
	}
	if a.result != nil {
		return a.result
	}
	all := true
	for _, g := range a.groups {
		if g.done() {
			g.pending = 0 // a reactive group asks no more
		} else {
			all = false
		}
	}
	if all {
		t := a.totalsLocked()
		a.result = &Result{Status: yarn.StatusSucceeded,
			Diagnostics: fmt.Sprintf("%d workers succeeded (%d replaced)", t.succeeded, t.restarts)}
	}
	return a.result
}

// stopRunning waits for the starts in flight (Run has cancelled them) and
// stops the containers still running: every one when the application
// fails, the standby spares when it succeeds; concurrently, within the
// same bounds as the starts.
func (a *AM) stopRunning(ctx context.Context, r *Result) {
	a.startWG.Wait()
	a.mu.Lock()
	var running []*worker
	if r.Status == yarn.StatusSucceeded {
		for _, g := range a.groups {
			for _, s := range g.liveSpares() {
				if s.launched {
					running = append(running, s)
				}
			}
		}
	} else {
		a.workers.each(func(w *worker) bool {
			if w.launched && w.live() {
				running = append(running, w)
			}
			return true
		})
	}
	a.mu.Unlock()
	work := make(chan *worker)
	var wg sync.WaitGroup
	for range min(a.cfg.MaxStarts, len(running)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for w := range work {
				a.mu.Lock()
				token := a.nmTokens[w.c.NodeID]
				a.mu.Unlock()
				cctx, cancel := context.WithTimeout(ctx, a.cfg.CallTimeout)
				if err := a.nm.StopContainer(cctx, w.c, token); err != nil {
					a.log.WithError(err).WithField("container", w.c.ID).Warn("stopping container failed")
				}
				cancel()
			}
		}()
	}
	for _, w := range running {
		work <- w
	}
	close(work)
	wg.Wait()
}

func (a *AM) finish(ctx context.Context, r Result) (Result, error) {
	a.mu.Lock()
	a.state = string(r.Status)
	a.result = &r
	a.mu.Unlock()
	cctx, cancel := context.WithTimeout(ctx, a.cfg.CallTimeout)
	defer cancel()
	req := yarn.FinishRequest{Status: r.Status, Diagnostics: r.Diagnostics, TrackingURL: a.cfg.Register.TrackingURL}
	err := a.rm.Finish(cctx, req)
	if errors.Is(err, yarn.ErrApplicationMasterNotRegistered) {
		if rerr := a.register(ctx); rerr == nil {
			err = a.rm.Finish(cctx, req)
		}
	}
	a.log.WithFields(logrus.Fields{"status": r.Status}).Info("application finished")
	if err != nil {
		return r, fmt.Errorf("unregister application master: %w", err)
	}
	return r, nil
}
