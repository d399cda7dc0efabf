//go:build integration

package integration

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/colinmarc/hdfs/v2"
	"github.com/stretchr/testify/require"

	"github.com/xres/xres/integration/harness"
)

// runAMOn runs am against cluster c to the end within d: exit code, stdout, stderr.
func runAMOn(t testing.TB, c *harness.Cluster, d time.Duration, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	p := startAMOn(t, c, ctx, args...)
	code := p.wait(t)
	return code, p.stdout.String(), p.stderr.String()
}

// workerRowRE is a worker row of am submit's closing table: container, node.
var workerRowRE = regexp.MustCompile(`(?m)^  (container_\S+) +(\S+) +SUCCEEDED +0 `)

// envAggrlogTestdata names a folder to copy the test's aggregated log files
// into (yarn/aggrlog/testdata/hadoop-<version>-<codec> keeps such files for
// the unit tests).
const envAggrlogTestdata = "XRES_AGGRLOG_TESTDATA"

// am logs on a cluster with log aggregation on: two workers (one per
// NodeManager) print a marker to stdout and to stderr and end; once the RM
// says the logs are aggregated, am logs prints each worker's container, the
// node that ran it, and both markers, read from the TFiles in HDFS.
func TestAMLogsAggregated(t *testing.T) {
	c := harness.Get(t)
	if c.Conf("yarn.log-aggregation-enable") != "true" {
		// The suite's cluster keeps its logs on the NodeManagers.
		c = harness.StartExtra(t, map[string]string{"XRES_MINICLUSTER_LOG_AGGREGATION": "gz"})
	}
	codec := c.Conf("yarn.nodemanager.log-aggregation.compression-type")
	dir := t.TempDir()
	cfg := writeAMConf(t, dir, 4)
	ctx, cancel := context.WithTimeout(context.Background(), 2*amWaitTimeout)
	defer cancel()
	p := startAMOn(t, c, ctx, "submit", "--conf", cfg, "--workers", "2", "--name", "xres-it-aggrlogs", "--",
		"sh", "-c", `echo "xres-aggr-marker stdout container=$CONTAINER_ID"; echo "xres-aggr-marker stderr container=$CONTAINER_ID" >&2`)
	app := p.appID(t)
	c.KeepAppLogs(t, app)
	require.Equal(t, 0, p.wait(t), "am submit\n%s", p.output())
	nodeOf := map[string]string{}
	for _, m := range workerRowRE.FindAllStringSubmatch(p.stdout.String(), -1) {
		nodeOf[m[1]] = m[2]
	}
	require.Len(t, nodeOf, 2, "workers in am submit's closing table\n%s", p.output())

	// The NodeManagers upload when the application ends; the RM tells when all did.
	eventually(t, 5*time.Minute, "log aggregation of "+app+" SUCCEEDED", func() (bool, string) {
		var r struct {
			App struct {
				State                string `json:"state"`
				LogAggregationStatus string `json:"logAggregationStatus"`
			} `json:"app"`
		}
		if err := restGet(ctx, c, "/ws/v1/cluster/apps/"+url.PathEscape(app), &r); err != nil {
			return false, err.Error()
		}
		switch r.App.LogAggregationStatus {
		case "FAILED", "TIME_OUT", "DISABLED":
			t.Fatalf("log aggregation of %s: %s", app, r.App.LogAggregationStatus)
		}
		return r.App.LogAggregationStatus == "SUCCEEDED", r.App.State + " " + r.App.LogAggregationStatus
	})

	code, out, stderr := runAMOn(t, c, 2*time.Minute, "logs", app)
	require.Equal(t, 0, code, "am logs\nstdout:\n%s\nstderr:\n%s", out, stderr)
	require.NotContains(t, stderr, "log aggregation is off")
	require.NotContains(t, stderr, "reading them from the NodeManagers", "read from HDFS, not from the NodeManagers")
	sections := map[string]string{} // container -> its part of the output
	for _, part := range strings.Split(out, "Container: ")[1:] {
		id, _, _ := strings.Cut(part, " ")
		sections[id] = "Container: " + part
	}
	for ctr, node := range nodeOf {
		s, ok := sections[ctr]
		require.True(t, ok, "am logs shows no section for worker %s\n%s", ctr, out)
		require.True(t, strings.HasPrefix(s, "Container: "+ctr+" on "+node+"\n"), "worker %s on %s: %s", ctr, node, tailString(s, 3))
		for _, f := range []string{"stdout", "stderr"} {
			require.Regexp(t, `(?s)LogType: `+f+`\n(?:[^\n]*\n)*?xres-aggr-marker `+f+` container=`+regexp.QuoteMeta(ctr)+`\n(?:[^\n]*\n)*?End of LogType: `+f+`\n`, s,
				"worker %s: %s marker inside its %s section", ctr, f, f)
		}
	}
	// The AM's container is there too (yarn logs shows every container).
	amSeen := false
	for id := range sections {
		amSeen = amSeen || isAttemptContainer(id, app, 1)
	}
	require.True(t, amSeen, "the AM's container among %v", sections)
	t.Logf("am logs read %d containers of %s from HDFS (compression %q)", len(sections), app, codec)

	if dst := os.Getenv(envAggrlogTestdata); dst != "" {
		out := filepath.Join(dst, fmt.Sprintf("hadoop-%s-%s", c.Env["XRES_HADOOP_VERSION"], codec))
		copyAggregatedLogs(t, c.HDFS(t), c.User, app, out)
		// What the workers wrote, from the NodeManagers' own log folders (kept:
		// yarn.nodemanager.delete.debug-delay-sec), for the unit test to compare with.
		for _, d := range c.NodeManagerLogDirs() {
			for ctr := range nodeOf {
				for _, f := range []string{"stdout", "stderr"} {
					b, err := os.ReadFile(filepath.Join(d, app, ctr, f))
					if os.IsNotExist(err) {
						continue
					}
					require.NoError(t, err)
					require.NoError(t, os.MkdirAll(filepath.Join(out, "expected", ctr), 0o755))
					require.NoError(t, os.WriteFile(filepath.Join(out, "expected", ctr, f), b, 0o644))
				}
			}
		}
	}
}

// copyAggregatedLogs copies app's node files from HDFS /tmp/logs/<user>/ into dst.
func copyAggregatedLogs(t *testing.T, fs *hdfs.Client, user, app, dst string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(dst, 0o755))
	n := 0
	err := fs.Walk(path.Join("/tmp/logs", user), func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() || path.Base(path.Dir(p)) != app {
			return err
		}
		r, err := fs.Open(p)
		if err != nil {
			return err
		}
		defer r.Close()
		w, err := os.Create(filepath.Join(dst, path.Base(p)))
		if err != nil {
			return err
		}
		defer w.Close()
		_, err = io.Copy(w, r)
		n++
		t.Logf("copied %s to %s", p, dst)
		return err
	})
	require.NoError(t, err)
	require.NotZero(t, n, "no aggregated log of %s under /tmp/logs/%s", app, user)
}
