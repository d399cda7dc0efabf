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

// tokenFile writes a Hadoop token storage file (format 0, as NodeManagers
// write it) holding one token and, unless secret is nil, the report
// secret, and returns its path.
func tokenFile(t testing.TB, secret []byte) string {
	t.Helper()
	text := func(b []byte) []byte { return append([]byte{byte(len(b))}, b...) }
	f := []byte("HDTS\x00\x01")
	for _, field := range []string{"alias", "id", "pw", "HDFS_DELEGATION_TOKEN", "nn:8020"} {
		f = append(f, text([]byte(field))...)
	}
	if secret == nil {
		f = append(f, 0)
	} else {
		f = append(f, 2)
		f = append(append(f, text([]byte("other.secret"))...), text([]byte("x"))...)
		f = append(append(f, text([]byte(contract.ContainerKeyAlias))...), text(secret)...)
	}
	p := filepath.Join(t.TempDir(), "container_tokens")
	require.NoError(t, os.WriteFile(p, f, 0o600))
	return p
}

func TestRunReportsDevicesToAM(t *testing.T) {
	secret := []byte("0123456789abcdef0123456789abcdef")
	tests := []struct {
		name     string
		status   int
		warn     string
		tokens   string // HADOOP_TOKEN_FILE_LOCATION: "secret", "none" (a file without it), "" (unset)
		unsigned bool
	}{
		{name: "recorded", status: http.StatusNoContent, tokens: "secret"},
		{name: "any 2xx is success", status: http.StatusOK, tokens: "secret"},
		{name: "a redirect is not", status: http.StatusFound, tokens: "secret", warn: "302 Found"},
		{name: "AM refuses: the worker runs anyway", status: http.StatusBadRequest, tokens: "secret", warn: "400 Bad Request"},
		{name: "no secret in the credentials: unsigned, and the log says why", status: http.StatusUnauthorized, tokens: "none", unsigned: true,
			warn: "holds no secret key " + contract.ContainerKeyAlias},
		{name: "no credentials file: unsigned", status: http.StatusUnauthorized, unsigned: true, warn: EnvTokenFile + " is not set"},
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
				if tc.unsigned {
					require.Empty(t, r.Header.Get(contract.HeaderReportSignature))
				} else {
					require.True(t, contract.VerifyReport(secret, b, r.Header.Get(contract.HeaderReportSignature)), "signature %q", r.Header.Get(contract.HeaderReportSignature))
				}
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
			switch tc.tokens {
			case "secret":
				envVars[EnvTokenFile] = tokenFile(t, secret)
			case "none":
				envVars[EnvTokenFile] = tokenFile(t, nil)
			}
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
			// The device report, with when the launcher started and had
			// reserved them; then, once the command ran, when it started.
			require.Len(t, got, 2)
			dev, cmd := got[0], got[1]
			require.Positive(t, dev.Seq, "the report carries its seq, inside what is signed")
			require.Greater(t, cmd.Seq, dev.Seq, "each report's seq is above the last")
			dev.Seq = 0
			require.False(t, dev.LauncherStarted.IsZero())
			require.False(t, dev.LauncherStarted.After(dev.Reserved), "launcher started %s, reserved %s", dev.LauncherStarted, dev.Reserved)
			require.False(t, dev.Reserved.After(cmd.CommandStarted), "reserved %s, command started %s", dev.Reserved, cmd.CommandStarted)
			dev.LauncherStarted, dev.Reserved = time.Time{}, time.Time{}
			require.Equal(t, contract.DeviceReport{
				Container: "container_1_0001_01_000002",
				Resources: map[string][]resources.Properties{"gpu": {{"index": "0"}, {"index": "1"}}},
			}, dev)
			require.Equal(t, "container_1_0001_01_000002", cmd.Container)
			require.Empty(t, cmd.Resources, "the command-started report names no devices")
			// Kept in the first log folder for a later AM attempt, whatever
			// this attempt answered.
			kept, err := os.ReadFile(filepath.Join(logDir, contract.ReportFile))
			require.NoError(t, err)
			var rep contract.DeviceReport
			require.NoError(t, json.Unmarshal(kept, &rep))
			require.Equal(t, got[0], rep)
			if tc.warn != "" {
				require.Contains(t, stderr.String(), "could not report the devices")
				require.Contains(t, stderr.String(), tc.warn)
			} else {
				require.NotContains(t, stderr.String(), "could not report")
			}
			require.NotContains(t, stderr.String(), string(secret), "the secret never reaches the log")
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
				require.Equal(t, "1", r.Header.Get("X-A"))
				require.Equal(t, "2", r.Header.Get("X-B"))
				got, _ = io.ReadAll(r.Body)
				tc.handler(w, r)
			}))
			defer srv.Close()
			code, status, msg, err := postHTTP(context.Background(), srv.URL+"/api/report?x=1", "application/json", map[string]string{"X-A": "1", "X-B": "2"}, []byte(`{"a":1}`))
			require.NoError(t, err)
			require.Equal(t, tc.code, code)
			require.Contains(t, status, http.StatusText(tc.code))
			require.Equal(t, `{"a":1}`, string(got))
			if tc.msg != "" {
				require.Equal(t, tc.msg, string(msg))
			}
		})
	}
	t.Run("a line break in a header field is refused", func(t *testing.T) {
		_, _, _, err := postHTTP(context.Background(), "http://127.0.0.1:1/x", "application/json", map[string]string{"X-A": "1\r\nX-Evil: 1"}, nil)
		require.ErrorContains(t, err, "line break")
	})
	t.Run("https is refused", func(t *testing.T) {
		_, _, _, err := postHTTP(context.Background(), "https://am.example:443/x", "application/json", nil, nil)
		require.ErrorContains(t, err, "unsupported scheme")
	})
	t.Run("a server that never answers meets the deadline", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		defer l.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		_, _, _, err = postHTTP(ctx, "http://"+l.Addr().String()+"/x", "application/json", nil, nil)
		require.ErrorIs(t, err, context.DeadlineExceeded)
	})
}
