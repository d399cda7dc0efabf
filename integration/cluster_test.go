//go:build integration

package integration

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/colinmarc/hdfs/v2"
	"github.com/stretchr/testify/require"

	"github.com/xres/xres/integration/harness"
)

// envInt reads an expectation that follows run.sh's settings (default def).
func envInt(t *testing.T, key string, def int64) int64 {
	t.Helper()
	v := os.Getenv(key)
	if v == "" {
		return def
	}
	n, err := strconv.ParseInt(v, 10, 64)
	require.NoError(t, err, "%s=%q", key, v)
	return n
}

func TestNodeManagersOfferGPUs(t *testing.T) {
	c := harness.Get(t)
	wantNodes := envInt(t, "XRES_MINICLUSTER_NODEMANAGERS", 2)
	wantGPUs := envInt(t, "XRES_MINICLUSTER_GPUS", 2)
	wantFPGAs := envInt(t, "XRES_MINICLUSTER_FPGAS", 1)

	nodes := c.Nodes(t)
	require.Len(t, nodes, int(wantNodes), "nodes: %+v", nodes)
	for _, n := range nodes {
		t.Run(n.ID, func(t *testing.T) {
			require.Equal(t, "RUNNING", n.State, "health: %s", n.HealthReport)
			total := n.Total()
			tests := []struct {
				resource string
				want     int64
			}{
				{"yarn.io/gpu", wantGPUs},
				{"yarn.io/fpga", wantFPGAs},
			}
			for _, tc := range tests {
				got, ok := total.Get(tc.resource)
				require.True(t, ok, "node %s does not list %s: %+v", n.ID, tc.resource, total)
				require.Equal(t, tc.want, got, "node %s %s", n.ID, tc.resource)
			}
			require.Positive(t, total.Memory)
		})
	}
}

func TestHDFSRoundTrip(t *testing.T) {
	c := harness.Get(t)
	fs := c.HDFS(t)
	dir := fmt.Sprintf("/tmp/xres-it-%d", time.Now().UnixNano())
	require.NoError(t, fs.MkdirAll(dir, 0o755))
	t.Cleanup(func() { fs.RemoveAll(dir) })

	// No empty file: colinmarc/hdfs allocates a block even for one, which the NameNode
	// then never sees complete (Close keeps returning ErrReplicating); use CreateEmptyFile.
	tests := []struct {
		name string
		size int
	}{
		{"small", 13},
		{"several packets", 3<<20 + 7}, // crosses 64 KiB packets and 512-byte chunks
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			data := make([]byte, tc.size)
			for i := range data {
				data[i] = byte(i*7 + i>>11)
			}
			p := dir + "/" + strings.ReplaceAll(tc.name, " ", "-")
			w, err := fs.Create(p)
			require.NoError(t, err)
			_, err = w.Write(data)
			require.NoError(t, err)
			require.NoError(t, closeWriter(w))

			st, err := fs.Stat(p)
			require.NoError(t, err)
			require.Equal(t, int64(tc.size), st.Size())
			require.Equal(t, c.User, st.(*hdfs.FileInfo).Owner())

			r, err := fs.Open(p)
			require.NoError(t, err)
			got, err := io.ReadAll(r)
			require.NoError(t, err)
			require.NoError(t, r.Close())
			require.True(t, bytes.Equal(data, got), "read back %d bytes differ from the %d written", len(got), len(data))

			require.NoError(t, fs.Remove(p))
			_, err = fs.Stat(p)
			require.True(t, errors.Is(err, os.ErrNotExist), "stat after remove: %v", err)
		})
	}
}

// closeWriter closes an HDFS file, retrying while the NameNode has not yet seen the last
// block replicated, as the Java client does (up to ~6 s).
func closeWriter(w *hdfs.FileWriter) error {
	err := w.Close()
	for i := 0; i < 8 && hdfs.IsErrReplicating(err); i++ {
		time.Sleep(time.Duration(50<<i) * time.Millisecond)
		err = w.Close()
	}
	return err
}

// TestContainerRunsScriptAndGoBinary submits an application whose AM command is a bash
// line that runs a Go binary: what an xres AM and container-launcher need from a
// NodeManager (bash, exec of a static binary, the token file, the environment we set).
func TestContainerRunsScriptAndGoBinary(t *testing.T) {
	c := harness.Get(t)
	probe := harness.BuildBinary(t, "./testdata/probe")
	out := t.TempDir()
	report := filepath.Join(out, "probe.json")
	shellMark := filepath.Join(out, "shell.txt")
	// No double quotes: the NodeManager puts the command inside "..." in launch_container.sh.
	cmd := fmt.Sprintf(`echo bash-ran $CONTAINER_ID > %s && %s -out %s 1><LOG_DIR>/stdout 2><LOG_DIR>/stderr`,
		shellMark, probe, report)
	appID := c.SubmitCommandApp(t, harness.CommandApp{
		Name:    t.Name(),
		Command: cmd,
		Env:     map[string]string{"XRES_IT_VALUE": "a b=c"},
	})
	// The probe exits without registering as an AM, so YARN fails the attempt: either
	// final state shows the container ran; the files below prove what it saw.
	app := harness.WaitForAppState(t, appID, "FINISHED", "FAILED")
	t.Logf("%s ended %s: %s", appID, app.State, app.Diagnostics)

	mark, err := os.ReadFile(shellMark)
	require.NoError(t, err, "the bash part of the AM command did not run")
	require.Contains(t, string(mark), "bash-ran container_")
	require.Contains(t, string(mark), "container_")

	b, err := os.ReadFile(report)
	require.NoError(t, err, "the Go binary did not run in the container")
	var got map[string]string
	require.NoError(t, json.Unmarshal(b, &got))
	require.Equal(t, "go", got["ran"])
	require.Contains(t, got["env.CONTAINER_ID"], strings.TrimPrefix(appID, "application_"))
	require.Equal(t, "a b=c", got["env.XRES_IT_VALUE"])
	require.NotEmpty(t, got["env.NM_HOST"])
	require.NotEmpty(t, got["env.HADOOP_TOKEN_FILE_LOCATION"])
	require.Equal(t, "HDTS", got["tokens.magic"], "container_tokens file: %s", got["tokens.error"])
}
