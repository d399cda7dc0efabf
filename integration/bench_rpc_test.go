//go:build integration

package integration

// BenchmarkRPCGetClusterMetrics puts our ApplicationClientProtocol client
// and Hadoop's Java YarnClient side by side against the same RM, in one run:
// closed-loop getClusterMetrics from 1, 8 and 32 concurrent callers sharing
// one client, calls per second and p50/p99 latency, then a table with
// ratios. BenchmarkRPCGetClusterMetricsPrivacy does the same at 8 callers
// on a Kerberized cluster with hadoop.rpc.protection=privacy (GSSAPI with
// confidentiality: every packet wrapped and encrypted, both sides).
//
//	make bench-rpc
//	go test -tags integration -run '^$' -bench RPCGetClusterMetrics -benchtime 1x ./integration/
//
// Settings: XRES_BENCH_CALLERS (default "1,8,32"; the privacy benchmark:
// XRES_BENCH_PRIVACY_CALLERS, default "8"), XRES_BENCH_WARMUP and
// XRES_BENCH_SECONDS (warm-up and measured time per row, default 2 and 4
// seconds), XRES_BENCH_ROUNDS (default 5), XRES_BENCH_OUT (also append the
// tables to this file), XRES_BENCH_SECURE_DIR (the state folder of a
// running `run.sh start --secure` cluster with XRES_RPC_PROTECTION=privacy,
// for the privacy benchmark). The Java side is integration/javabench
// (Maven, built on first use), one JVM per benchmark. Both sides measure
// the same way: every caller calls back to back for the measured time after
// an unmeasured warm-up, every call's latency is kept, percentiles are
// nearest-rank, and Go and Java rows alternate over the rounds; the table
// shows medians, each client process's CPU time per call (all its threads,
// measured time only), the spread over rounds (for the ratio rows: each
// round's own ratio, its rows having run back to back), and the machine's
// 1-minute load average (/proc/loadavg) when each row ended.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/xres/xres/conf"
	"github.com/xres/xres/integration/harness"
	"github.com/xres/xres/yarn"
	"github.com/xres/xres/yarn/rest"
)

type benchResult struct {
	Impl    string  `json:"impl"`
	Callers int     `json:"callers"`
	Calls   int     `json:"calls"`
	Seconds float64 `json:"seconds"`
	P50us   float64 `json:"p50_us"`
	P99us   float64 `json:"p99_us"`
	CPUns   int64   `json:"cpu_ns"` // the client process's CPU time (all threads) in the measured time
	Load    float64 `json:"-"`      // 1-minute load average when the row ended
}

func (r benchResult) rate() float64 { return float64(r.Calls) / r.Seconds }

// cpuPerCall is the client's CPU time per call, in µs.
func (r benchResult) cpuPerCall() float64 {
	return float64(r.CPUns) / 1e3 / float64(max(r.Calls, 1))
}

// processCPU is this process's user plus system CPU time.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatalf("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func benchEnv(b *testing.B, key string, def float64) float64 {
	v := os.Getenv(key)
	if v == "" {
		return def
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f <= 0 {
		b.Fatalf("%s=%q: want a positive number", key, v)
	}
	return f
}

func benchCallers(b *testing.B, key, def string) []int {
	v := os.Getenv(key)
	if v == "" {
		v = def
	}
	var out []int
	for _, s := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n <= 0 {
			b.Fatalf("%s=%q: want comma-separated positive counts", key, v)
		}
		out = append(out, n)
	}
	return out
}

// percentile is the nearest-rank percentile of sorted latencies, in µs.
func percentile(sorted []time.Duration, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	i = min(max(i, 0), len(sorted)-1)
	return float64(sorted[i]) / float64(time.Microsecond)
}

// measureGo runs n goroutines calling getClusterMetrics on one shared
// client for d, returning every call's latency when measure is set.
func measureGo(ctx context.Context, cl *yarn.Client, n int, d time.Duration, measure bool) ([]time.Duration, error) {
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		all      []time.Duration
		firstErr error
	)
	stop := time.Now().Add(d)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lat := make([]time.Duration, 0, 1<<16)
			for time.Now().Before(stop) {
				t0 := time.Now()
				_, err := raw(cl).GetClusterMetrics(ctx)
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					return
				}
				lat = append(lat, time.Since(t0))
			}
			if measure {
				mu.Lock()
				all = append(all, lat...)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	return all, firstErr
}

// javaBench builds integration/javabench (mavenBuild) when its jar is missing or older
// than its sources and returns the java command line prefix.
func javaBench(b *testing.B, jvmOpts ...string) []string {
	dir, cp := mavenBuild(b, "javabench", "xres-javabench-0.1.0.jar")
	cmd := append([]string{javaBin()}, jvmOpts...)
	return append(cmd, "-cp", filepath.Join(dir, "target", "classes")+":"+strings.Join(cp, ":"), "io.xres.javabench.Main")
}

func reportBench(b *testing.B, r benchResult) {
	b.ReportMetric(r.rate(), "calls/s")
	b.ReportMetric(r.P50us, "p50-µs")
	b.ReportMetric(r.P99us, "p99-µs")
	b.ReportMetric(r.cpuPerCall(), "client-cpu-µs/call")
	b.ReportMetric(r.Seconds*1e9*float64(r.Callers)/float64(max(r.Calls, 1)), "ns/op")
}

// javaProc is the running Java side, driven one row per stdin line.
type javaProc struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	out    *bufio.Scanner
	stderr *bytes.Buffer
}

func startJava(ctx context.Context, b *testing.B, s rpcBench) *javaProc {
	var jvmOpts, env []string
	if s.principal != "" {
		jvmOpts = []string{"-Djava.security.krb5.conf=" + s.krb5Conf}
		env = []string{"XRES_BENCH_PRINCIPAL=" + s.principal, "XRES_BENCH_KEYTAB=" + s.keytab}
	} else {
		env = []string{"HADOOP_USER_NAME=" + s.user}
	}
	cmdline := javaBench(b, jvmOpts...)
	cmd := exec.CommandContext(ctx, cmdline[0], append(cmdline[1:], s.confDir)...)
	cmd.Env = append(os.Environ(), env...)
	p := &javaProc{cmd: cmd, stderr: &bytes.Buffer{}}
	cmd.Stderr = p.stderr
	var err error
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	p.out = bufio.NewScanner(stdout)
	if err := cmd.Start(); err != nil {
		b.Fatalf("start java YarnClient bench: %v", err)
	}
	return p
}

func (p *javaProc) row(b *testing.B, n int, warmup, seconds time.Duration) benchResult {
	if _, err := fmt.Fprintf(p.stdin, "%d %g %g\n", n, warmup.Seconds(), seconds.Seconds()); err != nil {
		b.Fatalf("java bench: %v\n%s", err, tailLines(p.stderr.Bytes(), 30))
	}
	if !p.out.Scan() {
		_ = p.cmd.Wait()
		b.Fatalf("java bench ended without a result for %d callers: %v\n%s", n, p.out.Err(), tailLines(p.stderr.Bytes(), 30))
	}
	var r benchResult
	if err := json.Unmarshal(p.out.Bytes(), &r); err != nil || r.Callers != n || r.Calls == 0 {
		b.Fatalf("java bench output %q (err %v)\n%s", p.out.Text(), err, tailLines(p.stderr.Bytes(), 30))
	}
	r.Load = loadAvg(b)
	return r
}

func (p *javaProc) stop(b *testing.B) {
	_ = p.stdin.Close()
	if err := p.cmd.Wait(); err != nil {
		b.Errorf("java bench: %v\n%s", err, tailLines(p.stderr.Bytes(), 30))
	}
}

// median returns the median row of rounds by each metric separately.
func median(rows []benchResult) benchResult {
	pick := func(f func(benchResult) float64) float64 {
		v := make([]float64, len(rows))
		for i, r := range rows {
			v[i] = f(r)
		}
		sort.Float64s(v)
		if len(v)%2 == 1 {
			return v[len(v)/2]
		}
		return (v[len(v)/2-1] + v[len(v)/2]) / 2
	}
	m := rows[0]
	m.Seconds = 1
	m.Calls = int(math.Round(pick(benchResult.rate)))
	m.P50us = pick(func(r benchResult) float64 { return r.P50us })
	m.P99us = pick(func(r benchResult) float64 { return r.P99us })
	// CPUns such that cpuPerCall is the median CPU time per call.
	m.CPUns = int64(math.Round(pick(benchResult.cpuPerCall) * 1e3 * float64(m.Calls)))
	return m
}

// spread is the lowest and highest of f over rounds.
func spread(rows []benchResult, f func(benchResult) float64) (lo, hi float64) {
	lo, hi = math.Inf(1), 0
	for _, r := range rows {
		lo, hi = math.Min(lo, f(r)), math.Max(hi, f(r))
	}
	return lo, hi
}

// loadAvg is the machine's 1-minute load average.
func loadAvg(b *testing.B) float64 {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		b.Fatalf("load average: %v", err)
	}
	f := strings.Fields(string(raw))
	if len(f) == 0 {
		b.Fatalf("load average: empty /proc/loadavg")
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		b.Fatalf("load average: /proc/loadavg %q: %v", raw, err)
	}
	return v
}

func BenchmarkRPCGetClusterMetrics(b *testing.B) {
	c := harness.Get(b)
	runRPCBench(b, rpcBench{title: "SIMPLE authentication", confDir: c.ConfDir, user: c.User,
		callers: benchCallers(b, "XRES_BENCH_CALLERS", "1,8,32")})
}

func BenchmarkRPCGetClusterMetricsPrivacy(b *testing.B) {
	dir := os.Getenv("XRES_BENCH_SECURE_DIR")
	if dir == "" {
		b.Fatal("XRES_BENCH_SECURE_DIR: name the state folder of a Kerberized minicluster with privacy, started with\n" +
			"  XRES_RPC_PROTECTION=privacy XRES_MINICLUSTER_DIR=<dir> docker/hadoop-minicluster/run.sh start --secure\n" +
			"(make bench-rpc starts one)")
	}
	env := readClusterEnv(b, filepath.Join(dir, "cluster.env"))
	if env["XRES_SECURE"] != "true" || env["XRES_RPC_PROTECTION"] != "privacy" {
		b.Fatalf("%s/cluster.env: XRES_SECURE=%q XRES_RPC_PROTECTION=%q, want a secure cluster with privacy",
			dir, env["XRES_SECURE"], env["XRES_RPC_PROTECTION"])
	}
	runRPCBench(b, rpcBench{title: "Kerberos, hadoop.rpc.protection=privacy", confDir: env["XRES_HADOOP_CONF_DIR"],
		krb5Conf: env["XRES_KRB5_CONF"], principal: env["XRES_CLIENT_PRINCIPAL"], keytab: env["XRES_CLIENT_KEYTAB"],
		version: env["XRES_HADOOP_VERSION"], callers: benchCallers(b, "XRES_BENCH_PRIVACY_CALLERS", "8")})
}

// readClusterEnv reads a cluster.env (KEY=VALUE lines, # comments).
func readClusterEnv(b *testing.B, path string) map[string]string {
	raw, err := os.ReadFile(path)
	if err != nil {
		b.Fatalf("cluster env: %v", err)
	}
	env := map[string]string{}
	for i, line := range strings.Split(string(raw), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			b.Fatalf("%s:%d: want KEY=VALUE, got %q", path, i+1, line)
		}
		env[k] = v
	}
	return env
}

// rpcBench is one cluster both clients are measured against.
type rpcBench struct {
	title   string
	confDir string
	user    string // SIMPLE: the Hadoop user
	// Kerberos: the client's login, for both sides.
	krb5Conf, principal, keytab string
	version                     string // Hadoop's version; "" asks the RM's REST API
	callers                     []int
}

// layerSeen records whether a connection negotiated a SASL security layer.
type layerSeen struct{ seen atomic.Bool }

func (h *layerSeen) Levels() []logrus.Level { return []logrus.Level{logrus.DebugLevel} }
func (h *layerSeen) Fire(e *logrus.Entry) error {
	if strings.Contains(e.Message, "sasl security layer in use") {
		h.seen.Store(true)
	}
	return nil
}

func runRPCBench(b *testing.B, s rpcBench) {
	hc, err := conf.LoadHadoop(s.confDir)
	if err != nil {
		b.Fatal(err)
	}
	addrs, err := yarn.RMAddresses(hc, yarn.RMClient)
	if err != nil {
		b.Fatal(err)
	}
	warmup := time.Duration(benchEnv(b, "XRES_BENCH_WARMUP", 2) * float64(time.Second))
	seconds := time.Duration(benchEnv(b, "XRES_BENCH_SECONDS", 4) * float64(time.Second))
	rounds := int(benchEnv(b, "XRES_BENCH_ROUNDS", 5))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()

	log := logrus.New()
	log.SetOutput(io.Discard)
	log.SetLevel(logrus.DebugLevel)
	layer := &layerSeen{}
	log.AddHook(layer)
	cfg := yarn.ClientConfig{Addrs: addrs, User: s.user, Log: log}
	if s.principal != "" {
		if cfg.Kerberos, err = yarn.NewKerberosFromKeytab(s.krb5Conf, s.keytab, s.principal); err != nil {
			b.Fatal(err)
		}
	}
	cl, err := yarn.NewClient(cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	m, err := raw(cl).GetClusterMetrics(ctx)
	if err != nil {
		b.Fatalf("go getClusterMetrics %v: %v", addrs, err)
	}
	if m.GetNumNodeManagers() <= 0 {
		b.Fatalf("go getClusterMetrics: %d NodeManagers", m.GetNumNodeManagers())
	}
	if prot, _ := hc.Get("hadoop.rpc.protection"); (prot != "" && prot != "authentication") != layer.seen.Load() {
		b.Fatalf("hadoop.rpc.protection=%q but the go client's security layer in use: %v", prot, layer.seen.Load())
	}
	java := startJava(ctx, b, s)
	defer java.stop(b)

	// Warm the RM itself (its JIT, handler threads) before the first row,
	// so that neither side measures a cold server.
	if _, err := measureGo(ctx, cl, slices.Max(s.callers), warmup, false); err != nil {
		b.Fatalf("rm warm-up: %v", err)
	}

	// Rounds alternate Go and Java rows (Java first in odd rounds), so that
	// the load other processes put on the machine hits both sides alike;
	// each metric is the median over rounds.
	type key struct {
		impl    string
		callers int
	}
	rows := map[key][]benchResult{}
	// The Go client runs twice: as the AM runs it ("go": am submit gives
	// the AM container GOMAXPROCS = its vcores, yarn.appmaster.vcores, 1 by
	// default; XRES_BENCH_GOMAXPROCS overrides), and with Go's default of
	// one P per CPU ("go-ncpu").
	amProcs := int(benchEnv(b, "XRES_BENCH_GOMAXPROCS", 1))
	impls := []string{"go", "go-ncpu", "java"}
	goRow := func(n int, procs int) benchResult {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		if _, err := measureGo(ctx, cl, n, warmup, false); err != nil {
			b.Fatalf("go warm-up: %v", err)
		}
		cpu0 := processCPU(b)
		lat, err := measureGo(ctx, cl, n, seconds, true)
		cpu := processCPU(b) - cpu0
		if err != nil {
			b.Fatalf("go getClusterMetrics: %v", err)
		}
		return benchResult{Impl: "go", Callers: n, Calls: len(lat), Seconds: seconds.Seconds(),
			P50us: percentile(lat, 0.50), P99us: percentile(lat, 0.99), CPUns: cpu.Nanoseconds(), Load: loadAvg(b)}
	}
	for round := 0; round < rounds; round++ {
		for _, n := range s.callers {
			for i := range impls {
				impl := impls[(i+round)%len(impls)] // each round starts with another
				var r benchResult
				switch impl {
				case "go":
					r = goRow(n, amProcs)
				case "go-ncpu":
					r = goRow(n, runtime.NumCPU())
				default:
					r = java.row(b, n, warmup, seconds)
				}
				rows[key{impl, n}] = append(rows[key{impl, n}], r)
			}
		}
	}
	for _, n := range s.callers {
		for _, impl := range impls {
			r := median(rows[key{impl, n}])
			b.Run(fmt.Sprintf("impl=%s/callers=%d", impl, n), func(b *testing.B) { reportBench(b, r) })
		}
	}

	version := s.version
	if version == "" {
		version = "unknown"
	}
	if rc, err := rest.New(rest.Config{Endpoints: mustWebURLs(b, hc)}); s.version == "" && err == nil {
		if info, err := rc.ClusterInfo(ctx); err == nil {
			version = info.HadoopVersion
		}
	}
	var t strings.Builder
	fmt.Fprintf(&t, "\ngetClusterMetrics against %s (Hadoop %s, %s): %d rounds of %s warm-up + %s measured per row, medians; %d CPUs\n",
		strings.Join(addrs, ","), version, s.title, rounds, warmup, seconds, runtime.NumCPU())
	fmt.Fprintf(&t, "go: GOMAXPROCS=%d, as am submit runs the AM (its container's vcores); go-ncpu: GOMAXPROCS=%d (Go's default here); java: the JVM's defaults\n"+
		"ratio: go vs java, ratio-n: go-ncpu vs java (throughput x/java; latency and CPU java/x): >1 means Go is better\n",
		amProcs, runtime.NumCPU())
	fmt.Fprintf(&t, "%-8s %-8s %12s %10s %10s %9s   %-22s %s\n", "callers", "impl", "calls/s", "p50 µs", "p99 µs", "cpu µs", "calls/s over rounds", "load 1m over rounds")
	for _, n := range s.callers {
		for _, impl := range impls {
			rs := rows[key{impl, n}]
			r := median(rs)
			lo, hi := spread(rs, benchResult.rate)
			llo, lhi := spread(rs, func(r benchResult) float64 { return r.Load })
			fmt.Fprintf(&t, "%-8d %-8s %12.0f %10.1f %10.1f %9.1f   %-22s %.2f–%.2f\n", n, impl, r.rate(), r.P50us, r.P99us,
				r.cpuPerCall(), fmt.Sprintf("%.0f–%.0f", lo, hi), llo, lhi)
		}
		js := rows[key{"java", n}]
		j := median(js)
		for i, label := range []string{"ratio", "ratio-n"} {
			gs := rows[key{impls[i], n}]
			g := median(gs)
			// Each round's own throughput ratio: the rows of one
			// round ran back to back, so a machine that slows down
			// for a while slows both.
			paired := make([]float64, len(gs))
			for r := range gs {
				paired[r] = gs[r].rate() / js[r].rate()
			}
			fmt.Fprintf(&t, "%-8d %-8s %11.2fx %9.2fx %9.2fx %8.2fx   %.2f–%.2fx\n",
				n, label, g.rate()/j.rate(), j.P50us/g.P50us, j.P99us/g.P99us, j.cpuPerCall()/g.cpuPerCall(),
				slices.Min(paired), slices.Max(paired))
		}
	}
	fmt.Print(t.String())
	if path := os.Getenv("XRES_BENCH_OUT"); path != "" {
		f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err == nil {
			_, err = f.WriteString(t.String())
			err = errors.Join(err, f.Close())
		}
		if err != nil {
			b.Fatal(err)
		}
	}
}

func mustWebURLs(b *testing.B, hc *conf.HadoopConfig) []string {
	urls, err := yarn.RMWebappURLs(hc)
	if err != nil {
		b.Fatal(err)
	}
	return urls
}
