//go:build integration

package integration

// BenchmarkAMvsDistributedShell puts `am submit` and a Java ApplicationMaster
// of DistributedShell's making side by side on the real cluster, in one run:
// the time from submission to all N workers running, and the AM's peak
// resident memory, then a table with ratios.
//
//	make bench-am
//	go test -tags integration -run '^$' -bench AMvsDistributedShell -benchtime 1x ./integration/
//
// Both sides ask the same containers: N workers (XRES_BENCH_WORKERS, default
// 4) of 256 MB, 1 vcore and yarn.io/gpu: 1, each running `sleep 300`, and an
// AM container of 256 MB. Both are measured the same way:
//
//   - time: from the start of the submitting command (am submit --detach; the
//     Java client, JVM start included) until the RM reports N+1 running
//     containers for the application (polled every 100 ms); the same up to
//     the RM's own submission time is shown beside it, without the client;
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
// The Java side is integration/dsbench (Maven, built offline from ~/.m2 on
// first use): a client and AM built the way Hadoop's DistributedShell is
// (YarnClient; AMRMClientAsync with DistributedShell's 1 s heartbeat and
// NMClientAsync; the AM jar localized from HDFS), because the
// hadoop-yarn-applications-distributedshell artifact is not served by the
// registry this project's machines reach. With XRES_DSHELL_JAR naming that
// jar (e.g. $HADOOP_HOME/share/hadoop/yarn/hadoop-yarn-applications-distributedshell-*.jar
// of the cluster's version), Hadoop's own DistributedShell client is run
// instead, with -num_containers N -container_resources
// memory-mb=256,vcores=1,yarn.io/gpu=1 -master_memory 256.

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/xres/xres/integration/harness"
)

// benchAMRun is one measured application.
type benchAMRun struct {
	impl     string
	app      string
	total    time.Duration // command start → N+1 running containers
	fromRM   time.Duration // RM's submission time → N+1 running containers
	hwmKiB   int64         // AM process VmHWM
	rssKiB   int64         // AM process VmRSS at the same moment
	procName string
}

// dsbenchCmd builds integration/dsbench when its jar is missing or older than
// its sources (offline first, from ~/.m2) and returns the java command prefix.
func dsbenchCmd(b *testing.B, hadoopVersion string) []string {
	dir, err := filepath.Abs("dsbench")
	if err != nil {
		b.Fatal(err)
	}
	jar := filepath.Join(dir, "target", "xres-dsbench-0.1.0.jar")
	cpFile := filepath.Join(dir, "target", "classpath.txt")
	versionFile := filepath.Join(dir, "target", "hadoop.version")
	stale := func() bool {
		out, err := os.Stat(jar)
		if err != nil {
			return true
		}
		if _, err := os.Stat(cpFile); err != nil {
			return true
		}
		if v, err := os.ReadFile(versionFile); err != nil || strings.TrimSpace(string(v)) != hadoopVersion {
			return true
		}
		stale := false
		_ = filepath.WalkDir(filepath.Join(dir, "src"), func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				if in, err := d.Info(); err == nil && in.ModTime().After(out.ModTime()) {
					stale = true
				}
			}
			return nil
		})
		if in, err := os.Stat(filepath.Join(dir, "pom.xml")); err != nil || in.ModTime().After(out.ModTime()) {
			stale = true
		}
		return stale
	}
	if stale() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
		defer cancel()
		args := []string{"-B", "-q", "-f", filepath.Join(dir, "pom.xml"), "-Dhadoop.version=" + hadoopVersion,
			"package", "dependency:build-classpath", "-Dmdep.outputFile=" + cpFile}
		// Offline first: the minicluster's build has fetched Hadoop already.
		if out, err := exec.CommandContext(ctx, "mvn", append([]string{"-o"}, args...)...).CombinedOutput(); err != nil {
			b.Logf("dsbench: offline build failed, trying online: %v\n%s", err, tailLines(out, 20))
			if out, err := exec.CommandContext(ctx, "mvn", args...).CombinedOutput(); err != nil {
				b.Fatalf("dsbench: mvn %s: %v\n%s", strings.Join(args, " "), err, tailLines(out, 40))
			}
		}
		if err := os.WriteFile(versionFile, []byte(hadoopVersion+"\n"), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	cp, err := os.ReadFile(cpFile)
	if err != nil {
		b.Fatalf("dsbench: %v", err)
	}
	classpath := jar + ":" + strings.TrimSpace(string(cp))
	if ds := os.Getenv("XRES_DSHELL_JAR"); ds != "" {
		classpath += ":" + ds
	}
	java := "java"
	if h := os.Getenv("JAVA_HOME"); h != "" {
		java = filepath.Join(h, "bin", "java")
	}
	return []string{java, "-cp", classpath, "io.xres.dsbench.Client"}
}

// amProcessMemory finds the main process of container id on this host (the
// one with the highest VmHWM among the processes whose environment holds
// CONTAINER_ID=id: the launch script's shells are small) and returns its
// VmHWM and VmRSS in KiB.
func amProcessMemory(id string) (name string, hwm, rss int64, err error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return "", 0, 0, fmt.Errorf("find process of %s: %w", id, err)
	}
	want := []byte("CONTAINER_ID=" + id + "\x00")
	found := false
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		if err != nil || !bytes.Contains(env, want) {
			continue
		}
		st, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil {
			continue
		}
		h, r := statusKiB(st, "VmHWM:"), statusKiB(st, "VmRSS:")
		if h > hwm {
			comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
			name, hwm, rss, found = fmt.Sprintf("%s[%d]", strings.TrimSpace(string(comm)), pid), h, r, true
		}
	}
	if !found {
		return "", 0, 0, fmt.Errorf("find process of %s: no process on this host has CONTAINER_ID=%s", id, id)
	}
	return name, hwm, rss, nil
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

// measureAM reads the AM process's memory 1 s after all were running.
func measureAM(b *testing.B, r *benchAMRun) {
	time.Sleep(time.Second)
	name, hwm, rss, err := amProcessMemory(attemptContainerID(r.app, 1))
	if err != nil {
		b.Fatalf("%s: %v", r.impl, err)
	}
	r.procName, r.hwmKiB, r.rssKiB = name, hwm, rss
}

func benchXres(ctx context.Context, b *testing.B, c *harness.Cluster, workers int) benchAMRun {
	dir := b.TempDir()
	cfg := writeAMConf(b, dir, max(workers, 4))
	t0 := time.Now()
	p := startAM(b, ctx, "submit", "--conf", cfg, "--workers", strconv.Itoa(workers), "--detach",
		"--name", "xres-bench-am", "--", "sleep", "300")
	app := p.appID(b)
	r := benchAMRun{impl: "xres", app: app}
	defer func() {
		code, out, errOut := runAM(b, 2*time.Minute, "kill", app)
		if code != 0 {
			b.Errorf("am kill %s: exit %d\n%s\n%s", app, code, out, tailString(errOut, 20))
		}
		waitIdle(ctx, b, c, app)
	}()
	tAll, a := waitRunning(ctx, b, c, app, workers+1)
	r.total, r.fromRM = tAll.Sub(t0), tAll.Sub(time.UnixMilli(a.StartedTime))
	if code := p.wait(b); code != 0 {
		b.Fatalf("am submit --detach: exit %d\n%s", code, p.output())
	}
	measureAM(b, &r)
	return r
}

var javaSubmittedRE = regexp.MustCompile(`(?m)(?:^submitted|Submitted application) (application_[0-9]+_[0-9]+)`)

func benchJava(ctx context.Context, b *testing.B, c *harness.Cluster, java []string, workers int) benchAMRun {
	args := append([]string{}, java[1:]...)
	args = append(args, c.ConfDir)
	impl := "java"
	if ds := os.Getenv("XRES_DSHELL_JAR"); ds != "" {
		impl = "dshell"
		args = append(args, "dshell", ds, "-appname", "xres-bench-dshell", "-num_containers", strconv.Itoa(workers),
			"-container_resources", "memory-mb=256,vcores=1,yarn.io/gpu=1",
			"-master_memory", "256", "-master_vcores", "1", "-shell_command", "sleep 300", "-timeout", "600000")
	} else {
		args = append(args, "own", "xres-bench-java", strconv.Itoa(workers), "256", "1", "yarn.io/gpu=1", "256", "--", "sleep", "300")
	}
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
		if m := javaSubmittedRE.FindStringSubmatch(stdout.String() + "\n" + stderr.String()); m != nil {
			app = m[1]
			break
		}
		select {
		case err := <-done:
			b.Fatalf("java client ended (%v) without an application id\nstdout:\n%s\nstderr:\n%s", err, stdout, tailString(stderr.String(), 30))
		case <-deadline:
			b.Fatalf("java client printed no application id in 2m\nstderr:\n%s", tailString(stderr.String(), 30))
		case <-time.After(50 * time.Millisecond):
		}
	}
	r := benchAMRun{impl: impl, app: app}
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
		if impl == "dshell" {
			_ = c.HDFS(b).RemoveAll(filepath.Join("/user", c.User, "DistributedShell", app))
		}
	}()
	tAll, a := waitRunning(ctx, b, c, app, workers+1)
	r.total, r.fromRM = tAll.Sub(t0), tAll.Sub(time.UnixMilli(a.StartedTime))
	measureAM(b, &r)
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
	workers := int(benchEnv(b, "XRES_BENCH_WORKERS", 4))
	rounds := int(benchEnv(b, "XRES_BENCH_ROUNDS", 3))
	warmups := 1
	if v := os.Getenv("XRES_BENCH_WARMUP_ROUNDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			b.Fatalf("XRES_BENCH_WARMUP_ROUNDS=%q: want a count", v)
		}
		warmups = n
	}
	version := c.Env["XRES_HADOOP_VERSION"]
	if version == "" {
		version = "3.4.1"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Minute)
	defer cancel()
	amBins(b)
	java := dsbenchCmd(b, version)

	runs := map[string][]benchAMRun{}
	var javaImpl string
	for round := -warmups; round < rounds; round++ {
		order := []string{"xres", "java"}
		if (round+warmups)%2 == 1 {
			order = []string{"java", "xres"}
		}
		for _, impl := range order {
			var r benchAMRun
			if impl == "xres" {
				r = benchXres(ctx, b, c, workers)
			} else {
				r = benchJava(ctx, b, c, java, workers)
				javaImpl = r.impl
			}
			tag := "measured"
			if round < 0 {
				tag = "warm-up"
			} else {
				runs[impl] = append(runs[impl], r)
			}
			b.Logf("%s %-6s %s: all running %.2fs after the command (%.2fs after the RM's submission); AM %s VmHWM %d KiB VmRSS %d KiB",
				tag, r.impl, r.app, r.total.Seconds(), r.fromRM.Seconds(), r.procName, r.hwmKiB, r.rssKiB)
		}
	}

	total := func(r benchAMRun) float64 { return r.total.Seconds() }
	fromRM := func(r benchAMRun) float64 { return r.fromRM.Seconds() }
	hwm := func(r benchAMRun) float64 { return float64(r.hwmKiB) / 1024 }
	label := map[string]string{"xres": "xres (am submit)", "java": "java (DistributedShell-style AM)", "dshell": "DistributedShell"}
	for _, impl := range []string{"xres", "java"} {
		rs := runs[impl]
		b.Run("impl="+impl, func(b *testing.B) {
			b.ReportMetric(medianOf(rs, total), "s-to-running")
			b.ReportMetric(medianOf(rs, fromRM), "s-rm-to-running")
			b.ReportMetric(medianOf(rs, hwm), "MiB-AM-peak-RSS")
			b.ReportMetric(medianOf(rs, total)*1e9, "ns/op")
		})
	}
	var t strings.Builder
	fmt.Fprintf(&t, "\nsubmit → all %d workers running (the RM reports %d running containers) and the AM's peak RSS (VmHWM)\n", workers, workers+1)
	fmt.Fprintf(&t, "Hadoop %s minicluster, workers of <memory:256, vCores:1, yarn.io/gpu: 1>, AM container 256 MB; %d rounds (after %d warm-up), alternating, medians\n",
		version, rounds, warmups)
	fmt.Fprintf(&t, "%-34s %14s %14s %14s   %s\n", "impl", "command→run s", "RM→run s", "AM VmHWM MiB", "over rounds: command→run s; VmHWM MiB")
	for _, impl := range []string{"xres", "java"} {
		rs := runs[impl]
		name := label[impl]
		if impl == "java" {
			name = label[javaImpl]
		}
		var each []string
		for _, r := range rs {
			each = append(each, fmt.Sprintf("%.2f/%.0f", r.total.Seconds(), float64(r.hwmKiB)/1024))
		}
		fmt.Fprintf(&t, "%-34s %14.2f %14.2f %14.1f   %s\n", name, medianOf(rs, total), medianOf(rs, fromRM), medianOf(rs, hwm), strings.Join(each, " "))
	}
	x, j := runs["xres"], runs["java"]
	fmt.Fprintf(&t, "%-34s %13.2fx %13.2fx %13.3fx   (aim: time < 0.5x, memory < 0.15x)\n", "ratio xres/java",
		medianOf(x, total)/medianOf(j, total), medianOf(x, fromRM)/medianOf(j, fromRM), medianOf(x, hwm)/medianOf(j, hwm))
	fmt.Print(t.String())
	if path := os.Getenv("XRES_BENCH_OUT"); path != "" {
		if err := os.WriteFile(path, []byte(t.String()), 0o644); err != nil {
			b.Fatal(err)
		}
	}
}
