//go:build integration

package integration

// Spark on YARN, unchanged, with xres only on the host: Spark's own SparkSubmit
// (3.5.9, from Maven Central: integration/sparkjob) submits a small job in
// cluster mode to the minicluster; Spark's own AM asks YARN for 4 executors
// with 1 yarn.io/gpu each, which YARN places 2 per NodeManager (2 GPUs each).
// Each executor runs the discovery script Spark is configured with:
//
//   - TestSparkOwnDiscoveryShares: a script that lists every GPU of the host,
//     as Spark's example script does. Both executors of a host are told they
//     have GPUs 0 and 1 and both give their task GPU 0: Spark's scheduler
//     shares out devices inside one executor only.
//   - TestSparkWithBridge: the xres discovery bridge (container-launcher,
//     shipped with --files), which reserves one GPU host-wide for the calling
//     executor JVM: the executors of a host get distinct GPUs.
//
// The two NodeManagers are one machine here, so the test gives each its own
// coordination state file ($NM_HOST in the state file's name, in the wrapper
// script the test ships): on a real cluster hosts are distinct and the default
// state file does.

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/integration/harness"
)

// sparkTask is one line the job writes: which executor on which NodeManager
// ran the task, and the GPU addresses Spark assigned it.
type sparkTask struct {
	executor, host string
	gpus           []string
}

// sparkJavaOpts are the module openings Spark 3.5 needs on Java 17 (what
// spark-submit's launcher adds; Spark adds them itself to its AM and executors).
var sparkJavaOpts = []string{
	"-XX:+IgnoreUnrecognizedVMOptions",
	"--add-opens=java.base/java.lang=ALL-UNNAMED",
	"--add-opens=java.base/java.lang.invoke=ALL-UNNAMED",
	"--add-opens=java.base/java.lang.reflect=ALL-UNNAMED",
	"--add-opens=java.base/java.io=ALL-UNNAMED",
	"--add-opens=java.base/java.net=ALL-UNNAMED",
	"--add-opens=java.base/java.nio=ALL-UNNAMED",
	"--add-opens=java.base/java.util=ALL-UNNAMED",
	"--add-opens=java.base/java.util.concurrent=ALL-UNNAMED",
	"--add-opens=java.base/java.util.concurrent.atomic=ALL-UNNAMED",
	"--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
	"--add-opens=java.base/sun.nio.cs=ALL-UNNAMED",
	"--add-opens=java.base/sun.security.action=ALL-UNNAMED",
	"--add-opens=java.base/sun.util.calendar=ALL-UNNAMED",
}

var sparkSubmittedRE = regexp.MustCompile(`Submitted application (application_[0-9]+_[0-9]+)`)

// runSparkJob submits integration/sparkjob with Spark's SparkSubmit (master
// yarn, cluster mode): 4 executors × 1 GPU, each running discovery (a file
// among files, by its localized name), and returns what its tasks reported.
// env is added to the executors' environment (spark.executorEnv.*).
func runSparkJob(t *testing.T, discovery string, files []string, env map[string]string) []sparkTask {
	t.Helper()
	c := harness.Get(t)
	dir, cp := mavenBuild(t, "sparkjob", "xres-sparkjob-0.1.0.jar")
	jars := make([]string, len(cp))
	for i, j := range cp {
		jars[i] = "local:" + j // every NodeManager is this host: nothing of Spark is uploaded
	}
	const executors = 4
	out := filepath.Join(t.TempDir(), "tasks.tsv")
	args := append(append([]string{}, sparkJavaOpts...), "-Xmx512m",
		"-cp", strings.Join(cp, ":"), "org.apache.spark.deploy.SparkSubmit",
		"--master", "yarn", "--deploy-mode", "cluster", "--class", "io.xres.sparkjob.Main")
	confs := map[string]string{
		"spark.executor.instances":                    fmt.Sprint(executors),
		"spark.executor.cores":                        "1",
		"spark.executor.memory":                       "512m",
		"spark.executor.memoryOverhead":               "256m",
		"spark.driver.memory":                         "512m",
		"spark.driver.memoryOverhead":                 "256m",
		"spark.executor.resource.gpu.amount":          "1",
		"spark.task.resource.gpu.amount":              "1",
		"spark.executor.resource.gpu.discoveryScript": "./" + discovery,
		"spark.yarn.jars":                             strings.Join(jars, ","),
		"spark.yarn.populateHadoopClasspath":          "false",
		"spark.yarn.maxAppAttempts":                   "1",
		"spark.ui.enabled":                            "false",
		// Every executor registered before the tasks are offered, so that the
		// 4 tasks (4 s each) run at once, one per executor.
		"spark.scheduler.minRegisteredResourcesRatio":       "1.0",
		"spark.scheduler.maxRegisteredResourcesWaitingTime": "180s",
		"spark.executorEnv.PATH":                            fakeBinDir(t) + ":/usr/local/bin:/usr/bin:/bin",
		"spark.executorEnv.XRES_FAKE_GPUS":                  "2",
	}
	for k, v := range env {
		confs["spark.executorEnv."+k] = v
	}
	// SparkSubmit runs here without Spark's launcher scripts, which would put
	// HADOOP_CONF_DIR on its class path: its client is told the RM this cluster
	// runs (Hadoop's default 0.0.0.0:8032 is right only on the default ports).
	// Its AM reads the cluster's files, which SparkSubmit ships from
	// HADOOP_CONF_DIR (__spark_conf__/__hadoop_conf__).
	if rm := c.Env["XRES_RM_ADDRESS"]; rm != "" {
		confs["spark.hadoop.yarn.resourcemanager.address"] = rm
	}
	keys := make([]string, 0, len(confs))
	for k := range confs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		args = append(args, "--conf", k+"="+confs[k])
	}
	args = append(args, "--files", strings.Join(files, ","),
		filepath.Join(dir, "target", "xres-sparkjob-0.1.0.jar"), out, fmt.Sprint(executors))

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, javaBin(), args...)
	cmd.Env = append(os.Environ(), "HADOOP_CONF_DIR="+c.ConfDir, "HADOOP_USER_NAME="+c.User)
	log := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = log, log
	start := time.Now()
	err := cmd.Run()
	if m := sparkSubmittedRE.FindStringSubmatch(log.String()); m != nil {
		c.KeepAppLogs(t, m[1])
	}
	require.NoError(t, err, "SparkSubmit:\n%s", tailLines([]byte(log.String()), 60))
	t.Logf("Spark application ran in %s", time.Since(start).Round(100*time.Millisecond))

	f, err := os.Open(out)
	require.NoError(t, err, "the job's output (SparkSubmit log:\n%s)", tailLines([]byte(log.String()), 30))
	defer f.Close()
	var tasks []sparkTask
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Split(sc.Text(), "\t")
		require.Len(t, fs, 3, "task line %q", sc.Text())
		tasks = append(tasks, sparkTask{executor: fs[0], host: fs[1], gpus: strings.Split(fs[2], ",")})
	}
	require.NoError(t, sc.Err())
	require.Len(t, tasks, executors)
	return tasks
}

// executorGPUs groups tasks by host, then by executor: the GPUs each executor's
// tasks were given.
func executorGPUs(t *testing.T, tasks []sparkTask) map[string]map[string][]string {
	t.Helper()
	hosts := map[string]map[string][]string{}
	for _, tk := range tasks {
		require.NotEmpty(t, tk.host, "task of executor %s: no NM_HOST", tk.executor)
		if hosts[tk.host] == nil {
			hosts[tk.host] = map[string][]string{}
		}
		hosts[tk.host][tk.executor] = append(hosts[tk.host][tk.executor], tk.gpus...)
	}
	t.Logf("GPUs by host and executor: %v", hosts)
	require.Len(t, hosts, 2, "4 executors × 1 GPU on 2 NodeManagers with 2 GPUs each")
	for h, ex := range hosts {
		require.Len(t, ex, 2, "host %s: executors %v", h, ex)
	}
	return hosts
}

// sharedGPUs lists, per host, the GPUs given to more than one executor.
func sharedGPUs(hosts map[string]map[string][]string) map[string][]string {
	shared := map[string][]string{}
	for h, ex := range hosts {
		owner := map[string]string{}
		for e, gpus := range ex {
			for _, g := range gpus {
				if o, ok := owner[g]; ok && o != e {
					shared[h] = append(shared[h], g)
				}
				owner[g] = e
			}
		}
	}
	return shared
}

func TestSparkOwnDiscoveryShares(t *testing.T) {
	script := filepath.Join(t.TempDir(), "all-gpus.sh")
	// What Spark's example discovery script does: every GPU of the host, to every executor.
	require.NoError(t, os.WriteFile(script, []byte(`#!/bin/sh
ids=$(nvidia-smi --query-gpu=index --format=csv,noheader | paste -sd, - | sed 's/,/","/g')
printf '{"name": "gpu", "addresses": ["%s"]}\n' "$ids"
`), 0o755))
	hosts := executorGPUs(t, runSparkJob(t, "all-gpus.sh", []string{script}, nil))
	shared := sharedGPUs(hosts)
	t.Logf("Spark's own discovery: GPUs given to two executors of one host: %v", shared)
	require.Len(t, shared, 2, "without host coordination both executors of each host use GPU 0 (measured; if Spark changed this, the README's comparison is out of date)")
}

func TestSparkWithBridge(t *testing.T) {
	launcher := harness.BuildBinary(t, "github.com/xres/xres/cmd/container-launcher")
	states := t.TempDir()
	wrapper := filepath.Join(t.TempDir(), "gpu-discovery.sh")
	// Shipped beside the launcher; not exec'ed, so that the bridge's caller
	// is found above the shell. One state file per NodeManager: both are
	// this machine.
	require.NoError(t, os.WriteFile(wrapper, []byte(`#!/bin/sh
./container-launcher discover \
	-Dexternal-resource.gpu.param.discovery.source=nvidia-smi \
	-Dexternal-resource.gpu.param.coordination.file=`+states+`/"$NM_HOST".state
`), 0o755))
	hosts := executorGPUs(t, runSparkJob(t, "gpu-discovery.sh", []string{launcher + "#container-launcher", wrapper}, nil))
	require.Empty(t, sharedGPUs(hosts), "with the bridge no GPU of a host goes to two executors")
	for h, ex := range hosts {
		for e, gpus := range ex {
			require.Len(t, gpus, 1, "host %s executor %s", h, e)
		}
	}
	// The grants were the bridge's, in each host's own state file.
	for h := range hosts {
		st, err := os.ReadFile(filepath.Join(states, h+".state"))
		require.NoError(t, err, "the bridge recorded %s's grants in its own state file", h)
		require.True(t, strings.HasPrefix(string(st), "xres-coordination "), "%s: %q", h, st)
	}
}
