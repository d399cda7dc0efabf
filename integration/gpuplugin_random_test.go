//go:build integration

package integration

// The randomized check of YARN's GPU assignment on the real minicluster (issue
// 40): YARN's own GpuResourceAllocator (or the pluggable device framework)
// gives containers their GPUs; xres's container-launcher runs many times in
// each container and must put every worker on exactly the GPUs YARN assigned
// that container at that moment.
//
// Three DistributedShell applications run at once, asking for 1, 2 and 3 GPUs
// per container (6 GPUs in all on the NodeManager); YARN starts and ends
// their containers in whatever order its scheduler and the applications'
// progress give. Each container runs container-launcher (amount = the
// container's GPUs) one launch after another; each launch's worker records
// its CUDA_VISIBLE_DEVICES, what its nvidia-smi lists and the NodeManager's
// REST answer at that moment (while the container is alive, so its
// assignment is listed), then exits, or is killed -9, or kills its launcher
// -9 (the next launch in that container must still get YARN's GPUs: the dead
// holder's reservation in the host state is reclaimed). The seed fixes how
// many launches each container makes and which are killed; the order in
// which YARN runs the containers is YARN's.
//
// make yarn-random-cluster: XRES_YARN_RANDOM_CLUSTER_LAUNCHES (default 1000)
// per mode of XRES_YARN_RANDOM_CLUSTER_MODES (default plugin, isolated,
// docker, pluggable; "plugin-off": the launcher told not to ask YARN, where the
// check must find bad launches), seed XRES_YARN_RANDOM_CLUSTER_SEED (default: the time;
// printed). The short form (30 launches, plugin) runs inside
// TestYARNAssignedGPUs/plugin on that test's cluster.

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/integration/harness"
)

// randomLaunchesPerContainer is the mean number of launches a container makes
// (each makes from 3/4 to 5/4 times as many, by the seed); fewer in the short
// form.
const randomLaunchesPerContainer = 20

// randomContainerScript writes the shell script a DistributedShell container
// of amount GPUs runs: launches launcher runs of container-launcher, each with
// a worker that records what it sees.
func randomContainerScript(t testing.TB, dir, launcher, cfg, resource string, amount int, seed int64, mean int) string {
	worker := filepath.Join(dir, "random-worker.sh")
	require.NoError(t, os.WriteFile(worker, []byte(`#!/bin/sh
f="`+dir+`/launch.$CONTAINER_ID.$XRES_RANDOM_LAUNCH"
{
	echo "cuda=$CUDA_VISIBLE_DEVICES"
	nvidia-smi --query-gpu=index,uuid --format=csv,noheader | sed 's/^/view=/'
	printf 'rest='
	curl -sS -H 'Accept: application/json' "http://$NM_HOST:$NM_HTTP_PORT/ws/v1/node/resources/`+strings.ReplaceAll(resource, "/", "%2F")+`"
	echo
} > "$f.tmp" 2>&1
mv "$f.tmp" "$f"
case $XRES_RANDOM_ACT in
kill) kill -9 $$ ;;
killlauncher)
	echo $$ > "`+dir+`/worker.$CONTAINER_ID"
	kill -9 $PPID
	;;
esac
exit 0
`), 0o755))
	p := filepath.Join(dir, fmt.Sprintf("random-container-%d.sh", amount))
	// The container's sequence number (CONTAINER_ID's last field) and the
	// seed pick its launch count (3*mean/4 .. 5*mean/4) and each launch's end:
	// 1 in 8 the worker is killed -9, 1 in 8 it kills its launcher -9.
	script := `#!/bin/sh
seed=` + strconv.FormatInt(seed%1000003, 10) + `
amount=` + strconv.Itoa(amount) + `
seq=$(expr "${CONTAINER_ID##*_}" + 0)
h=$(( (seed * 31 + seq * 7919 + amount * 104729) % 1000003 ))
n=$(( ` + strconv.Itoa(mean*3/4) + ` + h % (` + strconv.Itoa(mean*5/4-mean*3/4) + ` + 1) ))
i=0
while [ $i -lt $n ]; do
	r=$(( (h + i * 2654435761) % 1000003 % 8 ))
	act=exit
	[ $r -eq 0 ] && act=kill
	[ $r -eq 1 ] && act=killlauncher
	XRES_RANDOM_LAUNCH=$i XRES_RANDOM_ACT=$act '` + launcher + `' --conf '` + cfg + `' \
		-Dexternal-resource.gpu.amount=$amount --log-level warn -- sh '` + worker + `' 2>>"` + dir + `/launcher.$CONTAINER_ID.err"
	rc=$?
	# A worker whose launcher was killed -9 lives on, holding its GPUs, until
	# it exits: the next launch waits for that (an orphan still on the GPUs
	# makes the next launch fail with "not enough devices", rightly).
	if [ $act = killlauncher ] && [ -e "` + dir + `/worker.$CONTAINER_ID" ]; then
		w=$(cat "` + dir + `/worker.$CONTAINER_ID")
		# (its state in /proc/PID/stat: gone, or Z once it exited)
		while st=$(cut -d' ' -f3 "/proc/$w/stat" 2>/dev/null) && [ "$st" != Z ]; do sleep 0.05; done
		rm -f "` + dir + `/worker.$CONTAINER_ID"
	fi
	echo "$i $act $rc" >> "` + dir + `/rc.$CONTAINER_ID"
	i=$((i + 1))
done
exit 0
`
	require.NoError(t, os.WriteFile(p, []byte(script), 0o755))
	return p
}

// randomLaunch is one recorded launch.
type randomLaunch struct {
	container string
	cuda      string
	view      map[string]string
	rest      string
}

// randomFigures is one run's outcome.
type randomFigures struct {
	Mode     string
	Seed     int64
	Launches int // workers that ran and recorded
	Bad      int // launches on a GPU YARN had not assigned to that container, or not on all of its GPUs
	Failed   int // launcher exits 210-215 (usage, config, discovery, start, internal, assignment)
	Killed   int // launches whose worker was killed -9 or killed its launcher -9
	Duration time.Duration
}

// runRandomLaunches runs the randomized check with at least launches launches on c
// (a cluster in mode with one NodeManager of gpuTotal GPUs) and returns its figures.
// off: the launcher told not to ask YARN (param.yarn.assignment: off, host
// coordination as before issue 40): the check must then find bad launches.
func runRandomLaunches(t *testing.T, c *harness.Cluster, mode string, launches int, seed int64, off bool) randomFigures {
	t.Helper()
	start := time.Now()
	resource := gpuResource(mode)
	mean := randomLaunchesPerContainer
	if launches < 100 {
		mean = 8
	}
	// Containers per application (3 applications, amounts 1, 2, 3), enough
	// for launches even where every container makes the fewest.
	perApp := int(math.Ceil(float64(launches) / float64(3*(mean*3/4))))
	t.Logf("randomized check, mode %s: seed %d (XRES_YARN_RANDOM_CLUSTER_SEED=%d replays the plan), at least %d launches: 3 DistributedShell applications (1, 2, 3 %s per container) of %d containers, about %d launches each",
		mode, seed, seed, launches, resource, perApp, mean)
	dir := t.TempDir()
	launcher := harness.BuildBinary(t, "github.com/xres/xres/cmd/container-launcher")
	cfg := filepath.Join(dir, "flink-conf.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte(strings.Join([]string{
		"external-resources: gpu",
		"external-resource.gpu.amount: 1",
		"external-resource.gpu.yarn.config-key: " + resource,
		"external-resource.gpu.driver-factory.class: org.apache.flink.externalresource.gpu.GPUDriverFactory",
		"external-resource.gpu.param.discovery.source: nvidia-smi",
		"external-resource.gpu.param.coordination.file: " + filepath.Join(dir, "coordination.state"),
		"external-resource.gpu.param.yarn.assignment: " + map[bool]string{false: "auto", true: "off"}[off],
	}, "\n")+"\n"), 0o644))
	path := fakeBinDir(t) + ":/usr/local/bin:/usr/bin:/bin"
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Minute)
	defer cancel()

	// The recorded launches must outnumber what the plan guarantees at least.
	_, assigned, _, err := allGPUs(ctx, c, 1, resource)
	require.NoError(t, err)
	require.Empty(t, assigned, "GPUs assigned before the randomized check")
	var apps []string
	for amount := 1; amount <= 3; amount++ {
		script := randomContainerScript(t, dir, launcher, cfg, resource, amount, seed, mean)
		app := startDShellN(t, ctx, c, perApp, resource, amount, script, path)
		c.KeepAppLogs(t, app)
		killOnCleanup(t, c, app, "")
		apps = append(apps, app)
	}
	eventually(t, 45*time.Minute, "the 3 DistributedShell applications ended", func() (bool, string) {
		var states []string
		done := true
		for _, app := range apps {
			a, err := getRMApp(ctx, c, app)
			if err != nil {
				return false, err.Error()
			}
			states = append(states, app+" "+a.State)
			done = done && isTerminal(a.State)
		}
		n, _ := filepath.Glob(filepath.Join(dir, "launch.container_*"))
		return done, fmt.Sprintf("%s; %d launches recorded", strings.Join(states, ", "), len(n))
	})

	f := randomFigures{Mode: mode, Seed: seed}
	files, err := filepath.Glob(filepath.Join(dir, "launch.container_*"))
	require.NoError(t, err)
	var bad []string
	for _, p := range files {
		if strings.HasSuffix(p, ".tmp") {
			continue
		}
		name := strings.TrimPrefix(filepath.Base(p), "launch.")
		container := name[:strings.LastIndex(name, ".")]
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		l := randomLaunch{container: container, view: map[string]string{}}
		for _, line := range strings.Split(string(b), "\n") {
			switch {
			case strings.HasPrefix(line, "cuda="):
				l.cuda = strings.TrimPrefix(line, "cuda=")
			case strings.HasPrefix(line, "view="):
				if idx, uuid, ok := strings.Cut(strings.TrimPrefix(line, "view="), ", "); ok {
					l.view[idx] = uuid
				}
			case strings.HasPrefix(line, "rest="):
				l.rest = strings.TrimPrefix(line, "rest=")
			}
		}
		f.Launches++
		if why := checkRandomLaunch(l, resource); why != "" {
			f.Bad++
			bad = append(bad, fmt.Sprintf("%s: %s", filepath.Base(p), why))
		}
	}
	rcs, err := filepath.Glob(filepath.Join(dir, "rc.container_*"))
	require.NoError(t, err)
	var failed []string
	for _, p := range rcs {
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			fs := strings.Fields(line)
			if len(fs) != 3 {
				continue
			}
			if fs[1] != "exit" {
				f.Killed++
			}
			if rc, _ := strconv.Atoi(fs[2]); rc >= 210 && rc <= 215 {
				f.Failed++
				container := strings.TrimPrefix(filepath.Base(p), "rc.")
				errs, _ := os.ReadFile(filepath.Join(dir, "launcher."+container+".err"))
				failed = append(failed, fmt.Sprintf("%s launch %s: exit %d: %s", container, fs[0], rc, tailString(string(errs), 3)))
			}
		}
	}
	f.Duration = time.Since(start)
	t.Logf("randomized check, mode %s, seed %d: %d launches (%d killed -9 or killing their launcher -9), %d on a GPU YARN did not assign to their container, %d launcher failures, %s",
		mode, seed, f.Launches, f.Killed, f.Bad, f.Failed, f.Duration.Round(time.Second))
	sort.Strings(bad)
	if off {
		require.NotEmpty(t, bad, "with param.yarn.assignment: off every launch was on its container's GPUs (seed %d): the check cannot fail", seed)
		t.Logf("as expected with the assignment off, e.g. %s", bad[0])
		return f
	}
	require.Empty(t, bad, "launches on GPUs YARN did not assign to their container (seed %d)", seed)
	require.Empty(t, failed, "launcher failures (seed %d)", seed)
	require.GreaterOrEqual(t, f.Launches, launches, "launches recorded (seed %d)", seed)
	eventually(t, 2*time.Minute, "YARN frees every GPU once the applications ended", func() (bool, string) {
		_, a, _, err := allGPUs(ctx, c, 1, resource)
		if err != nil {
			return false, err.Error()
		}
		return len(a) == 0, fmt.Sprintf("%+v", a)
	})
	return f
}

// checkRandomLaunch says what is wrong with one launch: its GPUs (the UUIDs
// of its CUDA_VISIBLE_DEVICES, or the UUIDs its nvidia-smi lists under those
// indices) must be exactly those the NodeManager's REST listed, at that
// moment, as its container's.
func checkRandomLaunch(l randomLaunch, resource string) string {
	_, assigned, err := decodeNMGPUs(strings.NewReader(l.rest), resource)
	if err != nil {
		return fmt.Sprintf("the NodeManager's REST answer %q: %v", tailString(l.rest, 1), err)
	}
	var want []string
	for _, g := range assigned {
		if g.ContainerID == l.container {
			want = append(want, fmt.Sprintf("0/%d", g.HostIndex))
		}
	}
	if l.cuda == "" {
		return fmt.Sprintf("no CUDA_VISIBLE_DEVICES; YARN assigned %v", want)
	}
	var got []string
	for _, dev := range strings.Split(l.cuda, ",") {
		uuid := dev
		if !strings.HasPrefix(dev, "GPU-") {
			var ok bool
			if uuid, ok = l.view[dev]; !ok {
				return fmt.Sprintf("CUDA_VISIBLE_DEVICES=%s names index %s, which its nvidia-smi does not list (%v)", l.cuda, dev, l.view)
			}
		}
		k, _, err := gpuOfUUID(uuid)
		if err != nil {
			return err.Error()
		}
		got = append(got, k)
	}
	sort.Strings(got)
	sort.Strings(want)
	if strings.Join(got, ",") != strings.Join(want, ",") {
		return fmt.Sprintf("on GPUs %v (CUDA_VISIBLE_DEVICES=%s), YARN assigned its container %v", got, l.cuda, want)
	}
	return ""
}
