//go:build integration

package integration

// A GPU that fails while its worker runs (issue 43, docs/gpu-health.md), on the minicluster: an
// Xid is injected into a running worker's GPU through the fake xres-nvml helper's event source
// (driver/gpu/testdata/fake-xres-nvml, XRES_FAKE_NVML_EVENTS). The launcher's watch quarantines
// the GPU host-wide, stops the worker and exits 216; the AM replaces the worker (not counted as
// the application's failure) and the replacement's launcher picks a healthy GPU. Beside it, an
// ordinary failed worker (exit 1) is replaced the usual way, and both replacement times are
// measured: from the injection (or the failure's trigger) to the replacement worker's command
// running, as the worker itself records it.
//
// The short form (3 injections) runs in the integration suite; the long form
// (XRES_GPU_HEALTH_INJECTIONS=20, `make gpu-health-cluster`) prints p50/p95 of both kinds.
// TestGPUHealthUnwatched is the same injection without the watch (no helper on the workers'
// PATH): nothing notices, and the replacement of the crashed worker gets the bad GPU again.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/integration/harness"
	"github.com/xres/xres/yarn/amstatus"
)

// healthGPUs is how many fake GPUs the host has in the watched test.
const healthGPUs = 4

// fakeGPUUUID is fake nvidia-smi's uuid of GPU index i on host 0.
func fakeGPUUUID(i int) string { return fmt.Sprintf("GPU-00000000-0000-4000-8000-%04d%08d", 0, i) }

// healthWorker records each start (its time and its GPU) in dir/started.<container>, then waits
// for the release file; it exits 1 once dir/fail.<container> exists (an ordinary failure).
func healthWorker(dir, release string) []string {
	return []string{"sh", "-c", `echo "start $(date +%s.%N) $CUDA_VISIBLE_DEVICES" >> ` + dir + `/started.$CONTAINER_ID; ` +
		`while [ ! -e ` + release + ` ]; do [ -e ` + dir + `/fail.$CONTAINER_ID ] && exit 1; sleep 0.1; done`}
}

// healthStart is one worker's start as it recorded it.
type healthStart struct {
	at  time.Time
	gpu string // a uuid
}

// healthStarts reads every worker's recorded starts.
func healthStarts(dir string) (map[string]healthStart, error) {
	files, err := filepath.Glob(filepath.Join(dir, "started.*"))
	if err != nil {
		return nil, err
	}
	out := map[string]healthStart{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		line := strings.TrimSpace(string(b))
		if strings.Count(line, "\n") > 0 {
			return nil, fmt.Errorf("%s: the worker started more than once: %q", f, line)
		}
		fs := strings.Fields(line)
		if len(fs) != 3 {
			continue // being written
		}
		secs, err := strconv.ParseFloat(fs[1], 64)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		gpu := fs[2]
		if !strings.HasPrefix(gpu, "GPU-") {
			i, err := strconv.Atoi(gpu)
			if err != nil {
				return nil, fmt.Errorf("%s: CUDA_VISIBLE_DEVICES %q: %w", f, gpu, err)
			}
			gpu = fakeGPUUUID(i)
		}
		out[strings.TrimPrefix(filepath.Base(f), "started.")] = healthStart{
			at: time.Unix(0, int64(secs*1e9)), gpu: gpu}
	}
	return out, nil
}

// healthApp is one running application of healthWorker.
type healthApp struct {
	t       *testing.T
	c       *harness.Cluster
	p       *amProc
	app     string
	dir     string
	release string
	events  string
	cfg     string
}

// startHealthApp submits one worker with one of gpus fake GPUs; watched puts the fake helper on
// the workers' PATH.
func startHealthApp(t *testing.T, ctx context.Context, gpus int, watched bool, maxFailed int) *healthApp {
	c := harness.Get(t)
	dir := t.TempDir()
	path := fakeBinDir(t) + ":/usr/local/bin:/usr/bin:/bin"
	if watched {
		helper := filepath.Join(dir, "helper")
		require.NoError(t, os.Mkdir(helper, 0o755))
		fake, err := filepath.Abs(filepath.Join("..", "driver", "gpu", "testdata", "fake-xres-nvml"))
		require.NoError(t, err)
		require.NoError(t, os.Symlink(fake, filepath.Join(helper, "xres-nvml")))
		path = helper + ":" + path
	}
	h := &healthApp{t: t, c: c, dir: dir, release: filepath.Join(dir, "release"), events: filepath.Join(dir, "events")}
	require.NoError(t, os.WriteFile(h.events, nil, 0o644))
	h.cfg = writeAMConf(t, dir, gpus,
		"containerized.taskmanager.env.PATH: "+path,
		"containerized.taskmanager.env.XRES_FAKE_NVML_EVENTS: "+h.events,
		"yarn.maximum-failed-containers: "+strconv.Itoa(maxFailed))
	h.p = startAM(t, ctx, append([]string{"submit", "--conf", h.cfg, "--workers", "1", "--name", "xres-it-gpu-health", "--"},
		healthWorker(dir, h.release)...)...)
	h.app = h.p.appID(t)
	c.KeepAppLogs(t, h.app)
	killOnCleanup(t, c, h.app, h.release)
	return h
}

// next waits for a worker other than those in seen to record its start and returns it.
func (h *healthApp) next(seen map[string]healthStart) (string, healthStart) {
	h.t.Helper()
	var id string
	var s healthStart
	eventually(h.t, 2*time.Minute, "a new worker's command running", func() (bool, string) {
		all, err := healthStarts(h.dir)
		require.NoError(h.t, err)
		for k, v := range all {
			if _, ok := seen[k]; !ok {
				id, s = k, v
				return true, ""
			}
		}
		return false, fmt.Sprintf("workers so far: %v", keys(all))
	})
	seen[id] = s
	return id, s
}

// inject appends a critical Xid event for gpu to the helper's event source and returns when.
func (h *healthApp) inject(gpu string) time.Time {
	h.t.Helper()
	i, err := strconv.Atoi(gpu[len(gpu)-8:])
	require.NoError(h.t, err)
	at := time.Now()
	line := fmt.Sprintf(`{"type":"xid","uuid":%q,"index":%d,"minor":%d,"xid":94,"time":%q}`+"\n",
		gpu, i, i, at.UTC().Format(time.RFC3339Nano))
	f, err := os.OpenFile(h.events, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(h.t, err)
	_, err = f.WriteString(line)
	require.NoError(h.t, err)
	require.NoError(h.t, f.Close())
	return at
}

// quarantined is what container-launcher probe lists as quarantined on this host.
func (h *healthApp) quarantined() map[string]bool {
	h.t.Helper()
	_, launcher := amBins(h.t)
	cmd := exec.Command(launcher, "probe", "--conf", h.cfg, "--json")
	cmd.Env = append(os.Environ(), "PATH="+fakeBinDir(h.t)+":"+os.Getenv("PATH"), "XRES_FAKE_GPUS="+strconv.Itoa(healthGPUs))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	_ = cmd.Run() // a host with a device held or quarantined still reports
	var rep struct {
		Resources []struct {
			Coordination struct {
				Quarantined []struct {
					Device string `json:"device"`
				} `json:"quarantined"`
			} `json:"coordination"`
		} `json:"resources"`
	}
	require.NoError(h.t, json.Unmarshal(stdout.Bytes(), &rep), "probe --json: %s\n%s", stdout.String(), stderr.String())
	out := map[string]bool{}
	for _, r := range rep.Resources {
		for _, q := range r.Coordination.Quarantined {
			out[q.Device] = true
		}
	}
	return out
}

// clear ends gpu's quarantine (probe --clear), after emptying the event source so that no later
// watch replays the old event.
func (h *healthApp) clear(gpu string) {
	h.t.Helper()
	require.NoError(h.t, os.Truncate(h.events, 0))
	_, launcher := amBins(h.t)
	cmd := exec.Command(launcher, "probe", "--conf", h.cfg, "--clear", gpu)
	cmd.Env = append(os.Environ(), "PATH="+fakeBinDir(h.t)+":"+os.Getenv("PATH"), "XRES_FAKE_GPUS="+strconv.Itoa(healthGPUs))
	out, err := cmd.CombinedOutput()
	require.NoError(h.t, err, "probe --clear %s: %s", gpu, out)
}

// httpGetBody is the body of a GET of u (200 only).
func httpGetBody(ctx context.Context, u string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("get %s: http %d", u, resp.StatusCode)
	}
	return string(b), err
}

// percentiles is p50 and p95 (nearest rank) of ds, in seconds.
func percentiles(ds []time.Duration) (float64, float64) {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	rank := func(p float64) float64 {
		k := int(p*float64(len(s))+0.999999) - 1
		if k < 0 {
			k = 0
		}
		return s[k].Seconds()
	}
	return rank(0.50), rank(0.95)
}

// TestGPUHealthReplacesWorker: n Xids injected into the running worker's GPU, each followed by
// an ordinary failure of the replacement. Each injected worker is stopped and replaced on another
// GPU; no later worker gets a GPU while it is quarantined; the application SUCCEEDED with the
// Xid replacements not counted as failures.
func TestGPUHealthReplacesWorker(t *testing.T) {
	n := int(envInt(t, "XRES_GPU_HEALTH_INJECTIONS", 3))
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(n)*time.Minute+amWaitTimeout)
	defer cancel()
	h := startHealthApp(t, ctx, healthGPUs, true, n+5)

	seen := map[string]healthStart{}
	cur, s := h.next(seen)
	bad := map[string]bool{} // quarantined by this test, not cleared yet
	var order []string       // bad's GPUs, oldest first
	var xidTimes, failTimes []time.Duration
	replacedBy := map[string]string{} // a worker stopped by an Xid -> its replacement
	badOf := map[string]string{}      // its GPU
	check := func(id string, s healthStart) {
		require.False(t, bad[s.gpu], "worker %s got %s while it is quarantined (%v)", id, s.gpu, bad)
	}
	for i := 0; i < n; i++ {
		// The Xid: the worker is stopped, its replacement runs on a healthy GPU.
		at := h.inject(s.gpu)
		bad[s.gpu] = true
		order = append(order, s.gpu)
		id, ns := h.next(seen)
		xidTimes = append(xidTimes, ns.at.Sub(at))
		check(id, ns)
		require.True(t, h.quarantined()[s.gpu], "probe lists %s quarantined", s.gpu)
		st, err := amStatusOf(ctx, h.c, h.app)
		require.NoError(t, err)
		for _, w := range st.Containers {
			if w.Container == cur {
				require.NotNil(t, w.ExitStatus, "%+v", w)
				require.Equal(t, 216, *w.ExitStatus, "the stopped worker's launcher exits gpu-failed: %+v", w)
			}
		}
		replacedBy[cur], badOf[cur] = id, s.gpu
		cur, s = id, ns
		// The long form clears the oldest quarantines, keeping two GPUs free.
		for len(order) > healthGPUs-2 {
			h.clear(order[0])
			delete(bad, order[0])
			order = order[1:]
		}

		// An ordinary failure (exit 1), replaced the usual way.
		at = time.Now()
		require.NoError(t, os.WriteFile(filepath.Join(h.dir, "fail."+cur), nil, 0o644))
		id, ns = h.next(seen)
		failTimes = append(failTimes, ns.at.Sub(at))
		check(id, ns)
		cur, s = id, ns
	}
	for q := range bad {
		require.True(t, h.quarantined()[q], "%s still quarantined at the end", q)
	}

	// Everyone sees it: api/status, am status and the tracking page list each event (host,
	// device, Xid and its meaning, time) and its replacement.
	var st amstatus.Status
	eventually(t, time.Minute, "api/status lists every device event", func() (bool, string) {
		var err error
		st, err = amStatusOf(ctx, h.c, h.app)
		return err == nil && len(st.DeviceEvents) == n, fmt.Sprintf("%v %+v", err, st.DeviceEvents)
	})
	for _, e := range st.DeviceEvents {
		require.Equal(t, replacedBy[e.Container], e.ReplacedBy, "%+v", e)
		require.Equal(t, badOf[e.Container], e.Device, "%+v", e)
		require.Equal(t, uint64(94), e.XID)
		require.Equal(t, "replace", e.Action)
		require.NotEmpty(t, e.Host)
		require.Contains(t, e.Reason, "Xid 94 (contained ECC error) on "+e.Device)
	}
	code, stdout, stderr := runAM(t, time.Minute, "status", h.app)
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stdout, "device events (docs/gpu-health.md):")
	page, err := httpGetBody(ctx, h.c.URL("/proxy/"+url.PathEscape(h.app)+"/"))
	require.NoError(t, err)
	require.Contains(t, page, `<div id="device-events">`)
	for c, r := range replacedBy {
		require.Contains(t, stdout, c)
		require.Contains(t, page, "<td>"+c+"</td>")
		require.Contains(t, page, "<td>"+r+"</td>")
	}

	require.Equal(t, n, st.Failed, "failures counted: the %d exits 1, not the %d Xids (status %+v)", n, n, st)
	require.Equal(t, 2*n, st.Restarts, "every stopped or failed worker replaced (status %+v)", st)
	releaseAndSucceed(t, h.p, h.app, h.release)

	x50, x95 := percentiles(xidTimes)
	f50, f95 := percentiles(failTimes)
	t.Logf("replacement time over %d injections and %d ordinary failures (event or failure to the replacement's command running):", n, n)
	t.Logf("  %-28s p50 %6.2f s  p95 %6.2f s  all %v", "Xid on the worker's GPU", x50, x95, xidTimes)
	t.Logf("  %-28s p50 %6.2f s  p95 %6.2f s  all %v", "ordinary failure (exit 1)", f50, f95, failTimes)
}

// TestGPUHealthUnwatched: the same injection without the watch (no xres-nvml where the launcher
// looks): nothing notices the Xid, the worker runs on, and once it crashes (as a worker on a
// failed GPU does) its replacement is handed the bad GPU again; nothing is quarantined.
func TestGPUHealthUnwatched(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), amWaitTimeout)
	defer cancel()
	h := startHealthApp(t, ctx, 1, false, 5)
	seen := map[string]healthStart{}
	cur, s := h.next(seen)
	h.inject(s.gpu)
	st, err := amStatusOf(ctx, h.c, h.app)
	require.NoError(t, err)
	require.Contains(t, runningWorkers(st), cur, "the worker runs on after the Xid")
	require.NoError(t, os.WriteFile(filepath.Join(h.dir, "fail."+cur), nil, 0o644))
	id, ns := h.next(seen)
	require.Equal(t, s.gpu, ns.gpu, "replacement %s of %s lands on the GPU that failed", id, cur)
	require.Empty(t, h.quarantined(), "nothing quarantined without the watch")
	releaseAndSucceed(t, h.p, h.app, h.release)
}
