package harness

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fakeRM answers /ws/v1/cluster/apps/{id} with the next state of a script each call.
func fakeRM(t *testing.T, states ...string) (*Cluster, *atomic.Int32) {
	t.Helper()
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("user.name") != "tester" {
			http.Error(w, "no user.name", http.StatusUnauthorized)
			return
		}
		id, ok := strings.CutPrefix(r.URL.Path, "/ws/v1/cluster/apps/")
		if !ok {
			http.NotFound(w, r)
			return
		}
		n := int(calls.Add(1)) - 1
		s := states[min(n, len(states)-1)]
		json.NewEncoder(w).Encode(map[string]any{"app": map[string]any{
			"id": id, "state": s, "finalStatus": "UNDEFINED", "diagnostics": "diag of " + s}})
	}))
	t.Cleanup(srv.Close)
	return &Cluster{RMWebURL: srv.URL, User: "tester"}, &calls
}

// recorder is a testing.TB whose Fatal ends only the goroutine it runs in.
type recorder struct {
	testing.TB
	mu     sync.Mutex
	failed bool
	msgs   []string
}

func (r *recorder) Helper() {}
func (r *recorder) Logf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.msgs = append(r.msgs, fmt.Sprintf(format, args...))
}
func (r *recorder) Fatalf(format string, args ...any) {
	r.Logf(format, args...)
	r.mu.Lock()
	r.failed = true
	r.mu.Unlock()
	runtime.Goexit()
}
func (r *recorder) Fatal(args ...any) { r.Fatalf("%s", fmt.Sprint(args...)) }

// runRecorded runs f with a recorder in its own goroutine and waits for it.
func runRecorded(t *testing.T, f func(tb testing.TB)) *recorder {
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(r)
	}()
	<-done
	return r
}

func TestWaitForAppState(t *testing.T) {
	tests := []struct {
		name       string
		script     []string
		want       []string
		wantFail   string
		wantState  string
		wantCallsN int32
	}{
		{"reaches the state", []string{"NEW", "ACCEPTED", "RUNNING"}, []string{"RUNNING"}, "", "RUNNING", 3},
		{"any of several", []string{"ACCEPTED", "FAILED"}, []string{"FINISHED", "FAILED"}, "", "FAILED", 2},
		{"ends in another terminal state", []string{"ACCEPTED", "KILLED"}, []string{"RUNNING"},
			"ended KILLED (final status UNDEFINED), want RUNNING; diagnostics: diag of KILLED", "", 2},
		{"never gets there", []string{"ACCEPTED"}, []string{"RUNNING"}, "still ACCEPTED, want RUNNING", "", 0},
	}
	old := AppWaitTimeout
	AppWaitTimeout = 1500 * time.Millisecond
	t.Cleanup(func() { AppWaitTimeout = old })
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, calls := fakeRM(t, tc.script...)
			var got AppInfo
			r := runRecorded(t, func(tb testing.TB) { got = c.WaitForAppState(tb, "application_1_0001", tc.want...) })
			if tc.wantFail != "" {
				require.True(t, r.failed)
				require.Contains(t, strings.Join(r.msgs, "\n"), tc.wantFail)
				return
			}
			require.False(t, r.failed, r.msgs)
			require.Equal(t, tc.wantState, got.State)
			require.Equal(t, "application_1_0001", got.ID)
			require.Equal(t, tc.wantCallsN, calls.Load())
		})
	}
}

func TestURLAddsUser(t *testing.T) {
	c := &Cluster{RMWebURL: "http://rm:8088/", User: "a b"}
	require.Equal(t, "http://rm:8088/ws/v1/cluster/apps?user.name=a+b", c.URL("/ws/v1/cluster/apps"))
	require.Equal(t, "http://rm:8088/ws/v1/x?states=RUNNING&user.name=a+b", c.URL("/ws/v1/x?states=RUNNING"))
}

func TestRESTErrorsNameURLAndStatus(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"RemoteException":{"message":"boom"}}`, http.StatusBadRequest)
	}))
	defer srv.Close()
	c := &Cluster{RMWebURL: srv.URL, User: "u"}
	r := runRecorded(t, func(tb testing.TB) { c.GetJSON(tb, "/ws/v1/cluster/info", &struct{}{}) })
	require.True(t, r.failed)
	msg := strings.Join(r.msgs, "\n")
	require.Contains(t, msg, srv.URL+"/ws/v1/cluster/info")
	require.Contains(t, msg, "unexpected http status 400")
	require.Contains(t, msg, "boom")
}

func TestListAndNodeTotal(t *testing.T) {
	tests := []struct {
		name    string
		json    string
		wantGPU []int64
	}{
		{"array with totalResource", `{"nodes":{"node":[{"id":"a","totalResource":{"resourceInformations":{"resourceInformation":[{"name":"yarn.io/gpu","value":2}]}}}]}}`, []int64{2}},
		{"single object, used + available", `{"nodes":{"node":{"id":"a",
			"usedResource":{"resourceInformations":{"resourceInformation":{"name":"yarn.io/gpu","value":1}}},
			"availableResource":{"resourceInformations":{"resourceInformation":[{"name":"yarn.io/gpu","value":3}]}}}}}`, []int64{4}},
		{"null", `{"nodes":{"node":null}}`, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var r struct {
				Nodes struct {
					Node List[Node] `json:"node"`
				} `json:"nodes"`
			}
			require.NoError(t, json.Unmarshal([]byte(tc.json), &r))
			var got []int64
			for _, n := range r.Nodes.Node {
				v, ok := n.Total().Get("yarn.io/gpu")
				require.True(t, ok)
				got = append(got, v)
			}
			require.Equal(t, tc.wantGPU, got)
		})
	}
}
