package launch

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/resources"
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
			var got []resources.DeviceReport
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				require.Equal(t, http.MethodPost, r.Method)
				require.Equal(t, "application/json", r.Header.Get("Content-Type"))
				b, _ := io.ReadAll(r.Body)
				var rep resources.DeviceReport
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
			envVars := map[string]string{resources.EnvReportURL: srv.URL + "/api/report", EnvContainerID: "container_1_0001_01_000002", "TMPDIR": t.TempDir(),
				"LOG_DIRS": logDir + "," + t.TempDir()}
			code := Main(context.Background(), []string{"--", "true"}, Env{
				Getenv:   func(k string) string { return envVars[k] },
				Environ:  []string{"PATH=" + os.Getenv("PATH")},
				Stderr:   &stderr,
				Registry: registryWith(h),
				Load:     fixedSpecs(gpuSpec(2)),
				HTTP:     srv.Client(),
			})
			require.Equal(t, 0, code, stderr.String())
			mu.Lock()
			defer mu.Unlock()
			require.Equal(t, []resources.DeviceReport{{
				Container: "container_1_0001_01_000002",
				Resources: map[string][]resources.Properties{"gpu": {{"index": "0"}, {"index": "1"}}},
			}}, got)
			// Kept in the first log folder for a later AM attempt, whatever
			// this attempt answered.
			kept, err := os.ReadFile(filepath.Join(logDir, resources.ReportFile))
			require.NoError(t, err)
			var rep resources.DeviceReport
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
