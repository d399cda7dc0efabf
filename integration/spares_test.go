//go:build integration

package integration

// Standby spares (issue 26 item 4) on the real cluster: a spare holds its
// container and GPU, runs no command and is not counted; when workers are
// killed -9, the spare takes one's rank at once and a new container the
// other's. The benchmark measures both replacements in the same run.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/integration/harness"
	"github.com/xres/xres/yarn/amstatus"
)

// spareStart is one line a worker wrote when its command started.
type spareStart struct {
	container   string
	rank, pid   int
	workers     string
	at          time.Time
	gpu, nmHost string
}

// rankWorker appends "rank= pid= t= workers= gpu= host=" to
// dir/started.<container> when its command starts, then (as the same
// pid) waits for the release file.
func rankWorker(dir, release string) []string {
	return []string{"sh", "-c", `echo "rank=$XRES_RANK pid=$$ t=$(date +%s.%N) workers=$XRES_WORKERS gpu=$CUDA_VISIBLE_DEVICES host=$NM_HOST" >> ` + dir + `/started.$CONTAINER_ID; ` +
		`exec sh -c 'while [ ! -e ` + release + ` ]; do sleep 0.2; done'`}
}

// spareStarts reads every started.* line of dir, by container.
func spareStarts(t testing.TB, dir string) map[string][]spareStart {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "started.container_*"))
	require.NoError(t, err)
	out := map[string][]spareStart{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		id := strings.TrimPrefix(filepath.Base(f), "started.")
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			s := spareStart{container: id}
			for _, kv := range strings.Fields(line) {
				k, v, _ := strings.Cut(kv, "=")
				switch k {
				case "rank":
					s.rank, err = strconv.Atoi(v)
				case "pid":
					s.pid, err = strconv.Atoi(v)
				case "t":
					var sec float64
					sec, err = strconv.ParseFloat(v, 64)
					s.at = time.Unix(0, int64(sec*1e9))
				case "workers":
					s.workers = v
				case "gpu":
					s.gpu = v
				case "host":
					s.nmHost = v
				}
				require.NoError(t, err, "%s: %q", f, line)
			}
			out[id] = append(out[id], s)
		}
	}
	return out
}

// sparesApp runs 3 workers + 1 standby spare (one GPU each, the cluster's
// 4) and waits until the 3 run and the spare stands by with its GPU.
type sparesApp struct {
	c            *harness.Cluster
	p            *amProc
	app          string
	dir, release string
}

func startSparesApp(t testing.TB, ctx context.Context) *sparesApp {
	c := harness.Get(t)
	dir := t.TempDir()
	release := filepath.Join(dir, "release")
	cfg := writeAMConf(t, dir, 4, "slotmanager.redundant-taskmanager-num: 1", "yarn.maximum-failed-containers: 20")
	p := startAM(t, ctx, append([]string{"submit", "--conf", cfg, "--workers", "3", "--name", "xres-it-spares", "--"}, rankWorker(dir, release)...)...)
	s := &sparesApp{c: c, p: p, app: p.appID(t), dir: dir, release: release}
	c.KeepAppLogs(t, s.app)
	t.Cleanup(func() {
		_ = os.WriteFile(release, nil, 0o644)
		cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if a, err := getRMApp(cctx, c, s.app); err == nil && !isTerminal(a.State) {
			c.KillApp(t, s.app)
		}
	})
	return s
}

// standing waits until 3 workers run with their command started and one
// spare stands by with its GPU reported; it returns the status then.
func (s *sparesApp) standing(t testing.TB, ctx context.Context) amstatus.Status {
	t.Helper()
	var st amstatus.Status
	eventually(t, 3*time.Minute, "3 workers running and 1 spare standing by with its GPU", func() (bool, string) {
		select {
		case <-s.p.done:
			t.Fatalf("am submit exited early\n%s", s.p.output())
		default:
		}
		var err error
		if st, err = amStatusOf(ctx, s.c, s.app); err != nil {
			return false, err.Error()
		}
		starts := spareStarts(t, s.dir)
		ok := st.Running == 3 && st.Standby == 1
		for _, w := range st.Containers {
			switch w.State {
			case amstatus.StateStandby:
				ok = ok && len(w.Devices["gpu"]) == 1
			case amstatus.StateRunning:
				ok = ok && len(starts[w.Container]) == 1
			}
		}
		return ok, fmt.Sprintf("%+v", st)
	})
	return st
}

// replaceTwo kills the commands of two running workers at once (kill -9)
// and waits for both ranks to run again: one by the promoted spare, one by
// a new container. It returns how long after the kill each started.
func (s *sparesApp) replaceTwo(t testing.TB, ctx context.Context, st amstatus.Status) (promoted, fresh time.Duration, ranks [2]int) {
	t.Helper()
	var spare string
	var victims []amstatus.WorkerStatus
	for _, w := range st.Containers {
		switch {
		case w.State == amstatus.StateStandby:
			spare = w.Container
		case w.State == amstatus.StateRunning && len(victims) < 2:
			victims = append(victims, w)
		}
	}
	require.NotEmpty(t, spare)
	require.Len(t, victims, 2)
	before := spareStarts(t, s.dir)
	require.Empty(t, before[spare], "a standby spare runs no command")
	killed := map[int]bool{}
	t0 := time.Now()
	for i, v := range victims {
		last := before[v.Container][len(before[v.Container])-1]
		ranks[i] = last.rank
		killed[last.rank] = true
		require.NoError(t, syscall.Kill(last.pid, syscall.SIGKILL))
	}
	var got map[string][]spareStart
	eventually(t, 3*time.Minute, "both killed ranks run again", func() (bool, string) {
		got = spareStarts(t, s.dir)
		n := 0
		for id, ls := range got {
			if len(before[id]) == 0 && killed[ls[0].rank] {
				n++
			}
		}
		return n == 2, fmt.Sprintf("%+v", got)
	})
	for id, ls := range got {
		if len(before[id]) > 0 || !killed[ls[0].rank] {
			continue
		}
		require.Equal(t, "3", ls[0].workers, "XRES_WORKERS leaves the spare out (container %s)", id)
		if id == spare {
			promoted = ls[0].at.Sub(t0)
		} else {
			fresh = ls[0].at.Sub(t0)
		}
	}
	require.NotZero(t, promoted, "the spare %s took a killed rank: %+v", spare, got)
	require.NotZero(t, fresh, "a new container took the other: %+v", got)
	return promoted, fresh, ranks
}

// 3 workers and 1 standby spare: the spare holds a GPU (all 4 distinct
// per host) but runs nothing and is not counted; two workers killed -9 at
// once: the spare runs one's rank, a new container the other's, every
// command sees XRES_WORKERS=3, the next spare stands by again, and the
// application succeeds once the workers end, its spare stopped.
func TestSparePromotedOnKill(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), faultTimeout)
	defer cancel()
	s := startSparesApp(t, ctx)
	st := s.standing(t, ctx)
	require.Equal(t, 3, st.Workers, "spares are not workers: %+v", st)
	gpus := map[string][]string{}
	for _, w := range st.Containers {
		for _, d := range w.Devices["gpu"] {
			gpus[w.Host] = append(gpus[w.Host], d["index"])
		}
	}
	for host, idx := range gpus {
		sorted := slices.Clone(idx)
		slices.Sort(sorted)
		require.Equal(t, len(sorted), len(slices.Compact(sorted)), "GPUs of %s handed out twice (spare included): %v", host, idx)
	}

	promoted, fresh, ranks := s.replaceTwo(t, ctx, st)
	t.Logf("killed ranks %v: promoted spare ran after %s, new container after %s", ranks, promoted.Round(time.Millisecond), fresh.Round(time.Millisecond))
	st = s.standing(t, ctx)
	require.Equal(t, 1, st.Groups[0].Promotions, "%+v", st.Groups)
	require.Equal(t, 2, st.Failed)
	releaseAndSucceed(t, s.p, s.app, s.release)
}

// BenchmarkSparePromotionVsNewContainer: failure (kill -9 of two workers
// at once) → the killed ranks' commands running again, for the one the
// standby spare takes and the one a new container takes, in the same
// rounds (3, medians). make bench-spares runs it.
func BenchmarkSparePromotionVsNewContainer(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	s := startSparesApp(b, ctx)
	var ps, fs []time.Duration
	for range 3 {
		st := s.standing(b, ctx)
		p, f, _ := s.replaceTwo(b, ctx, st)
		ps, fs = append(ps, p), append(fs, f)
		b.Logf("round %d: promoted spare %s, new container %s", len(ps), p.Round(time.Millisecond), f.Round(time.Millisecond))
	}
	slices.Sort(ps)
	slices.Sort(fs)
	p, f := ps[len(ps)/2], fs[len(fs)/2]
	b.ReportMetric(float64(p.Milliseconds()), "promoted-ms")
	b.ReportMetric(float64(f.Milliseconds()), "new-container-ms")
	b.ReportMetric(float64(p)/float64(f), "promoted/new")
	b.Logf("kill → command running again, median of %d rounds: promoted spare %s, new container %s (%.2f×)", len(ps), p.Round(time.Millisecond), f.Round(time.Millisecond), float64(p)/float64(f))
	s.standing(b, ctx)
	require.NoError(b, os.WriteFile(s.release, nil, 0o644))
	require.Equal(b, 0, s.p.wait(b), s.p.output())
}
