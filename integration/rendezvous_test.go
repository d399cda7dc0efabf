//go:build integration

package integration

// Worker-group rendezvous (issue 26) on the real cluster: a torchrun-style
// ring (stdlib Python, testdata/ring/ring.py) started as a gang, restarted
// as a gang when one rank is killed -9; and a gang that cannot be complete
// because another application holds half the GPUs times out with the
// reason instead of deadlocking.

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/integration/harness"
	"github.com/xres/xres/yarn/amstatus"
	"github.com/xres/xres/yarn/amweb"
)

// ringScript is the ring worker, absolute.
func ringScript(t *testing.T) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("testdata", "ring", "ring.py"))
	require.NoError(t, err)
	return p
}

// ringResult is one rank's result file.
type ringResult struct {
	container   string
	rank, world int
	sum, pid    int
}

// ringResults reads dir/result.* (those of containers not in skip).
func ringResults(t *testing.T, dir string, skip map[string]bool) []ringResult {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "result.container_*"))
	require.NoError(t, err)
	var out []ringResult
	for _, f := range files {
		id := strings.TrimPrefix(filepath.Base(f), "result.")
		if skip[id] || strings.HasSuffix(id, ".tmp") {
			continue
		}
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		r := ringResult{container: id}
		for _, kv := range strings.Fields(string(b)) {
			k, v, _ := strings.Cut(kv, "=")
			n, err := strconv.Atoi(v)
			require.NoError(t, err, "%s: %s", f, b)
			switch k {
			case "rank":
				r.rank = n
			case "world":
				r.world = n
			case "sum":
				r.sum = n
			case "pid":
				r.pid = n
			}
		}
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].rank < out[j].rank })
	return out
}

// requireRingAgrees checks 4 results, ranks 0-3, each of world 4 and sum 6.
func requireRingAgrees(t *testing.T, rs []ringResult) {
	t.Helper()
	require.Len(t, rs, 4, "%+v", rs)
	for i, r := range rs {
		require.Equal(t, ringResult{container: r.container, rank: i, world: 4, sum: 0 + 1 + 2 + 3, pid: r.pid}, r, "%+v", rs)
	}
}

// ringConf is a gang "ring" of 4 ranks with a port each and torch's
// environment. The fake nvidia-smi shows 4 GPUs and both NodeManagers (one
// host) share the coordination file, so the 4 workers get 4 distinct GPUs.
func ringConf(t *testing.T, dir string, extra ...string) string {
	return writeAMConf(t, dir, 4, append([]string{
		"xres.worker-groups: ring",
		"xres.worker-group.ring.workers: 4",
		"xres.worker-group.ring.port: auto",
		"xres.worker-group.ring.gang: true",
		"xres.rendezvous: torch",
	}, extra...)...)
}

// A gang of 4 ranks (one GPU each, all 4 GPUs of the 2 NodeManagers) runs
// the ring: every rank agrees on the sum 0+1+2+3. One rank's worker is
// killed -9: the AM stops the other three (uncounted) and starts the gang
// again; the 4 new ranks (new containers) agree again. The application
// then succeeds with 1 failure counted.
func TestRendezvousGangRingRestarts(t *testing.T) {
	c := harness.Get(t)
	dir := t.TempDir()
	cfg := ringConf(t, dir)
	release := filepath.Join(dir, "release")
	ctx, cancel := context.WithTimeout(context.Background(), faultTimeout)
	defer cancel()
	p := startAM(t, ctx, "submit", "--conf", cfg, "--name", "xres-it-ring", "--", "python3", ringScript(t), dir)
	app := p.appID(t)
	c.KeepAppLogs(t, app)
	killOnCleanup(t, c, app, release)

	var first []ringResult
	eventually(t, 3*time.Minute, "the 4 ranks agree on the sum", func() (bool, string) {
		requireRunning(t, p)
		first = ringResults(t, dir, nil)
		return len(first) == 4, fmt.Sprintf("%+v", first)
	})
	requireRingAgrees(t, first)
	seen := map[string]bool{}
	for _, r := range first {
		seen[r.container] = true
	}

	// kill -9 rank 2's worker (the python process; its launcher passes
	// the signal's exit code on and the container fails).
	victim := first[2]
	t.Logf("killing rank %d: pid %d of %s", victim.rank, victim.pid, victim.container)
	require.NoError(t, syscall.Kill(victim.pid, syscall.SIGKILL))

	var again []ringResult
	eventually(t, 3*time.Minute, "a new gang of 4 ranks agrees again", func() (bool, string) {
		requireRunning(t, p)
		again = ringResults(t, dir, seen)
		return len(again) == 4, fmt.Sprintf("%+v", again)
	})
	requireRingAgrees(t, again)

	st, err := amStatusOf(ctx, c, app)
	require.NoError(t, err)
	require.Equal(t, 1, st.Failed, "only the killed rank counts as a failure: %+v", st.Groups)
	require.Equal(t, 4, st.Restarts, "the whole gang was replaced: %+v", st.Groups)
	releaseAndSucceed(t, p, app, release)
}

// Another application holds 2 of the cluster's 4 GPUs; a gang of 4 (one
// GPU each) can get only 2. After xres.gang.timeout (20 s) the gang
// application fails naming the group, 2 of 4 allocated and the missing
// ranks, and gives its containers back; the holder runs on, untouched.
func TestRendezvousGangTimesOutAgainstHolder(t *testing.T) {
	c := harness.Get(t)
	dir := t.TempDir()
	holdDir := t.TempDir()
	holdCfg := writeAMConf(t, holdDir, 4)
	release := filepath.Join(holdDir, "release")
	ctx, cancel := context.WithTimeout(context.Background(), faultTimeout)
	defer cancel()
	holder := startAM(t, ctx, append([]string{"submit", "--conf", holdCfg, "--workers", "2", "--name", "xres-it-gpu-holder", "--"}, waitWorker(release)...)...)
	holdApp := holder.appID(t)
	killOnCleanup(t, c, holdApp, release)
	eventually(t, 3*time.Minute, "the holder runs 2 workers", func() (bool, string) {
		requireRunning(t, holder)
		st, err := amStatusOf(ctx, c, holdApp)
		if err != nil {
			return false, err.Error()
		}
		return st.Running == 2, fmt.Sprintf("%+v", st.Containers)
	})

	// The gang coordination file must be the holder's too: both take GPUs
	// of the same hosts.
	cfg := ringConf(t, dir, "xres.gang.timeout: 20 s",
		"external-resource.gpu.param.coordination.file: "+filepath.Join(holdDir, "coordination.state"))
	p := startAM(t, ctx, "submit", "--conf", cfg, "--name", "xres-it-gang-timeout", "--", "python3", ringScript(t), dir)
	app := p.appID(t)
	c.KeepAppLogs(t, app)
	killOnCleanup(t, c, app, filepath.Join(dir, "release"))

	code := p.wait(t)
	require.Equal(t, 1, code, "am submit exit code for a gang that timed out\n%s", p.output())
	require.Contains(t, p.stdout.String(), app+" finished: FINISHED FAILED", p.output())
	a, err := getRMApp(ctx, c, app)
	require.NoError(t, err)
	require.Equal(t, "FAILED", a.FinalStatus)
	t.Logf("diagnostics: %s", a.Diagnostics)
	for _, want := range []string{"gang start of worker group ring timed out after 20s (xres.gang.timeout)", "2 of 4 workers allocated", "ranks without a ready worker: 2, 3"} {
		require.Contains(t, a.Diagnostics, want)
	}
	results, _ := filepath.Glob(filepath.Join(dir, "result.*"))
	require.Empty(t, results, "no rank of an incomplete gang ran its command")

	// The holder was never disturbed.
	st, err := amStatusOf(ctx, c, holdApp)
	require.NoError(t, err)
	require.Equal(t, 2, st.Running, "%+v", st.Containers)
	require.Zero(t, st.Failed, "%+v", st.Containers)
	releaseAndSucceed(t, holder, holdApp, release)
}

// A group whose worker picks its own port (xres.worker-group.srv.port: worker): the server binds
// port 0 and writes the number into $XRES_PORT_FILE 2 s after it started; the 2 clients
// (depends-on: srv) start only then, with XRES_SRV_ADDRESSES naming that host:port, and read the
// server's greeting there. api/status lists the address, api/workers (unsigned) only the counts.
func TestRendezvousWorkerPicksItsPort(t *testing.T) {
	c := harness.Get(t)
	dir := t.TempDir()
	script := func(name string) string {
		p, err := filepath.Abs(filepath.Join("testdata", "portworker", name))
		require.NoError(t, err)
		return p
	}
	cfg := writeAMConf(t, dir, 4,
		"xres.worker-groups: srv;cli",
		"xres.worker-group.srv.workers: 1",
		"xres.worker-group.srv.port: worker",
		"xres.worker-group.srv.command: python3 "+script("server.py")+" "+dir,
		"xres.worker-group.cli.workers: 2",
		"xres.worker-group.cli.depends-on: srv",
		"xres.worker-group.cli.command: python3 "+script("client.py")+" "+dir,
	)
	release := filepath.Join(dir, "release")
	ctx, cancel := context.WithTimeout(context.Background(), faultTimeout)
	defer cancel()
	p := startAM(t, ctx, "submit", "--conf", cfg, "--name", "xres-it-port-worker", "--", "false")
	app := p.appID(t)
	c.KeepAppLogs(t, app)
	killOnCleanup(t, c, app, release)

	var got []string
	eventually(t, 3*time.Minute, "both clients read the server's greeting", func() (bool, string) {
		requireRunning(t, p)
		files, err := filepath.Glob(filepath.Join(dir, "client.container_*"))
		require.NoError(t, err)
		got = got[:0]
		for _, f := range files {
			if strings.HasSuffix(f, ".tmp") {
				continue
			}
			b, err := os.ReadFile(f)
			require.NoError(t, err)
			got = append(got, string(b))
		}
		return len(got) == 2, fmt.Sprint(got)
	})
	addr, err := os.ReadFile(filepath.Join(dir, "server.addr"))
	require.NoError(t, err)
	for _, g := range got {
		require.Equal(t, string(addr)+" hello from the server", g, "a client's XRES_SRV_ADDRESSES and what it read there")
	}
	// api/workers, readable by anyone, gives the counts without the address (only a launcher's
	// signed request gets it); the status, behind the RM's view ACLs, lists it.
	var counts amstatus.WorkerCount
	require.NoError(t, restGet(ctx, c, "/proxy/"+url.PathEscape(app)+amweb.PathWorkers, &counts))
	st, err := amStatusOf(ctx, c, app)
	require.NoError(t, err)
	seen := false
	for _, g := range counts.Groups {
		if g.Name == "srv" {
			seen = true
			require.Empty(t, g.Addresses, "api/workers: %+v", counts)
		}
	}
	require.True(t, seen, "api/workers: %+v", counts)
	for _, g := range st.Groups {
		if g.Name == "srv" {
			require.Equal(t, []string{string(addr)}, g.Addresses, "api/status: %+v", st.Groups)
		}
	}
	require.Zero(t, st.Failed, "no client started before the port was known (it would have failed): %+v", st.Containers)
	releaseAndSucceed(t, p, app, release)
}
