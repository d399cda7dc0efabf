//go:build integration

package integration

// Spark on YARN with the xres discovery bridge beside TestYARNAssignedGPUs's
// DistributedShell and xres application: Spark's own SparkSubmit (cluster
// mode) asks YARN for sparkExecutors executors of one GPU each (Spark's "gpu"
// maps to yarn.io/gpu, or to nvidia.com/gpu through
// spark.yarn.resourceGpuDeviceName); each executor runs the bridge as its
// discovery script (a wrapper that also records what the bridge printed and
// what nvidia-smi lists in the container), and the job's tasks
// (io.xres.sparkjob.Hold) record the GPU addresses Spark gave them and hold
// their executors until the test releases them.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/integration/harness"
)

// sparkExecutors is how many executors (one GPU each) the Spark application asks for.
const sparkExecutors = 2

// sparkHold is a running SparkSubmit of io.xres.sparkjob.Hold.
type sparkHold struct {
	log  *lockedBuffer
	done chan struct{}
	err  error
}

// sparkBridgeWrapper writes the discovery script Spark's executors run: the
// xres bridge (shipped as ./container-launcher; not exec'ed, so that the
// bridge's caller is the executor JVM above the shell), with the coordination
// file given; it records in dir/spark.<CONTAINER_ID> what the bridge printed
// and what the container's nvidia-smi lists (index, UUID), and prints the
// bridge's answer for Spark.
func sparkBridgeWrapper(t *testing.T, dir, resource, coordination string, off bool) string {
	p := filepath.Join(dir, "spark-gpu-discovery.sh")
	assignment := "auto"
	if off {
		assignment = "off"
	}
	script := `#!/bin/sh
d='` + dir + `'
out=$(./container-launcher discover \
	-Dexternal-resource.gpu.param.discovery.source=nvidia-smi \
	-Dexternal-resource.gpu.param.coordination.file='` + coordination + `' \
	-Dexternal-resource.gpu.param.yarn.resource-name='` + resource + `' \
	-Dexternal-resource.gpu.param.yarn.assignment=` + assignment + `) || exit $?
f="$d/spark.$CONTAINER_ID"
{
	echo "bridge=$out"
	nvidia-smi --query-gpu=index,uuid --format=csv,noheader | sed 's/^/view=/'
} > "$f.tmp"
mv "$f.tmp" "$f"
echo "$out"
`
	require.NoError(t, os.WriteFile(p, []byte(script), 0o755))
	return p
}

// startSparkHold submits io.xres.sparkjob.Hold with sparkExecutors executors
// of one GPU (YARN resource resource) each, discovered by the bridge
// (sparkBridgeWrapper); the tasks write dir/sparktask.<CONTAINER_ID> and hold
// until dir/release exists.
func startSparkHold(t *testing.T, ctx context.Context, c *harness.Cluster, dir, resource, coordination string, off bool) *sparkHold {
	t.Helper()
	launcher := harness.BuildBinary(t, "github.com/xres/xres/cmd/container-launcher")
	wrapper := sparkBridgeWrapper(t, dir, resource, coordination, off)
	jobDir, cp := mavenBuild(t, "sparkjob", "xres-sparkjob-0.1.0.jar")
	jars := make([]string, len(cp))
	for i, j := range cp {
		jars[i] = "local:" + j // every NodeManager is this host
	}
	confs := map[string]string{
		"spark.executor.instances":                    fmt.Sprint(sparkExecutors),
		"spark.executor.cores":                        "1",
		"spark.executor.memory":                       "512m",
		"spark.executor.memoryOverhead":               "256m",
		"spark.driver.memory":                         "512m",
		"spark.driver.memoryOverhead":                 "256m",
		"spark.executor.resource.gpu.amount":          "1",
		"spark.task.resource.gpu.amount":              "1",
		"spark.executor.resource.gpu.discoveryScript": "./" + filepath.Base(wrapper),
		// Spark asks YARN for its "gpu" under this name (yarn.io/gpu by default).
		"spark.yarn.resourceGpuDeviceName":                  resource,
		"spark.yarn.jars":                                   strings.Join(jars, ","),
		"spark.yarn.populateHadoopClasspath":                "false",
		"spark.yarn.maxAppAttempts":                         "1",
		"spark.ui.enabled":                                  "false",
		"spark.scheduler.minRegisteredResourcesRatio":       "1.0",
		"spark.scheduler.maxRegisteredResourcesWaitingTime": "300s",
		"spark.executorEnv.PATH":                            fakeBinDir(t) + ":/usr/local/bin:/usr/bin:/bin",
	}
	// As runSparkJob: without Spark's launcher scripts SparkSubmit's client
	// must be told this cluster's RM.
	if rm := c.Env["XRES_RM_ADDRESS"]; rm != "" {
		confs["spark.hadoop.yarn.resourcemanager.address"] = rm
	}
	keys := make([]string, 0, len(confs))
	for k := range confs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	args := append(append([]string{}, sparkJavaOpts...), "-Xmx512m",
		"-cp", strings.Join(cp, ":"), "org.apache.spark.deploy.SparkSubmit",
		"--master", "yarn", "--deploy-mode", "cluster", "--class", "io.xres.sparkjob.Hold")
	for _, k := range keys {
		args = append(args, "--conf", k+"="+confs[k])
	}
	args = append(args, "--files", launcher+"#container-launcher,"+wrapper,
		filepath.Join(jobDir, "target", "xres-sparkjob-0.1.0.jar"), dir, fmt.Sprint(sparkExecutors))
	cmd := exec.CommandContext(ctx, javaBin(), args...)
	cmd.Env = append(os.Environ(), "HADOOP_CONF_DIR="+c.ConfDir, "HADOOP_USER_NAME="+c.User)
	cmd.WaitDelay = 5 * time.Second
	s := &sparkHold{log: &lockedBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = s.log, s.log
	require.NoError(t, cmd.Start())
	go func() { s.err = cmd.Wait(); close(s.done) }()
	release := filepath.Join(dir, "release")
	t.Cleanup(func() {
		_ = os.WriteFile(release, nil, 0o644)
		if m := sparkSubmittedRE.FindStringSubmatch(s.log.String()); m != nil {
			c.KeepAppLogs(t, m[1])
			killOnCleanup(t, c, m[1], release)
		}
		select {
		case <-s.done:
		case <-time.After(60 * time.Second):
			_ = cmd.Process.Kill()
			<-s.done
		}
	})
	return s
}

// sparkExecutorView is what one Spark executor's bridge printed and its task
// was given.
type sparkExecutorView struct {
	executor  string
	bridge    []string // the addresses the bridge printed
	task      []string // the addresses Spark gave the executor's task
	container containerView
}

// readSparkViews reads the executors' records (the bridge wrapper's
// dir/spark.<container> and the task's dir/sparktask.<container>); only
// containers whose task has run are returned.
func readSparkViews(dir string) (map[string]sparkExecutorView, error) {
	views, err := readViews(dir, "spark")
	if err != nil {
		return nil, err
	}
	tasks, err := filepath.Glob(filepath.Join(dir, "sparktask.container_*"))
	if err != nil {
		return nil, err
	}
	out := map[string]sparkExecutorView{}
	for _, f := range tasks {
		if strings.HasSuffix(f, ".tmp") {
			continue
		}
		container := strings.TrimPrefix(filepath.Base(f), "sparktask.")
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		fs := strings.Split(strings.TrimSpace(string(b)), "\t")
		if len(fs) != 3 || fs[1] != container {
			return nil, fmt.Errorf("%s: want executor, container %s, addresses; got %q", f, container, b)
		}
		v := sparkExecutorView{executor: fs[0], container: views[container]}
		if fs[2] != "" {
			v.task = strings.Split(fs[2], ",")
		}
		raw, err := os.ReadFile(filepath.Join(dir, "spark."+container))
		if err != nil {
			return nil, fmt.Errorf("executor %s ran a task but its discovery record: %w", fs[0], err)
		}
		for _, line := range strings.Split(string(raw), "\n") {
			if j, ok := strings.CutPrefix(line, "bridge="); ok {
				var ri struct {
					Name      string   `json:"name"`
					Addresses []string `json:"addresses"`
				}
				if err := json.Unmarshal([]byte(j), &ri); err != nil {
					return nil, fmt.Errorf("%s: the bridge printed %q: %w", container, j, err)
				}
				v.bridge = ri.Addresses
			}
		}
		out[container] = v
	}
	return out, nil
}

// nmCapacityAtLeast: every NodeManager of c has at least memMB of memory and
// vcores vcores (the RM's /ws/v1/cluster/nodes).
func nmCapacityAtLeast(t *testing.T, c *harness.Cluster, memMB, vcores int) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(c.RMWebURL, "/")+"/ws/v1/cluster/nodes", nil)
	require.NoError(t, err)
	req.Header.Set("Accept", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err, "the RM's nodes")
	defer resp.Body.Close()
	var r struct {
		Nodes struct {
			Node []struct {
				UsedMemoryMB, AvailMemoryMB             int
				UsedVirtualCores, AvailableVirtualCores int
			} `json:"node"`
		} `json:"nodes"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&r), "the RM's nodes")
	if len(r.Nodes.Node) == 0 {
		return false
	}
	for _, n := range r.Nodes.Node {
		if n.UsedMemoryMB+n.AvailMemoryMB < memMB || n.UsedVirtualCores+n.AvailableVirtualCores < vcores {
			return false
		}
	}
	return true
}
