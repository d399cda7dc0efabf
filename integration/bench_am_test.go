//go:build integration

package integration

// BenchmarkAMvsDistributedShell puts `am submit` and Hadoop's own
// DistributedShell side by side on the real cluster, in one run: the time
// from the submitting command to all N workers running, and the AM's peak
// resident memory, then a table with ratios.
//
//	make bench-am
//	go test -tags integration -run '^$' -bench AMvsDistributedShell -benchtime 1x ./integration/
//
// Both sides ask the same containers: N workers (XRES_BENCH_WORKERS, default
// 4) of 256 MB, 1 vcore and yarn.io/gpu: 1, each running `sleep 300`, and an
// AM container of 256 MB and 1 vcore (the RM's allocation at the moment all
// run is logged for both). XRES_BENCH_WORKERS may list sizes ("4,16,64", as
// make bench-am-curve runs it on larger NodeManagers): each size is measured
// in turn and a scaling curve closes the table, with each side's slope (the
// seconds an added worker costs).
//
// A third application runs beside them, the floor: am submit with
// xres.bench.null-worker, the same AM, asks and starts, but each worker
// container is the worker command alone (no container-launcher, no file to
// localize): what the cluster itself needs to start N containers. Each
// size's table shows both sides' time above the floor and their ratio
// (XRES_BENCH_IMPLS picks a subset for a quick before/after). All three
// are measured the same way:
//
//   - time: from the start of the submitting command (am submit --detach;
//     DistributedShell's Client, JVM start included) until all N worker
//     commands run: N containers of the application have a `sleep` process
//     on this host (CONTAINER_ID in its environment; polled every 50 ms).
//     The RM's runningContainers count, which this benchmark waited for
//     until 2026-12-05, counts containers once allocated, before any is
//     localized or started, so it measured allocation alone; it is still
//     shown ("alloc"). The same up to the RM's own submission time is shown
//     beside it, without the client;
//   - memory: VmHWM (peak resident set) in /proc/<pid>/status of the AM
//     container's main process on this host (the NodeManagers run containers
//     as local processes; the process is found by CONTAINER_ID in its
//     environment), read 1 s after all were running.
//
// One application at a time; each is killed and the cluster idle before the
// next. Rounds alternate the order (XRES_BENCH_ROUNDS, default 3, after one
// unmeasured warm-up round; XRES_BENCH_WARMUP_ROUNDS); the table shows
// medians. XRES_BENCH_OUT also writes the table to a file.
//
// DistributedShell is Hadoop's org.apache.hadoop.yarn.applications.distributedshell.Client
// from the Maven artifact hadoop-yarn-applications-distributedshell 3.4.2
// (the registry serves no 3.4.1 one; integration/dsbench, built with Maven
// on first use, offline first from ~/.m2), run as
//
//	-jar <its jar> -num_containers N -container_resources memory-mb=256,vcores=1,yarn.io/gpu=1
//	-master_memory 256 -master_vcores 1 -shell_command 'sleep 300'
//
// by io.xres.dsbench.Main, which only gives it the cluster's configuration
// and, as yarn.application.classpath, its own class path (the NodeManagers
// run on this host with no Hadoop installation). XRES_DSHELL_JAR names
// another DistributedShell jar (e.g. an installation's
// share/hadoop/yarn/hadoop-yarn-applications-distributedshell-*.jar); it
// goes first on the class path and is the AM jar.
//
// DistributedShell starts its AM as "$JAVA_HOME/bin/java": JAVA_HOME comes
// from the NodeManager's environment (yarn.nodemanager.env-whitelist), so
// with no JAVA_HOME there the AM runs /bin/java. The benchmark checks this
// before the first round where it can see the minicluster's process, and
// logs which java each DistributedShell AM ran.

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/conf"
	"github.com/xres/xres/integration/harness"
)

// benchAMRun is one measured application.
type benchAMRun struct {
	impl      string
	app       string
	total     time.Duration // command start → N worker commands running
	fromRM    time.Duration // RM's submission time → N worker commands running
	allocated time.Duration // command start → the RM has allocated N+1 containers
	alloc     string        // the RM's allocation to the application then
	am        amProcInfo    // the AM container's main process
	load      float64       // the 1-minute load average when all ran
	phases    string        // xres: am status's start phases once all ran
}

// amProcInfo is the AM container's main process as /proc shows it.
type amProcInfo struct {
	name     string // comm[pid]
	exe      string // /proc/<pid>/exe
	hwm, rss int64  // VmHWM, VmRSS in KiB
}

// dshellMain is the class integration/dsbench runs (DistributedShell's Client behind it).
const dshellMain = "io.xres.dsbench.Main"

// dsbenchCmd builds integration/dsbench (mavenBuild) when its jar is missing, older than its
// sources or its class path names a jar that is gone (offline first, from
// ~/.m2), and returns the java command prefix and the DistributedShell jar.
func dsbenchCmd(b testing.TB) (cmd []string, dsJar string) {
	dir, entries := mavenBuild(b, "dsbench", "xres-dsbench-0.1.0.jar")
	jar := filepath.Join(dir, "target", "xres-dsbench-0.1.0.jar")
	for _, e := range entries {
		if strings.Contains(filepath.Base(e), "hadoop-yarn-applications-distributedshell") {
			dsJar = e
		}
	}
	classpath := jar + ":" + strings.Join(entries, ":")
	if ds := os.Getenv("XRES_DSHELL_JAR"); ds != "" {
		if _, err := os.Stat(ds); err != nil {
			b.Fatalf("XRES_DSHELL_JAR: %v", err)
		}
		classpath, dsJar = ds+":"+classpath, ds
	}
	if dsJar == "" {
		b.Fatalf("dsbench: no hadoop-yarn-applications-distributedshell jar on the class path in %s", filepath.Join(dir, "target", "classpath.txt"))
	}
	return []string{javaBin(), "-cp", classpath, dshellMain}, dsJar
}

// dshellAMJava says which java DistributedShell's AM will run: its command is
// "$JAVA_HOME/bin/java" with the NodeManagers' JAVA_HOME, which the
// minicluster's process (XRES_MINICLUSTER_PID of cluster.env) holds or not.
// It returns "" when that process is not known or not on this host, and an
// error when that java cannot run.
func dshellAMJava(c *harness.Cluster) (string, error) {
	pid := c.Env["XRES_MINICLUSTER_PID"]
	if pid == "" {
		return "", nil
	}
	env, err := os.ReadFile("/proc/" + pid + "/environ")
	if err != nil {
		return "", nil
	}
	home := ""
	for _, kv := range bytes.Split(env, []byte{0}) {
		if v, ok := bytes.CutPrefix(kv, []byte("JAVA_HOME=")); ok {
			home = string(v)
		}
	}
	java := home + "/bin/java"
	if _, err := exec.LookPath(java); err != nil {
		return "", fmt.Errorf("DistributedShell's AM runs \"$JAVA_HOME/bin/java\" and the NodeManagers (minicluster pid %s) have JAVA_HOME=%q, so %s: %w; "+
			"start the minicluster with JAVA_HOME set to a JDK 17 (JAVA_HOME=/usr/lib/jvm/<jdk17> docker/hadoop-minicluster/run.sh start)", pid, home, java, err)
	}
	if home == "" {
		return java + " (the NodeManagers have no JAVA_HOME)", nil
	}
	return java, nil
}

// amProcess finds the main process of container id on this host (the one
// with the highest VmHWM among the processes whose environment holds
// CONTAINER_ID=id: the launch script's shells are small).
func amProcess(id string) (amProcInfo, error) {
	want := []byte("CONTAINER_ID=" + id + "\x00")
	var best amProcInfo
	err := eachProcess(func(pid int, env []byte) {
		if !bytes.Contains(env, want) {
			return
		}
		st, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil {
			return
		}
		if h := statusKiB(st, "VmHWM:"); h > best.hwm {
			comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
			exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
			best = amProcInfo{name: fmt.Sprintf("%s[%d]", strings.TrimSpace(string(comm)), pid), exe: exe, hwm: h, rss: statusKiB(st, "VmRSS:")}
		}
	})
	if err != nil {
		return amProcInfo{}, fmt.Errorf("find process of %s: %w", id, err)
	}
	if best.name == "" {
		return amProcInfo{}, fmt.Errorf("find process of %s: no process on this host has CONTAINER_ID=%s", id, id)
	}
	return best, nil
}

// eachProcess calls f with the pid and environment of every process on
// this host it may read.
func eachProcess(f func(pid int, env []byte)) error {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return err
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid)); err == nil {
			f(pid, env)
		}
	}
	return nil
}

// appProcesses counts the processes on this host that belong to a
// container of app (CONTAINER_ID in their environment, any attempt or
// epoch).
func appProcesses(app string) int {
	re := regexp.MustCompile(`(^|\x00)CONTAINER_ID=container_(e[0-9]+_)?` + regexp.QuoteMeta(strings.TrimPrefix(app, "application_")) + `_`)
	n := 0
	_ = eachProcess(func(_ int, env []byte) {
		if re.Match(env) {
			n++
		}
	})
	return n
}

// waitProcessesGone waits until no process of app's containers runs on
// this host: the RM counts a container as ended before its launcher has
// released its devices (and written the coordination file in the test's
// folder), and the test removes that folder when it ends.
func waitProcessesGone(ctx context.Context, b *testing.B, app string) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		n := appProcesses(app)
		if n == 0 {
			return
		}
		select {
		case <-ctx.Done():
			b.Fatalf("%s: %d processes of its containers still run on this host 1m after it ended", app, n)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// statusKiB reads a "Key:   123 kB" line of /proc/<pid>/status.
func statusKiB(status []byte, key string) int64 {
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, key); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				n, _ := strconv.ParseInt(f[0], 10, 64)
				return n
			}
		}
	}
	return 0
}

// waitRunning polls the RM every 100 ms until app has want running
// containers and returns when it saw them.
func waitRunning(ctx context.Context, b *testing.B, c *harness.Cluster, app string, want int) (time.Time, rmApp) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	for {
		a, err := getRMApp(ctx, c, app)
		now := time.Now()
		if err == nil && a.RunningContainers >= want {
			return now, a
		}
		if err == nil && isTerminal(a.State) {
			b.Fatalf("%s ended %s before %d containers ran: %s", app, a.State, want, a.Diagnostics)
		}
		select {
		case <-ctx.Done():
			b.Fatalf("%s: not %d running containers in time (last: %+v, err %v)", app, want, a, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// rmAllocation reads what the RM has allocated to app, as
// "<memory:1280, vCores:5, yarn.io/gpu: 4>".
func rmAllocation(ctx context.Context, c *harness.Cluster, app string) string {
	var r struct {
		App struct {
			AllocatedMB     int64 `json:"allocatedMB"`
			AllocatedVCores int64 `json:"allocatedVCores"`
			ResourceInfo    struct {
				Usages []struct {
					Used struct {
						Infos struct {
							Info []struct {
								Name  string `json:"name"`
								Value int64  `json:"value"`
							} `json:"resourceInformation"`
						} `json:"resourceInformations"`
					} `json:"used"`
				} `json:"resourceUsagesByPartition"`
			} `json:"resourceInfo"`
		} `json:"app"`
	}
	if err := restGet(ctx, c, "/ws/v1/cluster/apps/"+app, &r); err != nil {
		return "unknown (" + err.Error() + ")"
	}
	gpu := "?"
	for _, u := range r.App.ResourceInfo.Usages {
		for _, i := range u.Used.Infos.Info {
			if i.Name == "yarn.io/gpu" {
				gpu = strconv.FormatInt(i.Value, 10)
			}
		}
	}
	return fmt.Sprintf("<memory:%d, vCores:%d, yarn.io/gpu: %s>", r.App.AllocatedMB, r.App.AllocatedVCores, gpu)
}

// waitIdle waits until app has ended and the cluster holds no container.
func waitIdle(ctx context.Context, b *testing.B, c *harness.Cluster, app string) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for {
		a, err := getRMApp(ctx, c, app)
		var m struct {
			ClusterMetrics struct {
				ContainersAllocated int `json:"containersAllocated"`
			} `json:"clusterMetrics"`
		}
		merr := restGet(ctx, c, "/ws/v1/cluster/metrics", &m)
		if err == nil && merr == nil && isTerminal(a.State) && m.ClusterMetrics.ContainersAllocated == 0 {
			return
		}
		select {
		case <-ctx.Done():
			b.Logf("cluster not idle after %s ended (state %s, allocated %d); going on", app, a.State, m.ClusterMetrics.ContainersAllocated)
			return
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// workerProcesses counts the containers of app that run the worker
// command on this host: a process named sleep (the benchmark's worker,
// `sleep 300`) with the app's CONTAINER_ID in its environment. The
// NodeManagers run containers as local processes, so this is the same for
// xres (the launcher's child, once devices are reserved), the floor (the
// launch script's) and DistributedShell (its shell command's).
func workerProcesses(app string) int {
	re := regexp.MustCompile(`(?:^|\x00)CONTAINER_ID=(container_(?:e[0-9]+_)?` + regexp.QuoteMeta(strings.TrimPrefix(app, "application_")) + `_[0-9_]+)`)
	ids := map[string]bool{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		comm, err := os.ReadFile("/proc/" + e.Name() + "/comm")
		if err != nil || strings.TrimSpace(string(comm)) != "sleep" {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil {
			continue
		}
		if m := re.FindSubmatch(env); m != nil {
			ids[string(m[1])] = true
		}
	}
	return len(ids)
}

// measure records when the RM had allocated every container (the AM's
// and the workers': its runningContainers counts live containers, allocated
// or started), when all N worker commands ran (workerProcesses, polled
// every 50 ms), the allocation then, and the AM process's memory 1 s later.
func measure(ctx context.Context, b *testing.B, c *harness.Cluster, r *benchAMRun, t0 time.Time, workers int) {
	tAlloc, a := waitRunning(ctx, b, c, r.app, workers+1)
	r.allocated = tAlloc.Sub(t0)
	wctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	for workerProcesses(r.app) < workers {
		select {
		case <-wctx.Done():
			b.Fatalf("%s %s: %d of %d worker commands running after 3m", r.impl, r.app, workerProcesses(r.app), workers)
		case <-time.After(50 * time.Millisecond):
		}
	}
	tAll := time.Now()
	r.total, r.fromRM = tAll.Sub(t0), tAll.Sub(time.UnixMilli(a.StartedTime))
	r.alloc = rmAllocation(ctx, c, r.app)
	r.load = loadAvg(b)
	time.Sleep(time.Second)
	p, err := amProcess(attemptContainerID(r.app, 1))
	if err != nil {
		b.Fatalf("%s: %v", r.impl, err)
	}
	r.am = p
}

// benchXres runs am submit with N workers; floor: with
// xres.bench.null-worker, each worker container the worker command alone
// (no container-launcher, no localized files), the cluster's own cost.
func benchXres(ctx context.Context, b *testing.B, c *harness.Cluster, workers int, floor bool) benchAMRun {
	dir := b.TempDir()
	impl, extra := "xres", []string(nil)
	if floor {
		impl, extra = "floor", []string{conf.BenchNullWorker.Key + ": true"}
	}
	cfg := writeAMConf(b, dir, max(workers, 4), extra...)
	t0 := time.Now()
	p := startAM(b, ctx, "submit", "--conf", cfg, "--workers", strconv.Itoa(workers), "--detach",
		"--name", "xres-bench-"+impl, "--", "sleep", "300")
	app := p.appID(b)
	r := benchAMRun{impl: impl, app: app}
	defer func() {
		code, out, errOut := runAM(b, 2*time.Minute, "kill", app)
		if code != 0 {
			b.Errorf("am kill %s: exit %d\n%s\n%s", app, code, out, tailString(errOut, 20))
		}
		waitIdle(ctx, b, c, app)
		waitProcessesGone(ctx, b, app)
	}()
	measure(ctx, b, c, &r, t0, workers)
	if code := p.wait(b); code != 0 {
		b.Fatalf("am submit --detach: exit %d\n%s", code, p.output())
	}
	if !floor {
		r.phases = startPhases(b, app, workers)
	}
	return r
}

// phasesAllRE is the last phase row of am status: how many workers have a
// whole timeline (their launcher's report included).
var phasesAllRE = regexp.MustCompile(`(?m)^  asked → command started \(all\) +([0-9]+) `)

// startPhases is the "start phases:" table am status prints for app (the
// distribution of each step of the workers' starts, from the AM's
// timeline), once every worker's launcher has reported (the RM counts a
// container running when its launch script started, before that), or a
// line saying why there is none.
func startPhases(b *testing.B, app string, workers int) string {
	deadline := time.Now().Add(20 * time.Second)
	for {
		code, out, errOut := runAM(b, time.Minute, "status", app)
		if code != 0 {
			return fmt.Sprintf("(am status %s: exit %d: %s)\n", app, code, tailString(errOut, 3))
		}
		_, table, ok := strings.Cut(out, "start phases:\n")
		if !ok {
			return "(am status printed no start phases)\n"
		}
		m := phasesAllRE.FindStringSubmatch(table)
		if m != nil && m[1] == strconv.Itoa(workers) || time.Now().After(deadline) {
			return table
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// dshellSubmittedRE is YarnClientImpl's log line once submitApplication returned.
var dshellSubmittedRE = regexp.MustCompile(`Submitted application (application_[0-9]+_[0-9]+)`)

func benchDShell(ctx context.Context, b *testing.B, c *harness.Cluster, java []string, workers int) benchAMRun {
	args := append([]string{}, java[1:]...)
	args = append(args, c.ConfDir, "-appname", "xres-bench-dshell", "-num_containers", strconv.Itoa(workers),
		"-container_resources", "memory-mb=256,vcores=1,yarn.io/gpu=1",
		"-master_memory", "256", "-master_vcores", "1", "-shell_command", "sleep 300", "-timeout", "600000")
	jctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(jctx, java[0], args...)
	cmd.Env = append(os.Environ(), "HADOOP_USER_NAME="+c.User)
	cmd.WaitDelay = 5 * time.Second
	stdout, stderr := &lockedBuffer{}, &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatalf("start %s: %v", java[0], err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var app string
	deadline := time.After(2 * time.Minute)
	for app == "" {
		if m := dshellSubmittedRE.FindStringSubmatch(stderr.String() + "\n" + stdout.String()); m != nil {
			app = m[1]
			break
		}
		select {
		case err := <-done:
			b.Fatalf("DistributedShell client ended (%v) without an application id\nstdout:\n%s\nstderr:\n%s", err, stdout, tailString(stderr.String(), 30))
		case <-deadline:
			b.Fatalf("DistributedShell client printed no application id in 2m\nstderr:\n%s", tailString(stderr.String(), 30))
		case <-time.After(50 * time.Millisecond):
		}
	}
	r := benchAMRun{impl: "dshell", app: app}
	defer func() {
		c.KillApp(b, app)
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		waitIdle(ctx, b, c, app)
		// DistributedShell leaves its staging folder behind on a kill.
		_ = c.HDFS(b).RemoveAll(filepath.Join("/user", c.User, "DistributedShell", app))
	}()
	measure(ctx, b, c, &r, t0, workers)
	return r
}

// medianOf returns the median of f over runs.
func medianOf(runs []benchAMRun, f func(benchAMRun) float64) float64 {
	v := make([]float64, len(runs))
	for i, r := range runs {
		v[i] = f(r)
	}
	sort.Float64s(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

func BenchmarkAMvsDistributedShell(b *testing.B) {
	c := harness.Get(b)
	sizes := benchCallers(b, "XRES_BENCH_WORKERS", "4")
	rounds := int(benchEnv(b, "XRES_BENCH_ROUNDS", 3))
	warmups := 1
	if v := os.Getenv("XRES_BENCH_WARMUP_ROUNDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			b.Fatalf("XRES_BENCH_WARMUP_ROUNDS=%q: want a count", v)
		}
		warmups = n
	}
	ctx, cancel := context.WithTimeout(context.Background(), 75*time.Minute)
	defer cancel()
	var info struct {
		ClusterInfo struct {
			HadoopVersion string `json:"hadoopVersion"`
		} `json:"clusterInfo"`
	}
	if err := restGet(ctx, c, "/ws/v1/cluster/info", &info); err != nil {
		b.Fatalf("cluster info: %v", err)
	}
	checkBenchCapacity(ctx, b, c, slices.Max(sizes))
	amBins(b)
	java, dsJar := dsbenchCmd(b)
	amJava, err := dshellAMJava(c)
	if err != nil {
		b.Fatal(err)
	}
	if amJava != "" {
		b.Logf("DistributedShell %s; its AM will run %s", dsJar, amJava)
	} else {
		b.Logf("DistributedShell %s; the NodeManagers' JAVA_HOME is not known here (its AM runs \"$JAVA_HOME/bin/java\")", dsJar)
	}

	// The warm-up rounds run before the first size only; then each size
	// rotates the order round by round. floor is xres with
	// xres.bench.null-worker: the same AM and asks, each worker container
	// its command alone.
	impls := []string{"xres", "dshell", "floor"}
	if v := os.Getenv("XRES_BENCH_IMPLS"); v != "" {
		// A subset, for a quick before/after of one side (the ratios
		// then need both xres and dshell, the floor lines floor too).
		impls = strings.Split(v, ",")
		for _, impl := range impls {
			if !slices.Contains([]string{"xres", "dshell", "floor"}, impl) {
				b.Fatalf("XRES_BENCH_IMPLS=%q: want a comma-separated subset of xres,dshell,floor", v)
			}
		}
	}
	runs := map[int]map[string][]benchAMRun{}
	for i, workers := range sizes {
		runs[workers] = map[string][]benchAMRun{}
		w := 0
		if i == 0 {
			w = warmups
		}
		for round := -w; round < rounds; round++ {
			// Each round starts with the next of the three.
			order := impls
			k := (round + w) % len(impls)
			order = append(slices.Clone(order[k:]), order[:k]...)
			for _, impl := range order {
				var r benchAMRun
				switch impl {
				case "dshell":
					r = benchDShell(ctx, b, c, java, workers)
				default:
					r = benchXres(ctx, b, c, workers, impl == "floor")
				}
				tag := "measured"
				if round < 0 {
					tag = "warm-up"
				} else {
					runs[workers][impl] = append(runs[workers][impl], r)
				}
				b.Logf("%s N=%d %-6s %s: all worker commands running %.2fs after the command (%.2fs after the RM's submission; every container allocated after %.2fs), allocated %s; AM %s (%s) VmHWM %d KiB VmRSS %d KiB; load %.2f",
					tag, workers, r.impl, r.app, r.total.Seconds(), r.fromRM.Seconds(), r.allocated.Seconds(), r.alloc, r.am.name, r.am.exe, r.am.hwm, r.am.rss, r.load)
				if r.phases != "" {
					b.Logf("%s N=%d xres %s start phases (am status):\n%s", tag, workers, r.app, r.phases)
				}
			}
		}
	}

	total := func(r benchAMRun) float64 { return r.total.Seconds() }
	fromRM := func(r benchAMRun) float64 { return r.fromRM.Seconds() }
	allocated := func(r benchAMRun) float64 { return r.allocated.Seconds() }
	hwm := func(r benchAMRun) float64 { return float64(r.am.hwm) / 1024 }
	label := map[string]string{"xres": "xres (am submit)", "dshell": "Hadoop DistributedShell " + dshellVersion(dsJar),
		"floor": "floor (xres AM, null worker)"}
	var t strings.Builder
	for _, workers := range sizes {
		for _, impl := range impls {
			rs := runs[workers][impl]
			name := "impl=" + impl
			if len(sizes) > 1 {
				name = fmt.Sprintf("workers=%d/%s", workers, name)
			}
			b.Run(name, func(b *testing.B) {
				b.ReportMetric(medianOf(rs, total), "s-to-running")
				b.ReportMetric(medianOf(rs, fromRM), "s-rm-to-running")
				b.ReportMetric(medianOf(rs, allocated), "s-to-allocated")
				b.ReportMetric(medianOf(rs, hwm), "MiB-AM-peak-RSS")
				b.ReportMetric(medianOf(rs, total)*1e9, "ns/op")
			})
		}
		fmt.Fprintf(&t, "\nsubmit → all %d worker commands running (a `sleep` process with the container's CONTAINER_ID on this host, the same test for all three) and the AM's peak RSS (VmHWM); alloc: submit → the RM has allocated all %d containers\n", workers, workers+1)
		fmt.Fprintf(&t, "Hadoop %s minicluster, workers of <memory:256, vCores:1, yarn.io/gpu: 1>, AM container 256 MB; %d rounds (after %d warm-up), alternating, medians\n",
			info.ClusterInfo.HadoopVersion, rounds, warmups)
		fmt.Fprintf(&t, "%-36s %14s %14s %10s %14s   %s\n", "impl", "command→run s", "RM→run s", "alloc s", "AM VmHWM MiB", "over rounds: command→run s/VmHWM MiB@load")
		for _, impl := range impls {
			rs := runs[workers][impl]
			var each []string
			for _, r := range rs {
				each = append(each, fmt.Sprintf("%.2f/%.0f@%.1f", r.total.Seconds(), float64(r.am.hwm)/1024, r.load))
			}
			fmt.Fprintf(&t, "%-36s %14.2f %14.2f %10.2f %14.1f   %s\n", label[impl], medianOf(rs, total), medianOf(rs, fromRM), medianOf(rs, allocated), medianOf(rs, hwm), strings.Join(each, " "))
		}
		x, d, f := runs[workers]["xres"], runs[workers]["dshell"], runs[workers]["floor"]
		if len(x) > 0 && len(d) > 0 {
			fmt.Fprintf(&t, "%-36s %13.2fx %13.2fx %9.2fx %13.3fx   (aim: time < 0.5x, memory < 0.15x)\n", "ratio xres/DistributedShell",
				medianOf(x, total)/medianOf(d, total), medianOf(x, fromRM)/medianOf(d, fromRM), medianOf(x, allocated)/medianOf(d, allocated), medianOf(x, hwm)/medianOf(d, hwm))
		}
		if len(x) > 0 && len(d) > 0 && len(f) > 0 {
			t.WriteString(aboveFloor(medianOf(x, total), medianOf(d, total), medianOf(f, total)))
		}
		if len(x) > 0 && x[len(x)-1].phases != "" {
			last := x[len(x)-1]
			fmt.Fprintf(&t, "xres start phases at N=%d (am status, last round, %s):\n%s", workers, last.app, last.phases)
		}
	}
	if len(sizes) > 1 && len(impls) == 3 {
		t.WriteString(scalingCurve(sizes, runs, total))
	}
	fmt.Print(t.String())
	if path := os.Getenv("XRES_BENCH_OUT"); path != "" {
		if err := os.WriteFile(path, []byte(t.String()), 0o644); err != nil {
			b.Fatal(err)
		}
	}
}

// aboveFloor is the line comparing what xres and DistributedShell add
// above the floor (command→running medians, s): each one's time less the
// floor's, their ratio, and what the aim asks where the floor makes 0.5x
// of DistributedShell's whole time impossible.
func aboveFloor(x, d, f float64) string {
	ratio := "n/a (DistributedShell at or below the floor)"
	if d-f > 0 {
		ratio = fmt.Sprintf("%.2fx", (x-f)/(d-f))
	}
	if x <= f {
		ratio += ", xres at or below the floor: within its noise"
	}
	note := "aim: xres <= 0.5x DistributedShell, or above the floor <= 0.25x"
	if f >= 0.5*d {
		note = fmt.Sprintf("the floor alone is %.2fx DistributedShell, so 0.5x cannot be met; aim: above the floor <= 0.25x", f/d)
	}
	return fmt.Sprintf("%-36s xres %.2f s, DistributedShell %.2f s above the floor's %.2f s: ratio %s (%s)\n",
		"above the floor", x-f, d-f, f, ratio, note)
}

// scalingCurve is the command→running median per size for both, their
// ratio, and each one's slope: the seconds each added worker costs between
// the smallest and the largest size.
func scalingCurve(sizes []int, runs map[int]map[string][]benchAMRun, f func(benchAMRun) float64) string {
	var t strings.Builder
	fmt.Fprintf(&t, "\nscaling curve: submit → all N workers running, medians (s); above the floor: each less the floor\n%8s %12s %12s %10s %12s %14s %14s %10s\n",
		"N", "xres", "dshell", "ratio", "floor", "xres-floor", "dshell-floor", "ratio")
	for _, n := range sizes {
		x, d, fl := medianOf(runs[n]["xres"], f), medianOf(runs[n]["dshell"], f), medianOf(runs[n]["floor"], f)
		above := "n/a"
		if d-fl > 0 {
			above = fmt.Sprintf("%.2fx", (x-fl)/(d-fl))
		}
		fmt.Fprintf(&t, "%8d %12.2f %12.2f %9.2fx %12.2f %14.2f %14.2f %10s\n", n, x, d, x/d, fl, x-fl, d-fl, above)
	}
	lo, hi := slices.Min(sizes), slices.Max(sizes)
	slope := func(impl string) float64 {
		return (medianOf(runs[hi][impl], f) - medianOf(runs[lo][impl], f)) / float64(hi-lo)
	}
	fmt.Fprintf(&t, "slope %d→%d (s per added worker): xres %.3f, dshell %.3f, ratio %.2fx (aim: flatter than the peer's)\n",
		lo, hi, slope("xres"), slope("dshell"), slope("xres")/slope("dshell"))
	return t.String()
}

// checkBenchCapacity fails early, naming the settings, when the cluster
// cannot run workers+1 containers of both applications' size at once (the
// minicluster's default NodeManagers hold 4 such workers).
func checkBenchCapacity(ctx context.Context, b *testing.B, c *harness.Cluster, workers int) {
	var m struct {
		ClusterMetrics struct {
			TotalMB           int64 `json:"totalMB"`
			TotalVirtualCores int64 `json:"totalVirtualCores"`
			TotalNodes        int   `json:"totalNodes"`
		} `json:"clusterMetrics"`
	}
	if err := restGet(ctx, c, "/ws/v1/cluster/metrics", &m); err != nil {
		b.Fatalf("cluster metrics: %v", err)
	}
	needMB, needVCores := int64(256*(workers+1)), int64(workers+1)
	if cm := m.ClusterMetrics; cm.TotalMB < needMB || cm.TotalVirtualCores < needVCores {
		b.Fatalf("XRES_BENCH_WORKERS=%d needs %d MB and %d vcores (and %d yarn.io/gpu) in the cluster; it has %d MB and %d vcores on %d nodes: "+
			"start the minicluster with larger NodeManagers (XRES_MINICLUSTER_NM_MEMORY_MB, XRES_MINICLUSTER_NM_VCORES, XRES_MINICLUSTER_GPUS; make bench-am-curve sets them)",
			workers, needMB, needVCores, workers, cm.TotalMB, cm.TotalVirtualCores, cm.TotalNodes)
	}
}

// dshellVersionRE finds the version in hadoop-yarn-applications-distributedshell-3.4.2.jar.
var dshellVersionRE = regexp.MustCompile(`distributedshell-([0-9][^/]*)\.jar$`)

// dshellVersion is the version in the DistributedShell jar's name, or its name.
func dshellVersion(jar string) string {
	if m := dshellVersionRE.FindStringSubmatch(jar); m != nil {
		return m[1]
	}
	return filepath.Base(jar)
}

// TestDShellAMJava checks the preflight that names the java DistributedShell's
// AM will run, against a stand-in for the minicluster's process.
func TestDShellAMJava(t *testing.T) {
	jdk := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(jdk, "bin"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(jdk, "bin", "java"), []byte("#!/bin/sh\n"), 0o755))
	tests := []struct {
		name    string
		env     []string // the stand-in's environment; nil: no process
		want    string
		wantErr []string
	}{
		{name: "no minicluster process", env: nil, want: ""},
		{name: "JAVA_HOME is a JDK", env: []string{"JAVA_HOME=" + jdk}, want: filepath.Join(jdk, "bin", "java")},
		{name: "JAVA_HOME without java", env: []string{"JAVA_HOME=/nonexistent-jdk"},
			wantErr: []string{`JAVA_HOME="/nonexistent-jdk"`, "/nonexistent-jdk/bin/java", "run.sh start"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := &harness.Cluster{Env: map[string]string{}}
			if tc.env != nil {
				p := exec.Command("sleep", "60")
				p.Env = tc.env
				require.NoError(t, p.Start())
				t.Cleanup(func() { _ = p.Process.Kill(); _ = p.Wait() })
				// /proc/<pid>/environ can read empty for a moment after exec.
				require.Eventually(t, func() bool {
					env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", p.Process.Pid))
					return err == nil && len(env) > 0
				}, 5*time.Second, 10*time.Millisecond)
				c.Env["XRES_MINICLUSTER_PID"] = strconv.Itoa(p.Process.Pid)
			}
			got, err := dshellAMJava(c)
			if tc.wantErr != nil {
				require.Error(t, err)
				for _, w := range tc.wantErr {
					require.Contains(t, err.Error(), w)
				}
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}
