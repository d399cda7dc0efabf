package submit

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/yarn"
	"github.com/xres/xres/yarn/amplan"
	"github.com/xres/xres/yarn/rest"
)

const gpuResourceJSON = `{"memory": 8192, "vCores": 4, "resourceInformations": {"resourceInformation": [
	{"name": "memory-mb", "units": "Mi", "value": 8192}, {"name": "vcores", "value": 4}, {"name": "yarn.io/gpu", "value": 2}]}}`

// fakeRESTRM answers the few RM REST calls submission uses.
type fakeRESTRM struct {
	mu        sync.Mutex
	submitted map[string]any
	state     string
	killed    bool
}

func (f *fakeRESTRM) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.Method == "POST" && r.URL.Path == "/ws/v1/cluster/apps/new-application":
		_, _ = io.WriteString(w, `{"application-id": "application_1700000000000_0007", "maximum-resource-capability": `+gpuResourceJSON+`}`)
	case r.Method == "POST" && r.URL.Path == "/ws/v1/cluster/apps":
		_ = json.NewDecoder(r.Body).Decode(&f.submitted)
		f.state = "ACCEPTED"
		w.WriteHeader(http.StatusAccepted)
	case r.Method == "GET" && r.URL.Path == "/ws/v1/cluster/apps/application_1700000000000_0007":
		final := "UNDEFINED"
		if f.state == "KILLED" {
			final = "KILLED"
		}
		_, _ = io.WriteString(w, `{"app": {"id": "application_1700000000000_0007", "user": "alice", "name": "train", "queue": "default",
			"state": "`+f.state+`", "finalStatus": "`+final+`", "progress": 50.0, "trackingUrl": "http://rm:8088/proxy/x/", "diagnostics": ""}}`)
	case r.Method == "PUT" && r.URL.Path == "/ws/v1/cluster/apps/application_1700000000000_0007/state":
		f.killed, f.state = true, "KILLED"
		w.WriteHeader(http.StatusAccepted)
		_, _ = io.WriteString(w, `{"state": "ACCEPTED"}`)
	case r.Method == "GET" && r.URL.Path == "/ws/v1/cluster/nodes":
		_, _ = io.WriteString(w, `{"nodes": {"node": [{"id": "nm1:45454", "state": "RUNNING", "nodeHTTPAddress": "nm1:8042", "numContainers": 1,
			"usedResource": {"memory": 1024, "vCores": 1, "resourceInformations": {"resourceInformation": [{"name": "yarn.io/gpu", "value": 1}]}},
			"totalResource": `+gpuResourceJSON+`}]}}`)
	default:
		http.Error(w, "unexpected "+r.Method+" "+r.URL.Path, http.StatusNotFound)
	}
}

func newRESTRM(t *testing.T) (*rest.RM, *fakeRESTRM) {
	fake := &fakeRESTRM{}
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	c, err := rest.New(rest.Config{Endpoints: []string{srv.URL}, User: "alice", Retries: -1})
	require.NoError(t, err)
	return rest.NewRM(c), fake
}

func TestRESTSubmit(t *testing.T) {
	rm, fake := newRESTRM(t)
	fs := newMemFS()
	c := Client{RM: rm, Stager: Stager{FS: fs, DefaultFS: "hdfs://nn:8020"}}
	sub, err := c.Submit(context.Background(), testRequest(t))
	require.NoError(t, err)
	require.Equal(t, "application_1700000000000_0007", sub.AppID)

	spec := fake.submitted["am-container-spec"].(map[string]any)
	require.Equal(t, "./am run --conf flink-conf.yaml --workers 4 -- python train.py 1><LOG_DIR>/stdout 2><LOG_DIR>/stderr",
		spec["commands"].(map[string]any)["command"])
	entries := spec["local-resources"].(map[string]any)["entry"].([]any)
	first := entries[0].(map[string]any)
	require.Equal(t, "am", first["key"])
	v := first["value"].(map[string]any)
	require.Equal(t, "hdfs://nn:8020/user/alice/.xres/application_1700000000000_0007/am", v["resource"])
	require.Equal(t, "FILE", v["type"])
	require.Equal(t, "APPLICATION", v["visibility"])
	require.Equal(t, float64(len("AM-BINARY")), v["size"])
	require.Equal(t, float64(1700000000123), v["timestamp"])
	require.Equal(t, "XRES", fake.submitted["application-type"])

	rep, err := rm.ApplicationReport(context.Background(), sub.AppID)
	require.NoError(t, err)
	require.Equal(t, "ACCEPTED", rep.State)
	require.Equal(t, float32(0.5), rep.Progress)
	require.Equal(t, "train", rep.Name)

	require.NoError(t, rm.Kill(context.Background(), sub.AppID, "test"))
	require.True(t, fake.killed)
	rep, err = rm.ApplicationReport(context.Background(), sub.AppID)
	require.NoError(t, err)
	require.Equal(t, "KILLED", rep.FinalStatus)
	require.True(t, rep.Ended())
}

func TestRESTProfileCheckAndNodes(t *testing.T) {
	rm, _ := newRESTRM(t)
	req := testRequest(t)
	req.WorkerProfile = yarn.Resource{MemoryMB: 1024, VCores: 1, Extra: map[string]int64{"yarn.io/gpu": 3}}
	_, err := Client{RM: rm, Stager: Stager{FS: newMemFS(), DefaultFS: "hdfs://nn:8020"}}.Submit(context.Background(), req)
	require.ErrorIs(t, err, amplan.ErrProfileUnsatisfiable)
	require.ErrorContains(t, err, "asked 3 per worker, the largest container the cluster allows has 2")

	types, err := rm.ResourceTypes(context.Background())
	require.NoError(t, err)
	require.Equal(t, []yarn.ResourceType{{Name: "memory-mb"}, {Name: "vcores"}, {Name: "yarn.io/gpu"}}, types)

	nodes, err := rm.Nodes(context.Background(), "RUNNING")
	require.NoError(t, err)
	require.Len(t, nodes, 1)
	require.Equal(t, "nm1:45454", nodes[0].ID)
	require.Equal(t, "RUNNING", nodes[0].State)
	require.Equal(t, int64(2), nodes[0].Capability.Value("yarn.io/gpu"))
	require.Equal(t, int64(1), nodes[0].Used.Value("yarn.io/gpu"))
}
