package amcli

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/resources"
	"github.com/xres/xres/yarn"
	"github.com/xres/xres/yarn/amstatus"
	"github.com/xres/xres/yarn/amweb"
)

func exitp(n int) *int { return &n }

var endedWorkers = []amstatus.WorkerStatus{
	{Container: "container_1700000000000_0003_01_000002", Node: "127.0.0.2:45454", NodeHTTP: "127.0.0.2:8042", Host: "127.0.0.2",
		State: amstatus.StateSucceeded, ExitStatus: exitp(0), Devices: map[string][]resources.Properties{"gpu": {{"index": "0"}}}},
	{Container: "container_1700000000000_0003_01_000003", Node: "127.0.0.3:45454", NodeHTTP: "127.0.0.3:8042", Host: "127.0.0.3",
		State: amstatus.StateFailed, ExitStatus: exitp(resources.LauncherExitDiscovery), Diagnostics: "exit code 212\nlast stderr lines: no free GPU"},
	{Container: "container_1700000000000_0003_01_000004", Node: "127.0.0.3:45454", Host: "127.0.0.3",
		State: amstatus.StateFailed, ExitStatus: exitp(3), Diagnostics: "exit code 3; last 1 stderr lines:\nTraceback: CUDA out of memory"},
}

func TestWorkerLinesRoundTrip(t *testing.T) {
	diag := withWorkers("1 of 3 workers failed\n", endedWorkers)
	rest, back := splitWorkers(diag)
	require.Equal(t, "1 of 3 workers failed", rest)
	want := append([]amstatus.WorkerStatus(nil), endedWorkers...)
	for i := range want {
		want[i].Diagnostics = firstLine(want[i].Diagnostics, maxWorkerDiag)
	}
	require.Equal(t, want, back)

	// Many workers stay bounded, well below the RM's 64 KiB limit.
	many := make([]amstatus.WorkerStatus, 5000)
	for i := range many {
		many[i] = amstatus.WorkerStatus{Container: fmt.Sprintf("container_1700000000000_0003_01_%06d", i), Node: "h:1", State: amstatus.StateFailed,
			ExitStatus: exitp(1), Diagnostics: strings.Repeat("x", 5000)}
	}
	diag = withWorkers("", many)
	require.Less(t, len(diag), 64<<10)
	require.Contains(t, diag, fmt.Sprintf("(%d more workers not listed)", 5000-maxWorkerLines))
}

func FuzzSplitWorkers(f *testing.F) {
	f.Add(withWorkers("done", endedWorkers))
	f.Add("xres-worker {")
	f.Add("xres-worker {\"container\":\"\"}\nplain")
	f.Fuzz(func(t *testing.T, diag string) {
		rest, workers := splitWorkers(diag)
		for _, w := range workers {
			require.NotEmpty(t, w.Container)
		}
		require.LessOrEqual(t, len(rest), len(diag))
	})
}

// After the application ends the AM is gone: am status lists the workers
// from the final diagnostics, each failed one with its exit code and reason.
func TestStatusAfterTheEndKeepsTheWorkers(t *testing.T) {
	rm := &clientRM{states: []string{"FINISHED"},
		final: "FAILED", diag: withWorkers("1 worker failed", endedWorkers)}
	d := clientDeps(t, rm, &diskFS{})
	code, out, stderr := runAm(t, d, nil, "status", "application_1700000000000_0003")
	require.Equal(t, ExitOK, code, stderr)
	require.Contains(t, out, "diagnostics   1 worker failed\n")
	require.NotContains(t, out, workerLinePrefix)
	require.Regexp(t, `container_1700000000000_0003_01_000002 +127\.0\.0\.2:45454 +SUCCEEDED +0 +gpu=0`, out)
	require.Regexp(t, `container_1700000000000_0003_01_000003 +127\.0\.0\.3:45454 +FAILED +212 +-`, out)
	require.Contains(t, out, "container_1700000000000_0003_01_000003 failed with exit 212: container-launcher: discovery (discovery failed on this host")
	require.Contains(t, out, "container_1700000000000_0003_01_000004 failed with exit 3: exit code 3; last 1 stderr lines:")

	code, out, _ = runAm(t, d, nil, "status", "--json", "application_1700000000000_0003")
	require.Equal(t, ExitOK, code)
	var st statusJSON
	require.NoError(t, json.Unmarshal([]byte(out), &st))
	require.Len(t, st.Workers, 3)
	require.Equal(t, 212, *st.Workers[1].ExitStatus)
	require.Equal(t, "1 worker failed", st.Diagnostics)
}

func TestKillAlreadyEnded(t *testing.T) {
	rm := &clientRM{states: []string{"KILLED"},
		final: "KILLED"}
	code, out, stderr := runAm(t, clientDeps(t, rm, &diskFS{}), nil, "kill", "application_1700000000000_0003")
	require.Equal(t, ExitAppFailed, code, stderr)
	require.Equal(t, "application_1700000000000_0003 had already ended (KILLED, final status KILLED): nothing killed\n", out)
	require.Empty(t, rm.killed)
}

// Without HADOOP_CONF_DIR, or with one that is no Hadoop configuration
// (missing, a file, no site file, a malformed one), the client is
// misconfigured, not the cluster down: exit 3 (the README's table), the
// message naming the directory (conf.HadoopConfError).
func TestNoHadoopConfIsAConfigError(t *testing.T) {
	d := defaultDeps()
	exe, err := os.Executable()
	require.NoError(t, err)
	bad := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(bad, "yarn-site.xml"), []byte("<configuration><property>"), 0o644))
	dirs := map[string]string{
		"unset":     "",
		"missing":   "/nonexistent",
		"a file":    exe,
		"empty":     t.TempDir(),
		"malformed": bad,
	}
	commands := [][]string{{"status", "application_1700000000000_0003"}, {"list"}, {"cluster"}, {"kill", "application_1700000000000_0003"},
		{"logs", "application_1700000000000_0003"}, {"submit", "--conf", "testdata/flink-conf.yaml", "--", "true"}}
	for what, dir := range dirs {
		for _, args := range commands {
			t.Run(what+" "+args[0], func(t *testing.T) {
				code, _, stderr := runAm(t, d, map[string]string{"HADOOP_USER_NAME": "alice", "HADOOP_CONF_DIR": dir, "XRES_LAUNCHER": exe}, args...)
				require.Equal(t, ExitConfig, code, stderr)
				require.Contains(t, stderr, "HADOOP_CONF_DIR")
				if dir != "" {
					require.Contains(t, stderr, "load hadoop configuration "+dir+" (from HADOOP_CONF_DIR): ", "the directory is named")
				}
			})
		}
	}
}

func TestList(t *testing.T) {
	rm := &clientRM{apps: []yarn.ApplicationReport{
		{ID: "application_1700000000000_0004", Name: "train", User: "bob", Queue: "gpu", State: "ACCEPTED", FinalStatus: "UNDEFINED"},
		{ID: "application_1700000000000_0002", Name: "etl", User: "alice", Queue: "default", State: "RUNNING", FinalStatus: "UNDEFINED",
			Progress: 0.25, TrackingURL: "http://rm:8088/proxy/application_1700000000000_0002/"},
	}}
	d := clientDeps(t, rm, &diskFS{})
	code, out, stderr := runAm(t, d, nil, "list")
	require.Equal(t, ExitOK, code, stderr)
	require.Equal(t, [][]string{{"XRES"}, activeStates}, rm.listed)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Equal(t, "xres applications (running): 2", lines[0])
	require.Regexp(t, `^APPLICATION +NAME +USER +QUEUE +STATE +FINAL-STATUS +PROGRESS +TRACKING-URL$`, lines[1])
	require.Regexp(t, `^application_1700000000000_0002 +etl +alice +default +RUNNING +UNDEFINED +25% +http://rm:8088/proxy/`, lines[2])
	require.Regexp(t, `^application_1700000000000_0004 +train +bob +gpu +ACCEPTED`, lines[3])

	rm.listed = nil
	code, out, _ = runAm(t, d, nil, "list", "--all", "--json")
	require.Equal(t, ExitOK, code)
	require.Equal(t, [][]string{{"XRES"}, nil}, rm.listed)
	var got []listJSON
	require.NoError(t, json.Unmarshal([]byte(out), &got))
	require.Len(t, got, 2)

	code, _, stderr = runAm(t, d, nil, "list", "extra")
	require.Equal(t, ExitUsage, code)
	require.Contains(t, stderr, `unexpected argument "extra"`)
}

func TestLogs(t *testing.T) {
	// A NodeManager web service serving the workers' logs.
	nm := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, file, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/ws/v1/node/containerlogs/"), "/")
		fmt.Fprintf(w, "%s of %s\nline 2\n", file, id)
	}))
	defer nm.Close()
	host := strings.TrimPrefix(nm.URL, "http://")
	workers := []amstatus.WorkerStatus{
		{Container: "container_1700000000000_0003_01_000002", Node: "127.0.0.1:45454", NodeHTTP: host, State: amstatus.StateSucceeded, ExitStatus: exitp(0)},
		{Container: "container_1700000000000_0003_01_000003", Node: "127.0.0.1:45455", NodeHTTP: host, State: amstatus.StateSucceeded, ExitStatus: exitp(0)},
	}
	ended := []string{"FINISHED"}

	t.Run("aggregation off: from the NodeManagers", func(t *testing.T) {
		rm := &clientRM{states: ended, final: "SUCCEEDED", diag: withWorkers("ok", workers)}
		code, out, stderr := runAm(t, clientDeps(t, rm, &diskFS{}), nil, "logs", "application_1700000000000_0003")
		require.Equal(t, ExitOK, code, stderr)
		require.Contains(t, stderr, "log aggregation is off")
		for _, w := range workers {
			require.Contains(t, out, "Container: "+w.Container+" on "+w.Node+"\n")
			for _, f := range []string{"stdout", "stderr"} {
				require.Contains(t, out, "LogType: "+f+"\n"+f+" of "+w.Container+"\nline 2\nEnd of LogType: "+f+"\n")
			}
		}
	})
	// aggregation on: TestLogsAggregated (aggrlogs_test.go)
	t.Run("no NodeManager serves them", func(t *testing.T) {
		gone := []amstatus.WorkerStatus{{Container: "container_1700000000000_0003_01_000002", Node: "127.0.0.1:45454", NodeHTTP: "127.0.0.1:1"}}
		rm := &clientRM{states: ended, diag: withWorkers("ok", gone)}
		code, _, stderr := runAm(t, clientDeps(t, rm, &diskFS{}), nil, "logs", "application_1700000000000_0003")
		require.Equal(t, ExitCluster, code)
		require.Contains(t, stderr, "no NodeManager served the logs")
	})
}

// am status of a running application with worker groups: the counts with
// a line per group (running/target, minimum, failed/limit, restarts,
// profile) and the worker list with each worker's group.
func TestStatusShowsGroups(t *testing.T) {
	gpu := yarn.Resource{MemoryMB: 8192, VCores: 1, Extra: map[string]int64{"yarn.io/gpu": 4}}
	fpga := yarn.Resource{MemoryMB: 2048, VCores: 1, Extra: map[string]int64{"yarn.io/fpga": 1}}
	st := amstatus.Status{App: "application_1700000000000_0003", State: "RUNNING", Workers: 5, Minimum: 3, Running: 4, Failed: 1, Restarts: 1, MaxFailed: 5,
		Groups: []amstatus.GroupStatus{
			{Name: "trainer", Workers: 2, Minimum: 1, Reactive: true, Running: 1, Pending: 1, Failed: 1, Restarts: 1, MaxFailed: 2, Profile: gpu},
			{Name: "prep", Workers: 3, Minimum: 2, Reactive: true, Running: 3, MaxFailed: 3, Profile: fpga}},
		Containers: []amstatus.WorkerStatus{
			{Container: "container_1700000000000_0003_01_000002", Node: "127.0.0.2:45454", Group: "trainer", State: amstatus.StateRunning,
				Devices: map[string][]resources.Properties{"gpu": {{"index": "0"}, {"index": "1"}, {"index": "2"}, {"index": "3"}}}},
			{Container: "container_1700000000000_0003_01_000003", Node: "127.0.0.3:45454", Group: "prep", State: amstatus.StateRunning,
				Devices: map[string][]resources.Properties{"fpga": {{"index": "0"}}}},
		}}
	amSrv := httptest.NewServer(amweb.NewTracker(staticStatus{st}, nil))
	defer amSrv.Close()
	rm := &clientRM{tracking: amSrv.URL + "/", states: []string{"RUNNING"}}
	code, out, stderr := runAm(t, clientDeps(t, rm, &diskFS{}), nil, "status", "application_1700000000000_0003")
	require.Equal(t, ExitOK, code, stderr)
	_, rest, ok := strings.Cut(out, "workers: ")
	require.True(t, ok, out)
	require.Equal(t, "workers: 5 wanted, 4 running, 0 succeeded, 1 failed, 1 replaced\n"+
		"groups:\n"+
		"  GROUP    RUNNING/TARGET  MINIMUM       FAILED/LIMIT  RESTARTS  PROFILE\n"+
		"  trainer  1/2             1 (reactive)  1/2           1         <memory:8192, vCores:1, yarn.io/gpu: 4>\n"+
		"  prep     3/3             2 (reactive)  0/3           0         <memory:2048, vCores:1, yarn.io/fpga: 1>\n"+
		"  WORKER                                  GROUP    NODEMANAGER      STATE    EXIT  DEVICES\n"+
		"  container_1700000000000_0003_01_000002  trainer  127.0.0.2:45454  RUNNING  -     gpu=0,1,2,3\n"+
		"  container_1700000000000_0003_01_000003  prep     127.0.0.3:45454  RUNNING  -     fpga=0\n",
		"workers: "+rest)
}

// Without groups, under reactive mode, am status shows the minimum and no
// group table or column.
func TestStatusReactiveWithoutGroups(t *testing.T) {
	st := amstatus.Status{Workers: 4, Minimum: 2, Running: 2, Groups: []amstatus.GroupStatus{{Workers: 4, Minimum: 2, Reactive: true, Running: 2}},
		Containers: []amstatus.WorkerStatus{{Container: "container_1700000000000_0003_01_000002", Host: "nm1", State: amstatus.StateRunning}}}
	amSrv := httptest.NewServer(amweb.NewTracker(staticStatus{st}, nil))
	defer amSrv.Close()
	rm := &clientRM{tracking: amSrv.URL + "/", states: []string{"RUNNING"}}
	code, out, stderr := runAm(t, clientDeps(t, rm, &diskFS{}), nil, "status", "application_1700000000000_0003")
	require.Equal(t, ExitOK, code, stderr)
	require.Contains(t, out, "\nworkers: 4 wanted (minimum 2, reactive), 2 running, 0 succeeded, 0 failed, 0 replaced\n  WORKER  ")
	require.NotContains(t, out, "groups:")
	require.NotContains(t, out, "GROUP")
}

// Each worker's group survives the AM's final diagnostics: after the end,
// am status (and am submit's summary) still list the workers with their
// groups.
func TestStatusAfterTheEndKeepsTheGroups(t *testing.T) {
	workers := []amstatus.WorkerStatus{
		{Container: "container_1700000000000_0003_01_000002", Node: "127.0.0.2:45454", Host: "127.0.0.2", Group: "trainer",
			State: amstatus.StateSucceeded, ExitStatus: exitp(0), Devices: map[string][]resources.Properties{"gpu": {{"index": "0"}}}},
		{Container: "container_1700000000000_0003_01_000003", Node: "127.0.0.3:45454", Host: "127.0.0.3", Group: "prep",
			State: amstatus.StateFailed, ExitStatus: exitp(3), Diagnostics: "exit code 3"},
	}
	diag := withWorkers("1 worker of group prep failed", workers)
	require.Contains(t, diag, `"group":"trainer"`)
	rest, back := splitWorkers(diag)
	require.Equal(t, "1 worker of group prep failed", rest)
	require.Equal(t, workers, back)

	rm := &clientRM{states: []string{"FINISHED"}, final: "FAILED", diag: diag}
	d := clientDeps(t, rm, &diskFS{})
	code, out, stderr := runAm(t, d, nil, "status", "application_1700000000000_0003")
	require.Equal(t, ExitOK, code, stderr)
	_, list, ok := strings.Cut(out, "workers (as the ApplicationMaster left them):\n")
	require.True(t, ok, out)
	require.Equal(t, ""+
		"  WORKER                                  GROUP    NODEMANAGER      STATE      EXIT  DEVICES\n"+
		"  container_1700000000000_0003_01_000002  trainer  127.0.0.2:45454  SUCCEEDED  0     gpu=0\n"+
		"  container_1700000000000_0003_01_000003  prep     127.0.0.3:45454  FAILED     3     -\n"+
		"  container_1700000000000_0003_01_000003 failed with exit 3: exit code 3\n", list)

	code, out, _ = runAm(t, d, nil, "status", "--json", "application_1700000000000_0003")
	require.Equal(t, ExitOK, code)
	var st statusJSON
	require.NoError(t, json.Unmarshal([]byte(out), &st))
	require.Equal(t, "trainer", st.Workers[0].Group)
	require.Equal(t, "prep", st.Workers[1].Group)
}
