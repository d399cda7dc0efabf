// Package harness gives the integration tests a real Hadoop cluster: it starts the xres
// minicluster (docker/hadoop-minicluster/run.sh) from TestMain, or uses the cluster whose
// client configuration XRES_HADOOP_CONF_DIR names, and stops what it started at the end.
// A cluster that is missing or fails to start is a failure, never a skip.
//
// Tests reach the cluster through Get(t) (HADOOP_CONF_DIR, RM REST URL, NameNode address,
// an HDFS client) and use WaitForAppState, SubmitCommandApp, BuildBinary and KeepAppLogs.
// When a run fails, the cluster's log and the containers' logs are copied under LogDir
// ($XRES_TEST_LOGS, default integration/.logs/) and their tails printed.
package harness

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Environment variables the harness reads.
const (
	// EnvConfDir names an existing cluster's client configuration; the harness then
	// starts and stops nothing.
	EnvConfDir = "XRES_HADOOP_CONF_DIR"
	// EnvLogs is the folder failed runs keep their logs in (default integration/.logs).
	EnvLogs = "XRES_TEST_LOGS"
	// EnvUser is the Hadoop user for HDFS and REST writes (default: the OS user).
	EnvUser = "XRES_HADOOP_USER"
	// EnvKeep, when non-empty, leaves a cluster the harness started running at the end.
	EnvKeep = "XRES_KEEP_CLUSTER"
	// EnvMiniclusterDir is run.sh's state folder (default docker/hadoop-minicluster/work).
	EnvMiniclusterDir = "XRES_MINICLUSTER_DIR"
)

// envOwnerPID is run.sh's owner process: the cluster stops by itself once it ends.
const envOwnerPID = "XRES_MINICLUSTER_OWNER_PID"

// ErrNoCluster is returned when no cluster could be found or started.
var ErrNoCluster = errors.New("no hadoop cluster")

// Cluster is the Hadoop cluster under test.
type Cluster struct {
	// ConfDir is a HADOOP_CONF_DIR for this cluster.
	ConfDir string
	// RMWebURL is the ResourceManager's web base URL, e.g. http://localhost:8088.
	RMWebURL string
	// NameNode is the NameNode RPC address, host:port.
	NameNode string
	// User is the Hadoop user for HDFS and for REST writes (?user.name=).
	User string
	// LogDir is where logs of a failed run are kept.
	LogDir string
	// Env holds the minicluster's cluster.env (NodeManager dirs and addresses); empty
	// for a cluster named by XRES_HADOOP_CONF_DIR.
	Env map[string]string
	// Started is true when this process started the cluster (and so stops it).
	Started bool

	conf    map[string]string
	script  string
	workDir string
	binDir  string
	log     io.Writer
	started time.Time
}

// Conf returns the expanded value of a key from the cluster's *-site.xml files.
func (c *Cluster) Conf(key string) string { return get(c.conf, key, "") }

// NodeManagerLogDirs lists the NodeManagers' container log folders where
// they are on this machine: the minicluster's (its cluster.env: the one
// this process started or reuses, or, for a cluster named by
// XRES_HADOOP_CONF_DIR, a minicluster's whose conf folder that is), else
// yarn.nodemanager.log-dirs where those folders exist here. None: the
// containers' logs are not local.
func (c *Cluster) NodeManagerLogDirs() []string {
	env := c.Env
	if len(env) == 0 && c.ConfDir != "" {
		env, _ = readEnvFile(filepath.Join(filepath.Dir(filepath.Clean(c.ConfDir)), "cluster.env"))
	}
	var dirs []string
	for i := 0; ; i++ {
		v, ok := env[fmt.Sprintf("XRES_NM%d_LOG_DIRS", i)]
		if !ok {
			break
		}
		dirs = append(dirs, strings.Split(v, ",")...)
	}
	if len(dirs) > 0 {
		return dirs
	}
	for _, d := range strings.Split(c.Conf("yarn.nodemanager.log-dirs"), ",") {
		d = strings.TrimPrefix(strings.TrimSpace(d), "file://")
		if fi, err := os.Stat(d); d != "" && err == nil && fi.IsDir() {
			dirs = append(dirs, d)
		}
	}
	return dirs
}

// LocalNodeManagerLogs reports whether the containers' log folders are on
// this machine, logging why not where they are not (a cluster named by
// XRES_HADOOP_CONF_DIR whose NodeManagers run elsewhere): a test then
// leaves out what it would read there.
func (c *Cluster) LocalNodeManagerLogs(t testing.TB) bool {
	t.Helper()
	if len(c.NodeManagerLogDirs()) == 0 {
		t.Logf("the containers' logs are not on this machine (the cluster of %s=%s): what the workers printed is not checked", EnvConfDir, c.ConfDir)
		return false
	}
	return true
}

var current *Cluster

// Get returns the cluster TestMain set up, failing the test when there is none.
func Get(t testing.TB) *Cluster {
	t.Helper()
	if current == nil {
		t.Fatal("harness: no cluster: the package's TestMain must call harness.Main")
	}
	return current
}

// Main is the body of an integration package's TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(harness.Main(m)) }
//
// It sets the cluster up (a failure is exit status 1), runs the tests, keeps and prints
// logs when they failed, and stops a cluster it started, on every way out: the tests
// failing, SIGINT, SIGTERM or SIGHUP (the cluster is stopped, then the process exits 1);
// and where no code of this process runs any more (a test's panic, go test's -timeout,
// SIGKILL) the cluster stops by itself once this process is gone (it was started with
// XRES_MINICLUSTER_OWNER_PID, unless XRES_KEEP_CLUSTER is set). A failed `make test`
// once left its cluster holding the default ports for an hour.
func Main(m *testing.M) int {
	sigs := make(chan os.Signal, 1)
	signalNotify(sigs)
	defer signal.Stop(sigs)
	return runMain(m.Run, sigs, os.Exit)
}

// signalNotify sends the signals Main stops the cluster on to sigs.
func signalNotify(sigs chan<- os.Signal) {
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
}

// runMain is Main with the tests (run), the signals it stops on and the exit it then
// takes given.
func runMain(run func() int, sigs <-chan os.Signal, exit func(int)) int {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	c, err := Setup(ctx, os.Stderr)
	cancel()
	if err != nil {
		fmt.Fprintf(os.Stderr, "integration: FAIL: %v\n", err)
		return 1
	}
	current = c
	var stopOnce sync.Once
	stop := func() error {
		var err error
		stopOnce.Do(func() {
			if c.Started && os.Getenv(EnvKeep) == "" {
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				defer cancel()
				err = c.Stop(ctx)
			}
		})
		return err
	}
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case sig := <-sigs:
			fmt.Fprintf(os.Stderr, "integration: %v: stopping the cluster this run started\n", sig)
			if err := stop(); err != nil {
				fmt.Fprintf(os.Stderr, "integration: %v\n", err)
			}
			exit(1)
		case <-done:
		}
	}()
	code := run()
	if code != 0 {
		c.keepRunLogs()
	} else if c.binDir != "" {
		os.RemoveAll(c.binDir)
	}
	if c.script != "" {
		// The cluster's resident memory after the suite, for the record.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		c.runScript(ctx, "status")
		cancel()
	}
	if err := stop(); err != nil {
		fmt.Fprintf(os.Stderr, "integration: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// miniclusterScript is run.sh's path under the repository root (tests replace it).
var miniclusterScript = func(root string) string {
	return filepath.Join(root, "docker", "hadoop-minicluster", "run.sh")
}

// Setup finds or starts the cluster. Progress goes to log.
func Setup(ctx context.Context, log io.Writer) (*Cluster, error) {
	c := &Cluster{log: log, started: time.Now()}
	root, rootErr := repoRoot()
	c.LogDir = os.Getenv(EnvLogs)
	if c.LogDir == "" && rootErr == nil {
		c.LogDir = filepath.Join(root, "integration", ".logs")
	}
	if c.LogDir == "" {
		c.LogDir = filepath.Join(os.TempDir(), "xres-integration-logs")
	}
	c.User = defaultUser()

	if dir := os.Getenv(EnvConfDir); dir != "" {
		c.ConfDir = dir
		fmt.Fprintf(log, "integration: using the cluster of %s=%s (not starting one)\n", EnvConfDir, dir)
	} else {
		if rootErr != nil {
			return nil, fmt.Errorf("find minicluster: %w", rootErr)
		}
		c.script = miniclusterScript(root)
		work := os.Getenv(EnvMiniclusterDir)
		if work == "" {
			work = filepath.Join(root, "docker", "hadoop-minicluster", "work")
		}
		status := exec.CommandContext(ctx, "bash", c.script, "status")
		status.Stdout, status.Stderr = io.Discard, io.Discard
		if status.Run() == nil {
			fmt.Fprintf(log, "integration: reusing the running minicluster (%s status); it stays up afterwards\n", c.script)
		} else {
			fmt.Fprintf(log, "integration: starting the minicluster: %s start\n", c.script)
			if err := c.runScript(ctx, "start"); err != nil {
				return nil, fmt.Errorf("%w: start minicluster: %v", ErrNoCluster, err)
			}
			c.Started = true
		}
		env, err := readEnvFile(filepath.Join(work, "cluster.env"))
		if err != nil {
			return c.failSetup(ctx, fmt.Errorf("%w: %v", ErrNoCluster, err))
		}
		c.Env = env
		c.workDir = work
		c.ConfDir = env["XRES_HADOOP_CONF_DIR"]
	}

	kv, err := readConfDir(c.ConfDir)
	if err != nil {
		return c.failSetup(ctx, fmt.Errorf("%w: %v", ErrNoCluster, err))
	}
	c.conf = kv
	if c.RMWebURL, err = rmWebURL(kv); err != nil {
		return c.failSetup(ctx, fmt.Errorf("%w: %v", ErrNoCluster, err))
	}
	if c.NameNode, err = nameNodeAddr(kv); err != nil {
		return c.failSetup(ctx, fmt.Errorf("%w: %v", ErrNoCluster, err))
	}
	if err := c.useActiveRM(ctx); err != nil {
		return c.failSetup(ctx, fmt.Errorf("%w: %v", ErrNoCluster, err))
	}
	if err := c.checkRM(ctx); err != nil {
		return c.failSetup(ctx, fmt.Errorf("%w: %v", ErrNoCluster, err))
	}
	fmt.Fprintf(log, "integration: cluster ready: HADOOP_CONF_DIR=%s RM=%s NameNode=%s user=%s\n",
		c.ConfDir, c.RMWebURL, c.NameNode, c.User)
	return c, nil
}

// failSetup stops a cluster this process started before returning err.
func (c *Cluster) failSetup(ctx context.Context, err error) (*Cluster, error) {
	if c.Started {
		if serr := c.Stop(ctx); serr != nil {
			fmt.Fprintf(c.log, "integration: %v\n", serr)
		}
	}
	return nil, err
}

// checkRM asks the RM for its state (30 s at most): a conf dir that names no live
// cluster fails here, with the address it tried.
func (c *Cluster) checkRM(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var last error
	for {
		var info struct {
			ClusterInfo struct {
				State string `json:"state"`
			} `json:"clusterInfo"`
		}
		last = c.getJSON(ctx, "/ws/v1/cluster/info", &info)
		if last == nil && info.ClusterInfo.State == "STARTED" {
			return nil
		}
		if last == nil {
			last = fmt.Errorf("state %q, want STARTED", info.ClusterInfo.State)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("resourcemanager %s: %w", c.RMWebURL, last)
		case <-time.After(time.Second):
		}
	}
}

// Stop stops a cluster this process started (no-op otherwise).
func (c *Cluster) Stop(ctx context.Context) error {
	if !c.Started {
		return nil
	}
	if err := c.runScript(ctx, "stop"); err != nil {
		return fmt.Errorf("stop minicluster: %w", err)
	}
	c.Started = false
	return nil
}

// runScript runs run.sh with its output on the harness log.
func (c *Cluster) runScript(ctx context.Context, verb string) error {
	cmd := exec.CommandContext(ctx, "bash", c.script, verb)
	cmd.Stdout, cmd.Stderr = c.log, c.log
	if verb == "start" && os.Getenv(EnvKeep) == "" && os.Getenv(envOwnerPID) == "" {
		// The cluster stops by itself once this process is gone, however it ends.
		cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d", envOwnerPID, os.Getpid()))
	}
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s: %w", c.script, verb, err)
	}
	return nil
}

// readEnvFile reads KEY=VALUE lines (cluster.env), skipping blanks and # comments.
func readEnvFile(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read cluster env: %w", err)
	}
	env := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("read cluster env %s:%d: want KEY=VALUE, got %q", path, n, line)
		}
		env[k] = v
	}
	return env, sc.Err()
}

// repoRoot walks up from the working directory to the folder holding go.mod.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("repo root: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("repo root: no go.mod above the working directory")
		}
		dir = parent
	}
}
