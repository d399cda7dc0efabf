//go:build integration && soak

package integration

// The randomized soak (make soak; issue 23): one long application, 6 workers with 1 GPU each
// over 4 NodeManagers on distinct hosts, in the HA profile, under a random schedule of the
// faults production has, each as long as production's: the RM down 5-120 s, an RM failover, a
// NodeManager killed and started again, the AM container killed (the next attempt adopts the
// workers), a launcher or a worker killed -9, an AM<->RM partition of 5-60 s through the fault
// proxy, a slow NodeManager (its container manager answering 1-3 s late for 20-60 s). Checked all the time: no GPU held by two live workers (all NodeManagers run on this
// one machine and share its coordination file, so its GPUs are one host's), every wanted
// worker running again within soakRecovery after each fault heals, no container started twice;
// at the end the application SUCCEEDS and its staging is removed. A table goes to the log and
// to $SOAK_REPORT (default integration/.logs/soak-report.md): fault, times injected (a fault
// that found nothing to act on, such as an AM kill while no AM container lives, is counted apart,
// never as injected and survived), survived, invariant violations; then the worker starts and
// the AM's traffic through the fault proxies (asserted: a partition that cut nothing of the
// AM's would prove nothing). The schedule is drawn from the seed up front (integration/soakplan).
//
//	SOAK_S      how long faults are injected, seconds (default 300)
//	SOAK_SEED   the schedule's seed (default: the clock; printed, so a failed run can be replayed)

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/integration/harness"
	"github.com/xres/xres/integration/soakplan"
)

const (
	soakWorkers = 6
	// soakRecovery bounds how long after a fault heals every wanted worker runs again: a
	// lost node's workers are replaced once the RM marks it LOST (10 s) and schedules again.
	soakRecovery = 4 * time.Minute
)

// soakWorker is the soak's worker: it records its start (dir/started.<container>) and its GPU
// and pid (dir/claims/<container>), then every second, until the release file appears, looks
// for another live worker claiming the same GPU and appends what it finds to dir/violations.
// Live means running, not a zombie: a worker whose launcher was killed -9 dies with it (the
// launcher's parent-death signal) and may stay a zombie until init reaps it; it holds nothing.
// A claim names its worker by pid and start time (field 22 of /proc/PID/stat): on a busy host
// pids wrap within minutes (pid_max 32768), and a dead worker's pid taken by another process
// is not a worker holding its GPU (a CI soak saw that false violation once).
func soakWorker(dir, release string) []string {
	return []string{"sh", "-c", `mkdir -p ` + dir + `/claims; echo start >> ` + dir + `/started.$CONTAINER_ID; ` +
		`me=` + dir + `/claims/$CONTAINER_ID; set -- $(sed 's/.*) //' /proc/$$/stat); ` +
		`echo "$CUDA_VISIBLE_DEVICES $$ $PPID ${20}" > $me; ` +
		`while [ ! -e ` + release + ` ]; do ` +
		`for f in ` + dir + `/claims/*; do [ "$f" = "$me" ] && continue; read g p pp s0 < "$f" || continue; ` +
		`set -- $(sed 's/.*) //' /proc/$p/stat 2>/dev/null) Z; ` +
		`if [ "$g" = "$CUDA_VISIBLE_DEVICES" ] && [ "$1" != Z ] && [ "${20}" = "$s0" ]; then ` +
		`echo "$(date +%s) $CONTAINER_ID holds GPU $g, also held by ${f##*/} (pid $p)" >> ` + dir + `/violations; fi; done; ` +
		`sleep 1; done`}
}

// claim is one worker's line in dir/claims.
type claim struct {
	container   string
	gpu         string
	pid, parent int
	start       string // the worker's start time, in clock ticks since boot
}

// live tells whether the claim's worker is running: its pid is a live process (see live)
// that started when the worker did.
func (c claim) live() bool {
	start, ok := procStart(c.pid)
	return ok && start == c.start
}

// live tells whether pid is a live process, not a zombie (see soakWorker).
func live(pid int) bool {
	_, ok := procStart(pid)
	return ok
}

// procStart is pid's start time (field 22 of /proc/PID/stat), and false when pid is no live
// process (gone, a zombie or dying).
func procStart(pid int) (string, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", false
	}
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return "", false
	}
	fs := strings.Fields(string(b[i+1:])) // from field 3, the state
	if len(fs) < 20 || fs[0] == "Z" || fs[0] == "X" {
		return "", false
	}
	return fs[19], true
}

func readClaims(dir string) []claim {
	files, _ := filepath.Glob(filepath.Join(dir, "claims", "*"))
	var out []claim
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		fs := strings.Fields(string(b))
		if len(fs) != 4 {
			continue
		}
		pid, _ := strconv.Atoi(fs[1])
		parent, _ := strconv.Atoi(fs[2])
		out = append(out, claim{container: filepath.Base(f), gpu: fs[0], pid: pid, parent: parent, start: fs[3]})
	}
	return out
}

// soakFault is one kind of fault: inject causes it, with the schedule's choices, and heals
// it again, returning a line for the log and whether it happened (an AM kill finds no live
// AM container while the RM starts the next attempt; such a fault was drawn, not injected).
type soakFault func(t *testing.T, s *soak, f soakplan.Fault) (string, bool)

// soak is the state of one run.
type soak struct {
	c        *harness.Cluster
	ctx      context.Context
	app      string
	dir      string
	proxies  []*harness.Proxy // one per RM's scheduler address
	slowNM   *harness.Proxy   // in front of NodeManager 3's container manager
	mu       sync.Mutex
	problems []string // invariant violations seen by the monitor, with the fault running then
	current  string   // the fault being injected, or "" between faults
}

// soakFaults inject each fault of the schedule (integration/soakplan draws them).
var soakFaults = map[soakplan.Kind]soakFault{
	soakplan.RMDown: func(t *testing.T, s *soak, f soakplan.Fault) (string, bool) {
		return strings.TrimSpace(harness.MustVerb(t, s.c.RMRestartDown(f.Down))), true
	},
	soakplan.RMFailover: func(t *testing.T, s *soak, _ soakplan.Fault) (string, bool) {
		return strings.TrimSpace(harness.MustVerb(t, s.c.RMFailover)), true
	},
	soakplan.NMKill: func(t *testing.T, s *soak, f soakplan.Fault) (string, bool) {
		out := harness.MustVerb(t, func(ctx context.Context) (string, error) { return s.c.NMKill(ctx, f.NM) })
		time.Sleep(f.Down)
		back := harness.MustVerb(t, func(ctx context.Context) (string, error) { return s.c.NMStart(ctx, f.NM) })
		return strings.TrimSpace(out) + "; " + strings.TrimSpace(back), true
	},
	soakplan.AMKill: func(t *testing.T, s *soak, _ soakplan.Fault) (string, bool) {
		return killCurrentAM(t, s.c, s.dir, s.app)
	},
	soakplan.WorkerKill: func(t *testing.T, s *soak, f soakplan.Fault) (string, bool) {
		var alive []claim
		for _, cl := range readClaims(s.dir) {
			if cl.live() {
				alive = append(alive, cl)
			}
		}
		if len(alive) == 0 {
			return "no live worker to kill", false
		}
		v := alive[f.Victim%len(alive)]
		pid, what := v.pid, "worker"
		if f.Launcher && v.parent > 1 {
			pid, what = v.parent, "launcher"
		}
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			return fmt.Sprintf("could not kill -9 the %s (pid %d) of %s: %v", what, pid, v.container, err), false
		}
		return fmt.Sprintf("killed -9 the %s (pid %d) of %s (GPU %s)", what, pid, v.container, v.gpu), true
	},
	soakplan.SlowNM: func(t *testing.T, s *soak, f soakplan.Fault) (string, bool) {
		s.slowNM.Delay(f.Lag)
		time.Sleep(f.Down)
		s.slowNM.Pass()
		return fmt.Sprintf("NodeManager 3 answered %s late for %s", f.Lag, f.Down), true
	},
	soakplan.Partition: func(t *testing.T, s *soak, f soakplan.Fault) (string, bool) {
		before := s.proxyStats()
		for _, p := range s.proxies {
			p.Blackhole()
		}
		cut := s.proxyStats()
		time.Sleep(f.Down)
		during := s.proxyStats()
		for _, p := range s.proxies {
			p.Pass()
		}
		// The AM's connections to the RMs run through the proxies (the partition cuts
		// something): the AM had sent through them, and nothing reached an RM meanwhile.
		if before.ToTarget == 0 || during.ToTarget != cut.ToTarget {
			return fmt.Sprintf("the partition cut nothing of the AM's: proxies before %s, during %s", before, during), false
		}
		return fmt.Sprintf("partitioned the AM from the RMs for %s", f.Down), true
	},
}

// proxyStats sums the stats of the proxies in front of the RMs' scheduler ports.
func (s *soak) proxyStats() harness.Stats {
	var sum harness.Stats
	for _, p := range s.proxies {
		st := p.Stats()
		sum.Accepted += st.Accepted
		sum.ToTarget += st.ToTarget
		sum.ToClient += st.ToClient
		sum.Open += st.Open
	}
	return sum
}

// killCurrentAM kills the AM container of app's newest attempt (its process group), as a
// dying AM process would end; the RM starts the next attempt. AM containers are those numbered
// 1 that hold no worker claim (after a failover a worker may be numbered 1 in a new epoch).
func killCurrentAM(t *testing.T, c *harness.Cluster, dir, app string) (string, bool) {
	t.Helper()
	workers := map[string]bool{}
	for _, cl := range readClaims(dir) {
		workers[cl.container] = true
	}
	best, bestPid := "", 0
	for i := 0; c.NodeID(i) != ""; i++ {
		for _, d := range strings.Split(c.Env[fmt.Sprintf("XRES_NM%d_LOCAL_DIRS", i)], ",") {
			m, _ := filepath.Glob(filepath.Join(d, "nmPrivate", app, "*_000001", "*_000001.pid"))
			for _, f := range m {
				b, err := os.ReadFile(f)
				pid, perr := strconv.Atoi(strings.TrimSpace(string(b)))
				if err != nil || perr != nil || !live(pid) {
					continue
				}
				// container_[e<epoch>_]<ts>_<app>_<attempt>_000001: the newest attempt sorts last.
				id := strings.TrimSuffix(filepath.Base(f), ".pid")
				if !workers[id] && attemptOf(id) > attemptOf(best) {
					best, bestPid = id, pid
				}
			}
		}
	}
	if bestPid == 0 {
		return "no live AM container to kill", false
	}
	if err := syscall.Kill(-bestPid, syscall.SIGKILL); err != nil {
		return fmt.Sprintf("could not kill the AM container %s (process group %d): %v", best, bestPid, err), false
	}
	return fmt.Sprintf("killed the AM container %s (process group %d)", best, bestPid), true
}

// attemptOf is the attempt number in a container id (0 if none).
func attemptOf(id string) int {
	f := strings.Split(id, "_")
	if len(f) < 3 {
		return 0
	}
	n, _ := strconv.Atoi(f[len(f)-2])
	return n
}

// running is the number of worker containers the RM lists RUNNING whose worker runs (a live
// claim), and whether two of those claim the same GPU.
func (s *soak) running() (int, string, error) {
	ctx, cancel := context.WithTimeout(s.ctx, 20*time.Second)
	defer cancel()
	cs, err := rmContainers(ctx, s.c, s.app)
	if err != nil {
		return 0, "", err
	}
	rm := map[string]bool{}
	for _, x := range cs {
		// Only workers write claims, so the AM's container never counts (its number is no
		// sign: an RM that failed over numbers a new epoch from 1, workers included).
		if x.ContainerState == "RUNNING" {
			rm[x.ContainerID] = true
		}
	}
	n, byGPU, dup := 0, map[string]string{}, ""
	for _, cl := range readClaims(s.dir) {
		if !cl.live() {
			continue
		}
		if other, ok := byGPU[cl.gpu]; ok {
			dup = fmt.Sprintf("GPU %s held by live workers %s and %s", cl.gpu, other, cl.container)
		}
		byGPU[cl.gpu] = cl.container
		if rm[cl.container] {
			n++
		}
	}
	return n, dup, nil
}

// monitor checks the invariants every second until ctx ends.
// It only logs (t.Logf is safe from another goroutine); the test fails on s.problems at the end.
func (s *soak) monitor(ctx context.Context, t *testing.T) {
	seen := map[string]bool{}
	for ctx.Err() == nil {
		var found []string
		if _, dup, err := s.running(); err == nil && dup != "" {
			found = append(found, dup)
		}
		if b, err := os.ReadFile(filepath.Join(s.dir, "violations")); err == nil {
			for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
				found = append(found, "a worker saw: "+l)
			}
		}
		starts, _ := countStarts(s.dir)
		for id, k := range starts {
			if k > 1 {
				found = append(found, fmt.Sprintf("container %s started %d times", id, k))
			}
		}
		s.mu.Lock()
		for _, f := range found {
			if !seen[f] {
				seen[f] = true
				s.problems = append(s.problems, fmt.Sprintf("[%s] %s", s.current, f))
				t.Logf("soak: VIOLATION during %q: %s", s.current, f)
			}
		}
		s.mu.Unlock()
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

func (s *soak) violationsDuring(fault string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, p := range s.problems {
		if strings.HasPrefix(p, "["+fault+"]") {
			n++
		}
	}
	return n
}

func TestSoak(t *testing.T) {
	secs := envInt(t, "SOAK_S", 300)
	seed := envInt(t, "SOAK_SEED", time.Now().UnixNano())
	fmt.Printf("soak: SOAK_S=%d SOAK_SEED=%d (replay: SOAK_SEED=%d make soak)\n", secs, seed, seed)
	t.Logf("soak: SOAK_S=%d SOAK_SEED=%d", secs, seed)
	sched := soakplan.New(seed)

	// make soak starts the suite's cluster as the soak needs it (see the Makefile).
	c := harness.Get(t)
	require.True(t, c.Env["XRES_RM_HA"] == "true" && c.Env["XRES_NODEMANAGERS"] == "4" && c.Env["XRES_NM3_BIND"] != c.NodeID(3),
		"the soak needs the HA profile with 4 NodeManagers, NodeManager 3 proxied (XRES_RM_HA=%s, XRES_NODEMANAGERS=%s): run it with make soak, which starts that cluster",
		c.Env["XRES_RM_HA"], c.Env["XRES_NODEMANAGERS"])
	s := &soak{c: c, dir: t.TempDir(), slowNM: c.NMProxy(t, 3)}
	var extra []string
	for _, id := range []string{"rm1", "rm2"} {
		target := c.Conf("yarn.resourcemanager.scheduler.address." + id)
		require.NotEmpty(t, target, "scheduler address of %s", id)
		p := harness.StartProxy(t, "127.0.0.1:0", target)
		s.proxies = append(s.proxies, p)
		extra = append(extra, fmt.Sprintf("flink.yarn.resourcemanager.scheduler.address.%s: %s", id, p.Addr()))
	}
	extra = append(extra, "yarn.application-attempts: 50", "yarn.maximum-failed-containers: 1000")
	cfg := writeAMConf(t, s.dir, 8, extra...)
	release := filepath.Join(s.dir, "release")

	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(secs)*time.Second+30*time.Minute)
	defer cancel()
	s.ctx = ctx
	p := startAMOn(t, c, ctx, append([]string{"submit", "--conf", cfg, "--workers", fmt.Sprint(soakWorkers), "--name", "xres-soak", "--"},
		soakWorker(s.dir, release)...)...)
	s.app = p.appID(t)
	c.KeepAppLogs(t, s.app)
	killOnCleanup(t, c, s.app, release)

	waitAll := func(d time.Duration) (time.Duration, bool) {
		t0 := time.Now()
		for time.Since(t0) < d {
			if n, _, err := s.running(); err == nil && n == soakWorkers {
				return time.Since(t0), true
			}
			time.Sleep(time.Second)
		}
		return time.Since(t0), false
	}
	took, ok := waitAll(3 * time.Minute)
	require.True(t, ok, "%d workers running at the start", soakWorkers)
	t.Logf("soak: %d workers running %s after submission", soakWorkers, took.Round(time.Second))
	// The AM talks to the RMs only through the proxies (else a partition cuts nothing).
	require.Positive(t, s.proxyStats().ToTarget, "the AM's heartbeats go through the fault proxies: %s", s.proxyStats())

	mctx, stopMonitor := context.WithCancel(ctx)
	var mwg sync.WaitGroup
	mwg.Add(1)
	go func() { defer mwg.Done(); s.monitor(mctx, t) }()

	type row struct {
		injected, survived, skipped int
		worst                       time.Duration
	}
	rows := map[string]*row{}
	for _, k := range soakplan.Kinds() {
		rows[k.String()] = &row{}
	}
	var failures []string
	end := time.Now().Add(time.Duration(secs) * time.Second)
	for i := 1; time.Now().Before(end); i++ {
		f := sched.Next()
		name := f.Kind.String()
		s.mu.Lock()
		s.current = name
		s.mu.Unlock()
		t0 := time.Now()
		what, happened := soakFaults[f.Kind](t, s, f)
		healed := time.Now()
		rec, ok := waitAll(soakRecovery)
		r := rows[name]
		switch {
		case !happened:
			// Drawn, but nothing was done: not counted as injected (nor survived).
			r.skipped++
		case ok:
			r.injected++
			r.survived++
			r.worst = max(r.worst, rec)
		default:
			r.injected++
		}
		if !ok {
			n, _, err := s.running()
			failures = append(failures, fmt.Sprintf("fault %d (%s: %s): %d of %d workers running %s after it healed (err %v)",
				i, name, what, n, soakWorkers, soakRecovery, err))
		}
		t.Logf("soak: fault %d at +%s: %s: %s (injected: %v); %d workers again %s after it healed (%s), ok=%v",
			i, t0.Sub(end.Add(-time.Duration(secs)*time.Second)).Round(time.Second), name, strings.TrimSpace(what), happened,
			soakWorkers, rec.Round(time.Second), healed.Sub(t0).Round(time.Second), ok)
		s.mu.Lock()
		s.current = ""
		s.mu.Unlock()
		if !ok {
			break
		}
		time.Sleep(f.Pause)
	}
	stopMonitor()
	mwg.Wait()

	// The AM of the last attempt heartbeats through the proxies too (every attempt reads the
	// job's configuration, which points it at them).
	last := s.proxyStats()
	eventually(t, 2*time.Minute, "the AM's heartbeats through the fault proxies after the last fault", func() (bool, string) {
		st := s.proxyStats()
		return st.ToTarget > last.ToTarget && st.ToClient > last.ToClient, st.String()
	})

	// The soak ends the application: every worker exits 0, so it SUCCEEDS.
	releaseAndSucceed(t, p, s.app, release)
	requireNoStaging(t, c, s.app)

	names := make([]string, 0, len(rows))
	for n := range rows {
		names = append(names, n)
	}
	sort.Strings(names)
	var rep strings.Builder
	fmt.Fprintf(&rep, "soak: SOAK_S=%d SOAK_SEED=%d, %d workers x 1 GPU over 4 NodeManagers, HA; application %s SUCCEEDED\n\n", secs, seed, soakWorkers, s.app)
	fmt.Fprintf(&rep, "| fault | injected | survived | drawn, nothing to do | invariant violations | slowest recovery |\n| --- | --- | --- | --- | --- | --- |\n")
	for _, n := range names {
		r := rows[n]
		fmt.Fprintf(&rep, "| %s | %d | %d | %d | %d | %s |\n", n, r.injected, r.survived, r.skipped, s.violationsDuring(n), r.worst.Round(time.Second))
	}
	fmt.Fprintf(&rep, "\nbetween faults: %d violations\n", s.violationsDuring(""))
	starts, err := countStarts(s.dir)
	require.NoError(t, err)
	total := 0
	for _, k := range starts {
		total += k
	}
	fmt.Fprintf(&rep, "worker starts: %d in %d containers (%d wanted at a time); AM traffic through the fault proxies: %s\n",
		total, len(starts), soakWorkers, s.proxyStats())
	fmt.Print("\n" + rep.String())
	report := os.Getenv("SOAK_REPORT")
	if report == "" {
		report = filepath.Join(c.LogDir, "soak-report.md")
	}
	if err := os.MkdirAll(filepath.Dir(report), 0o755); err == nil {
		_ = os.WriteFile(report, []byte(rep.String()), 0o644)
	}
	require.Empty(t, failures, "faults after which the workers did not all run again")
	require.Empty(t, s.problems, "invariant violations")
}
