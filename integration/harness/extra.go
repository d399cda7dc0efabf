package harness

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// portVars are run.sh's port settings; StartExtra gives each a free port unless the
// caller names one, so an extra cluster never meets the suite's (default ports).
var portVars = []string{"XRES_NN_PORT", "XRES_NN_HTTP_PORT", "XRES_RM_PORT", "XRES_RM_SCHEDULER_PORT",
	"XRES_RM_TRACKER_PORT", "XRES_RM_ADMIN_PORT", "XRES_RM_WEBAPP_PORT",
	"XRES_RM2_PORT", "XRES_RM2_SCHEDULER_PORT", "XRES_RM2_TRACKER_PORT", "XRES_RM2_ADMIN_PORT", "XRES_RM2_WEBAPP_PORT"}

// extraStartTimeout bounds run.sh start of an extra cluster (build included).
const extraStartTimeout = 5 * time.Minute

// StartExtra starts a second minicluster for one test, beside the suite's: its own
// state folder (a temporary one), free ports, and the run.sh settings given (e.g.
// XRES_RPC_PROTECTION=privacy, XRES_SECURE=1, XRES_MINICLUSTER_NODEMANAGERS=1). It is
// stopped when the test ends, pass or fail (and by itself should the test process die
// first); a failed test first keeps its logs under LogDir. The returned Cluster's Env is that cluster's cluster.env. A cluster that does
// not start fails the test, with run.sh's output.
func StartExtra(t *testing.T, settings map[string]string) *Cluster {
	t.Helper()
	root, err := repoRoot()
	if err != nil {
		t.Fatalf("extra minicluster: %v", err)
	}
	work := t.TempDir()
	env := map[string]string{
		EnvMiniclusterDir:          work,
		"XRES_MINICLUSTER_TIMEOUT": "180",
		// Should this process die before its cleanups run (a test timeout), the
		// cluster stops by itself.
		"XRES_MINICLUSTER_OWNER_PID": fmt.Sprint(os.Getpid()),
	}
	pickPorts := func() {
		// Each picked port stays bound until all are picked, so no two are the same.
		var held []net.Listener
		defer func() {
			for _, l := range held {
				l.Close()
			}
		}()
		for _, k := range portVars {
			if _, ok := settings[k]; ok {
				continue
			}
			l, err := bindFreePort()
			if err != nil {
				t.Fatalf("extra minicluster: free port for %s: %v", k, err)
			}
			held = append(held, l)
			env[k] = fmt.Sprint(l.Addr().(*net.TCPAddr).Port)
		}
	}
	pickPorts()
	for k, v := range settings {
		env[k] = v
	}
	c := &Cluster{
		User:    defaultUser(),
		LogDir:  defaultLogDir(root),
		workDir: work,
		started: time.Now(),
	}
	if current != nil {
		c.User, c.LogDir = current.User, current.LogDir
	}
	script := filepath.Join(root, "docker", "hadoop-minicluster", "run.sh")
	run := func(ctx context.Context, verb string) (string, error) {
		cmd := exec.CommandContext(ctx, "bash", script, verb)
		cmd.Env = mergeEnv(os.Environ(), env)
		cmd.WaitDelay = 5 * time.Second
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		return out.String(), err
	}
	// Registered before starting: a start that fails half-way still stops the JVM.
	t.Cleanup(func() {
		if t.Failed() {
			c.keepExtraLogs(t)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if out, err := run(ctx, "stop"); err != nil {
			t.Errorf("stop extra minicluster %s: %v\n%s", work, err, out)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), extraStartTimeout)
	defer cancel()
	t0 := time.Now()
	out, err := run(ctx, "start")
	if err != nil && portTaken(out) {
		// Another process took a port between the pick and the start (seen by run.sh, or
		// by the JVM's bind): stop what is left and start once more on other ports.
		t.Logf("extra minicluster: a picked port was taken; picking other ports")
		if stopOut, stopErr := run(ctx, "stop"); stopErr != nil {
			t.Logf("extra minicluster: stop before retrying: %v\n%s", stopErr, stopOut)
		}
		pickPorts()
		out, err = run(ctx, "start")
	}
	if err != nil {
		t.Fatalf("start extra minicluster (%s): %v\n%s", settingsString(settings), err, out)
	}
	t.Logf("extra minicluster (%s) ready in %.1f s, state in %s", settingsString(settings), time.Since(t0).Seconds(), work)
	if c.Env, err = readEnvFile(filepath.Join(work, "cluster.env")); err != nil {
		t.Fatalf("extra minicluster: %v", err)
	}
	c.ConfDir = c.Env["XRES_HADOOP_CONF_DIR"]
	if c.conf, err = readConfDir(c.ConfDir); err != nil {
		t.Fatalf("extra minicluster: %v", err)
	}
	if c.RMWebURL, err = rmWebURL(c.conf); err != nil {
		t.Fatalf("extra minicluster: %v", err)
	}
	if c.NameNode, err = nameNodeAddr(c.conf); err != nil {
		t.Fatalf("extra minicluster: %v", err)
	}
	if err := c.useActiveRM(ctx); err != nil {
		t.Fatalf("extra minicluster: %v", err)
	}
	return c
}

// keepExtraLogs copies an extra cluster's logs and container logs under
// LogDir/<test>-cluster/ and prints the tail of its Hadoop log.
func (c *Cluster) keepExtraLogs(t *testing.T) {
	dst := filepath.Join(c.LogDir, unsafeName.ReplaceAllString(t.Name(), "_")+"-cluster")
	budget := int64(maxCopyBytes)
	for _, f := range []string{"minicluster.log", "minicluster.out", "cluster.env", "stdout.log"} {
		if err := copyTree(filepath.Join(c.workDir, f), filepath.Join(dst, f), &budget); err != nil && !os.IsNotExist(err) {
			t.Logf("keep %s: %v", f, err)
		}
	}
	for i, d := range c.NodeManagerLogDirs() {
		if err := copyTree(d, filepath.Join(dst, fmt.Sprintf("nm%d", i)), &budget); err != nil && !os.IsNotExist(err) {
			t.Logf("keep %s: %v", d, err)
		}
	}
	t.Logf("extra cluster's logs kept in %s", dst)
	for _, f := range []string{"minicluster.out", "minicluster.log"} {
		if s := tail(filepath.Join(c.workDir, f), tailLines); s != "" {
			t.Logf("----- %s (last %d lines) -----\n%s", filepath.Join(c.workDir, f), tailLines, s)
		}
	}
}

// mergeEnv returns base with the keys of set replaced or added.
func mergeEnv(base []string, set map[string]string) []string {
	out := make([]string, 0, len(base)+len(set))
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		if _, ok := set[k]; !ok {
			out = append(out, kv)
		}
	}
	for k, v := range set {
		out = append(out, k+"="+v)
	}
	return out
}

func settingsString(settings map[string]string) string {
	var parts []string
	for k, v := range settings {
		parts = append(parts, k+"="+v)
	}
	if len(parts) == 0 {
		return "defaults"
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

// Extra clusters' fixed ports come from below Linux's ephemeral range (32768-60999 by
// default), so a port picked here is not taken meanwhile by an ephemeral bind, such as
// the DataNode's or a NodeManager's, of this cluster or another.
const (
	portMin = 20000
	portMax = 32000
)

// bindFreePort binds a port in [portMin, portMax) that nothing listens on now; the caller
// closes it just before the port is handed on.
func bindFreePort() (net.Listener, error) {
	var last error
	for i := 0; i < 100; i++ {
		port := portMin + rand.IntN(portMax-portMin)
		l, err := net.Listen("tcp", fmt.Sprintf(":%d", port))
		if err != nil {
			last = err
			continue
		}
		return l, nil
	}
	return nil, fmt.Errorf("no free port in [%d, %d) after 100 tries: %w", portMin, portMax, last)
}

// portTaken tells whether a failed start's output says a port was in use: run.sh's own
// check, or a bind of the JVM.
func portTaken(out string) bool {
	for _, s := range []string{"cannot start: in use: port", ") is in use", "Address already in use"} {
		if strings.Contains(out, s) {
			return true
		}
	}
	return false
}

// defaultUser is the Hadoop user of Setup and StartExtra: XRES_HADOOP_USER, else the OS user (else root).
func defaultUser() string {
	if u := os.Getenv(EnvUser); u != "" {
		return u
	}
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return "root"
}

// defaultLogDir is Setup's choice of log folder: XRES_TEST_LOGS, else integration/.logs.
func defaultLogDir(root string) string {
	if d := os.Getenv(EnvLogs); d != "" {
		return d
	}
	return filepath.Join(root, "integration", ".logs")
}
