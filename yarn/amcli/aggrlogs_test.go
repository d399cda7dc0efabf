package amcli

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/yarn/aggrlog/aggrlogtest"
	"github.com/xres/xres/yarn/amstatus"
	"github.com/xres/xres/yarn/amweb"
	"github.com/xres/xres/yarn/submit"
)

// diskFS's reading side, for am logs.
var _ logFS = (*diskFS)(nil)

func (d *diskFS) ReadDir(ctx context.Context, dir string) ([]os.FileInfo, error) {
	entries, err := os.ReadDir(d.p(dir))
	if err != nil {
		return nil, err
	}
	var out []os.FileInfo
	for _, e := range entries {
		fi, err := e.Info()
		if err != nil {
			return nil, err
		}
		out = append(out, fi)
	}
	return out, nil
}

type diskFile struct{ *os.File }

func (f diskFile) Size() int64 {
	fi, err := f.Stat()
	if err != nil {
		return 0
	}
	return fi.Size()
}

func (d *diskFS) Open(ctx context.Context, name string) (submit.RemoteFile, error) {
	f, err := os.Open(d.p(name))
	if err != nil {
		return nil, err
	}
	return diskFile{f}, nil
}

func (d *diskFS) put(t *testing.T, name string, data []byte) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(d.p(name)), 0o755))
	require.NoError(t, os.WriteFile(d.p(name), data, 0o644))
}

const logsApp = "application_1700000000000_0003"

func nodeLog(codec string, ctrs ...string) []byte {
	f := aggrlogtest.File{Codec: codec, Owner: "alice", Chunk: 64}
	for _, c := range ctrs {
		f.Containers = append(f.Containers, aggrlogtest.Container{ID: c, Logs: []aggrlogtest.Log{
			{Name: "prelaunch.out", Body: "Setting up env variables\n"},
			{Name: "stderr", Body: "err of " + c},
			{Name: "stdout", Body: "out of " + c + "\nline 2\n"},
		}})
	}
	return f.Bytes()
}

func TestLogsAggregated(t *testing.T) {
	ended := []string{"FINISHED"}
	on := map[string]string{"yarn.log-aggregation-enable": "true"}
	c2, c3, c4 := "container_1700000000000_0003_01_000002", "container_1700000000000_0003_01_000003", "container_1700000000000_0003_01_000004"

	t.Run("both layouts, none and gz", func(t *testing.T) {
		dfs := &diskFS{root: t.TempDir()}
		// Hadoop 3.3+: bucket-<suffix>/<seq % 10000>/<app>/<host>_<port>
		dfs.put(t, "/tmp/logs/alice/bucket-logs-tfile/0003/"+logsApp+"/127.0.0.2_45454", nodeLog("gz", c2, c4))
		// older: <suffix>/<app>/<host>_<port>
		dfs.put(t, "/tmp/logs/alice/logs/"+logsApp+"/127.0.0.3_45454", nodeLog("none", c3))
		// another application's bucket is not read
		dfs.put(t, "/tmp/logs/alice/bucket-logs-tfile/0004/application_1700000000000_0004/127.0.0.2_45454", nodeLog("none", "container_1700000000000_0004_01_000002"))
		rm := &clientRM{states: ended, final: "SUCCEEDED", hadoop: on}
		code, out, stderr := runAm(t, clientDeps(t, rm, dfs), nil, "logs", logsApp)
		require.Equal(t, ExitOK, code, stderr)
		require.NotContains(t, stderr, "log aggregation is off")
		for c, node := range map[string]string{c2: "127.0.0.2:45454", c4: "127.0.0.2:45454", c3: "127.0.0.3:45454"} {
			require.Contains(t, out, "Container: "+c+" on "+node+"\n")
			require.Contains(t, out, "LogType: stdout\nout of "+c+"\nline 2\nEnd of LogType: stdout\n\n")
			// a log without a last newline gets one before its end line
			require.Contains(t, out, "LogType: stderr\nerr of "+c+"\nEnd of LogType: stderr\n\n")
		}
		require.Contains(t, out, "LogType: prelaunch.out\n")
		require.NotContains(t, out, "0004_01")
		// per node file, containers in file order
		require.Less(t, strings.Index(out, c2), strings.Index(out, c4))
	})
	t.Run("remote-app-log-dir with a file-system URI", func(t *testing.T) {
		dfs := &diskFS{root: t.TempDir()}
		dfs.put(t, "/app-logs/alice/bucket-logs-tfile/0003/"+logsApp+"/nm-host_8041", nodeLog("none", c2))
		rm := &clientRM{states: ended, final: "SUCCEEDED", hadoop: map[string]string{
			"yarn.log-aggregation-enable": "true", "yarn.nodemanager.remote-app-log-dir": "hdfs://namenode:8020/app-logs"}}
		code, out, stderr := runAm(t, clientDeps(t, rm, dfs), nil, "logs", logsApp)
		require.Equal(t, ExitOK, code, stderr)
		require.Contains(t, out, "Container: "+c2+" on nm-host:8041\n")
	})
	t.Run("ended, nothing in HDFS: says where it looked", func(t *testing.T) {
		rm := &clientRM{states: ended, final: "SUCCEEDED", hadoop: on}
		code, out, stderr := runAm(t, clientDeps(t, rm, &diskFS{root: t.TempDir()}), nil, "logs", logsApp)
		require.Equal(t, ExitCluster, code)
		require.Empty(t, out)
		require.Contains(t, stderr, "log aggregation is on")
		require.Contains(t, stderr, "/tmp/logs/alice/")
	})
	t.Run("ended, uploads in progress", func(t *testing.T) {
		dfs := &diskFS{root: t.TempDir()}
		dfs.put(t, "/tmp/logs/alice/bucket-logs-tfile/0003/"+logsApp+"/127.0.0.2_45454.tmp", []byte("partial"))
		rm := &clientRM{states: ended, final: "SUCCEEDED", hadoop: on}
		code, _, stderr := runAm(t, clientDeps(t, rm, dfs), nil, "logs", logsApp)
		require.Equal(t, ExitCluster, code)
		require.Contains(t, stderr, "uploading")
		require.Contains(t, stderr, "/tmp/logs/alice/bucket-logs-tfile/0003/"+logsApp+"/127.0.0.2_45454.tmp")
	})
	t.Run("a damaged file or another codec: the error names the HDFS path and the codec", func(t *testing.T) {
		dfs := &diskFS{root: t.TempDir()}
		dir := "/tmp/logs/alice/bucket-logs-tfile/0003/" + logsApp + "/"
		dfs.put(t, dir+"127.0.0.2_45454", nodeLog("none", c2))
		dfs.put(t, dir+"127.0.0.3_45454", []byte("not a TFile at all, far too short to be one"))
		dfs.put(t, dir+"127.0.0.4_45454", nodeLog("snappy", c4))
		rm := &clientRM{states: ended, final: "SUCCEEDED", hadoop: on}
		code, out, stderr := runAm(t, clientDeps(t, rm, dfs), nil, "logs", logsApp)
		require.Equal(t, ExitCluster, code)
		require.Contains(t, out, "Container: "+c2+" on 127.0.0.2:45454\n", "the readable file is still printed")
		require.Contains(t, stderr, dir+"127.0.0.3_45454")
		require.Contains(t, stderr, "not a TFile")
		require.Contains(t, stderr, "IFile")
		require.Contains(t, stderr, dir+"127.0.0.4_45454")
		require.Contains(t, stderr, `"snappy"`)
		require.Contains(t, stderr, "2 of 3 aggregated log files")
	})
	t.Run("archived (a Hadoop archive): says so", func(t *testing.T) {
		dfs := &diskFS{root: t.TempDir()}
		dfs.put(t, "/tmp/logs/alice/logs/"+logsApp+"/"+logsApp+".har/_index", []byte("har index"))
		rm := &clientRM{states: ended, final: "SUCCEEDED", hadoop: on}
		code, _, stderr := runAm(t, clientDeps(t, rm, dfs), nil, "logs", logsApp)
		require.Equal(t, ExitCluster, code)
		require.Contains(t, stderr, "Hadoop archive")
		require.Contains(t, stderr, "/tmp/logs/alice/logs/"+logsApp+"/"+logsApp+".har")
	})
	t.Run("running, nothing aggregated yet: says so and reads the NodeManagers", func(t *testing.T) {
		nm := httptest.NewServer(nmLogs())
		defer nm.Close()
		st := amstatus.Status{App: logsApp, State: "RUNNING", Workers: 1, Running: 1, Containers: []amstatus.WorkerStatus{
			{Container: c2, Node: "127.0.0.2:45454", NodeHTTP: strings.TrimPrefix(nm.URL, "http://"), State: amstatus.StateRunning}}}
		amSrv := httptest.NewServer(amweb.NewTracker(staticStatus{st}, nil))
		defer amSrv.Close()
		rm := &clientRM{states: []string{"RUNNING"}, tracking: amSrv.URL + "/", hadoop: on}
		code, out, stderr := runAm(t, clientDeps(t, rm, &diskFS{root: t.TempDir()}), nil, "logs", logsApp)
		require.Equal(t, ExitOK, code, stderr)
		require.Contains(t, stderr, "is RUNNING: log aggregation is on")
		require.Contains(t, stderr, "reading them from the NodeManagers")
		require.NotContains(t, stderr, "log aggregation is off")
		require.Contains(t, out, "Container: "+c2+" on 127.0.0.2:45454\nLogType: stdout\nstdout of "+c2+"\n")
	})
}

func TestNodeOf(t *testing.T) {
	for name, want := range map[string]string{
		"127.0.0.2_45454":               "127.0.0.2:45454",
		"nm-1.example.com_8041":         "nm-1.example.com:8041",
		"nm_host_8041":                  "nm_host:8041",
		"127.0.0.2_45454_1700000000000": "127.0.0.2:45454",
		"odd":                           "odd",
	} {
		require.Equal(t, want, nodeOf(name), name)
	}
}

// nmLogs is a NodeManager web service serving "<file> of <container>".
func nmLogs() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, file, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/ws/v1/node/containerlogs/"), "/")
		fmt.Fprintf(w, "%s of %s\n", file, id)
	})
}
