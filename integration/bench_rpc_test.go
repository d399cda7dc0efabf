//go:build integration

package integration

// BenchmarkRPCGetClusterMetrics puts our ApplicationClientProtocol client
// and Hadoop's Java YarnClient side by side against the same RM, in one run:
// closed-loop getClusterMetrics from 1 and 8 concurrent callers sharing one
// client, calls per second and p50/p99 latency, then a table with ratios.
//
//	make bench-rpc
//	go test -tags integration -run '^$' -bench RPCGetClusterMetrics -benchtime 1x ./integration/
//
// Settings: XRES_BENCH_CALLERS (default "1,8"), XRES_BENCH_WARMUP and
// XRES_BENCH_SECONDS (warm-up and measured time per row, default 2 and 4
// seconds), XRES_BENCH_ROUNDS (default 3), XRES_BENCH_OUT (also write the
// table to this file). The Java side is integration/javabench (Maven, built
// on first use), one JVM for the whole run. Both sides measure the same way:
// every caller calls back to back for the measured time after an unmeasured
// warm-up, every call's latency is kept, percentiles are nearest-rank, and
// Go and Java rows alternate over the rounds; the table shows medians.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

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
}

func (r benchResult) rate() float64 { return float64(r.Calls) / r.Seconds }

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

func benchCallers(b *testing.B) []int {
	v := os.Getenv("XRES_BENCH_CALLERS")
	if v == "" {
		v = "1,8"
	}
	var out []int
	for _, s := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n <= 0 {
			b.Fatalf("XRES_BENCH_CALLERS=%q: want comma-separated positive counts", v)
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
				_, err := cl.GetClusterMetrics(ctx)
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
func javaBench(b *testing.B) []string {
	dir, cp := mavenBuild(b, "javabench", "xres-javabench-0.1.0.jar")
	return []string{javaBin(), "-cp", filepath.Join(dir, "target", "classes") + ":" + strings.Join(cp, ":"), "io.xres.javabench.Main"}
}

func reportBench(b *testing.B, r benchResult) {
	b.ReportMetric(r.rate(), "calls/s")
	b.ReportMetric(r.P50us, "p50-µs")
	b.ReportMetric(r.P99us, "p99-µs")
	b.ReportMetric(r.Seconds*1e9*float64(r.Callers)/float64(max(r.Calls, 1)), "ns/op")
}

// javaProc is the running Java side, driven one row per stdin line.
type javaProc struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	out    *bufio.Scanner
	stderr *bytes.Buffer
}

func startJava(ctx context.Context, b *testing.B, confDir, user string) *javaProc {
	cmdline := javaBench(b)
	cmd := exec.CommandContext(ctx, cmdline[0], append(cmdline[1:], confDir)...)
	cmd.Env = append(os.Environ(), "HADOOP_USER_NAME="+user)
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
	return m
}

func spread(rows []benchResult) (lo, hi float64) {
	lo, hi = math.Inf(1), 0
	for _, r := range rows {
		lo, hi = math.Min(lo, r.rate()), math.Max(hi, r.rate())
	}
	return lo, hi
}

func BenchmarkRPCGetClusterMetrics(b *testing.B) {
	c := harness.Get(b)
	hc, err := conf.LoadHadoop(c.ConfDir)
	if err != nil {
		b.Fatal(err)
	}
	addrs, err := yarn.RMAddresses(hc, yarn.RMClient)
	if err != nil {
		b.Fatal(err)
	}
	callers := benchCallers(b)
	warmup := time.Duration(benchEnv(b, "XRES_BENCH_WARMUP", 2) * float64(time.Second))
	seconds := time.Duration(benchEnv(b, "XRES_BENCH_SECONDS", 4) * float64(time.Second))
	rounds := int(benchEnv(b, "XRES_BENCH_ROUNDS", 3))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()

	cl, err := yarn.NewClient(yarn.ClientConfig{Addrs: addrs, User: c.User})
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	m, err := cl.GetClusterMetrics(ctx)
	if err != nil {
		b.Fatalf("go getClusterMetrics %v: %v", addrs, err)
	}
	if m.GetNumNodeManagers() <= 0 {
		b.Fatalf("go getClusterMetrics: %d NodeManagers", m.GetNumNodeManagers())
	}
	java := startJava(ctx, b, c.ConfDir, c.User)
	defer java.stop(b)

	// Warm the RM itself (its JIT, handler threads) before the first row,
	// so that neither side measures a cold server.
	if _, err := measureGo(ctx, cl, slices.Max(callers), warmup, false); err != nil {
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
	goRow := func(n int) benchResult {
		if _, err := measureGo(ctx, cl, n, warmup, false); err != nil {
			b.Fatalf("go warm-up: %v", err)
		}
		lat, err := measureGo(ctx, cl, n, seconds, true)
		if err != nil {
			b.Fatalf("go getClusterMetrics: %v", err)
		}
		return benchResult{Impl: "go", Callers: n, Calls: len(lat), Seconds: seconds.Seconds(),
			P50us: percentile(lat, 0.50), P99us: percentile(lat, 0.99)}
	}
	for round := 0; round < rounds; round++ {
		for _, n := range callers {
			order := []string{"go", "java"}
			if round%2 == 1 {
				order = []string{"java", "go"}
			}
			for _, impl := range order {
				var r benchResult
				if impl == "go" {
					r = goRow(n)
				} else {
					r = java.row(b, n, warmup, seconds)
				}
				rows[key{impl, n}] = append(rows[key{impl, n}], r)
			}
		}
	}
	for _, n := range callers {
		for _, impl := range []string{"go", "java"} {
			r := median(rows[key{impl, n}])
			b.Run(fmt.Sprintf("impl=%s/callers=%d", impl, n), func(b *testing.B) { reportBench(b, r) })
		}
	}

	version := "unknown"
	if rc, err := rest.New(rest.Config{Endpoints: mustWebURLs(b, hc)}); err == nil {
		if info, err := rc.ClusterInfo(ctx); err == nil {
			version = info.HadoopVersion
		}
	}
	var t strings.Builder
	fmt.Fprintf(&t, "\ngetClusterMetrics against %s (Hadoop %s): %d rounds of %s warm-up + %s measured per row, medians\n",
		strings.Join(addrs, ","), version, rounds, warmup, seconds)
	fmt.Fprintf(&t, "%-8s %-5s %12s %10s %10s   %s\n", "callers", "impl", "calls/s", "p50 µs", "p99 µs", "calls/s over rounds")
	for _, n := range callers {
		for _, impl := range []string{"go", "java"} {
			r := median(rows[key{impl, n}])
			lo, hi := spread(rows[key{impl, n}])
			fmt.Fprintf(&t, "%-8d %-5s %12.0f %10.1f %10.1f   %.0f–%.0f\n", n, impl, r.rate(), r.P50us, r.P99us, lo, hi)
		}
		g, j := median(rows[key{"go", n}]), median(rows[key{"java", n}])
		fmt.Fprintf(&t, "%-8d %-5s %11.2fx %9.2fx %9.2fx   (throughput go/java; latency java/go: >1 means go is faster)\n",
			n, "ratio", g.rate()/j.rate(), j.P50us/g.P50us, j.P99us/g.P99us)
	}
	fmt.Print(t.String())
	if path := os.Getenv("XRES_BENCH_OUT"); path != "" {
		if err := os.WriteFile(path, []byte(t.String()), 0o644); err != nil {
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
