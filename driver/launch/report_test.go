package launch

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/resources"
	"github.com/xres/xres/resources/contract"
)

func TestRunReportsDevicesToAM(t *testing.T) {
	tests := []struct {
		name   string
		status int
		warn   bool
	}{
		{name: "recorded", status: http.StatusNoContent},
		{name: "any 2xx is success", status: http.StatusOK},
		{name: "a redirect is not", status: http.StatusFound, warn: true},
		{name: "AM refuses: the worker runs anyway", status: http.StatusBadRequest, warn: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var got []contract.DeviceReport
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				require.Equal(t, http.MethodPost, r.Method)
				require.Equal(t, "application/json", r.Header.Get("Content-Type"))
				b, _ := io.ReadAll(r.Body)
				var rep contract.DeviceReport
				require.NoError(t, json.Unmarshal(b, &rep), string(b))
				mu.Lock()
				got = append(got, rep)
				mu.Unlock()
				w.WriteHeader(tc.status)
			}))
			defer srv.Close()

			h := newFakeHost()
			h.devices["gpu"] = 2
			var stderr syncBuffer
			logDir := t.TempDir()
			envVars := map[string]string{contract.EnvReportURL: srv.URL + "/api/report", EnvContainerID: "container_1_0001_01_000002", "TMPDIR": t.TempDir(),
				"LOG_DIRS": logDir + "," + t.TempDir()}
			code := Main(context.Background(), []string{"--", "true"}, Env{
				Getenv:   func(k string) string { return envVars[k] },
				Environ:  []string{"PATH=" + os.Getenv("PATH")},
				Stderr:   &stderr,
				Registry: registryWith(h),
				Load:     fixedSpecs(gpuSpec(2)),
			})
			require.Equal(t, 0, code, stderr.String())
			mu.Lock()
			defer mu.Unlock()
			require.Equal(t, []contract.DeviceReport{{
				Container: "container_1_0001_01_000002",
				Resources: map[string][]resources.Properties{"gpu": {{"index": "0"}, {"index": "1"}}},
			}}, got)
			// Kept in the first log folder for a later AM attempt, whatever
			// this attempt answered.
			kept, err := os.ReadFile(filepath.Join(logDir, contract.ReportFile))
			require.NoError(t, err)
			var rep contract.DeviceReport
			require.NoError(t, json.Unmarshal(kept, &rep))
			require.Equal(t, got[0], rep)
			if tc.warn {
				require.Contains(t, stderr.String(), "could not report the devices")
			} else {
				require.NotContains(t, stderr.String(), "could not report")
			}
		})
	}
}

// The launcher's own HTTP client (it does without net/http) against a
// net/http server: status, the refusal's message however the body is
// framed, redirects not followed, only http.
func TestPostHTTP(t *testing.T) {
	tests := []struct {
		name    string
		handler http.HandlerFunc
		code    int
		msg     string
	}{
		{name: "no content", code: 204, handler: func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(204) }},
		{name: "message with length", code: 400, msg: "bad report\n", handler: func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "bad report", http.StatusBadRequest)
		}},
		{name: "chunked message", code: 500, msg: "first part", handler: func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(500)
			_, _ = io.WriteString(w, "first part")
			w.(http.Flusher).Flush()
			_, _ = io.WriteString(w, " second part")
		}},
		{name: "redirect not followed", code: 302, handler: func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "/elsewhere", http.StatusFound)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []byte
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				require.Equal(t, http.MethodPost, r.Method)
				require.Equal(t, "/api/report?x=1", r.URL.RequestURI())
				require.Equal(t, "application/json", r.Header.Get("Content-Type"))
				got, _ = io.ReadAll(r.Body)
				tc.handler(w, r)
			}))
			defer srv.Close()
			code, status, msg, err := postHTTP(context.Background(), srv.URL+"/api/report?x=1", "application/json", []byte(`{"a":1}`))
			require.NoError(t, err)
			require.Equal(t, tc.code, code)
			require.Contains(t, status, http.StatusText(tc.code))
			require.Equal(t, `{"a":1}`, string(got))
			if tc.msg != "" {
				require.Equal(t, tc.msg, string(msg))
			}
		})
	}
	t.Run("https is refused", func(t *testing.T) {
		_, _, _, err := postHTTP(context.Background(), "https://am.example:443/x", "application/json", nil)
		require.ErrorContains(t, err, "unsupported scheme")
	})
	t.Run("a server that never answers meets the deadline", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		defer l.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		_, _, _, err = postHTTP(ctx, "http://"+l.Addr().String()+"/x", "application/json", nil)
		require.ErrorIs(t, err, context.DeadlineExceeded)
	})
}
