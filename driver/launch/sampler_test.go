package launch

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/driver/gpu"
	"github.com/xres/xres/resources"
	"github.com/xres/xres/resources/contract"
)

func TestNVMLHelperNameIsTheDrivers(t *testing.T) {
	require.Equal(t, gpu.NVMLHelperName, nvmlHelperName)
}

// While the worker runs, the launcher runs "xres-nvml sample" for its
// GPUs every xres.metrics.interval and relays each line to the AM as a
// signed samples report (lines that are no samples are skipped); when the
// worker ends the helper is stopped, never left behind.
func TestRunSamplesGPUsWhileWorkerRuns(t *testing.T) {
	secret := []byte("0123456789abcdef0123456789abcdef")
	dir := t.TempDir()
	enough := filepath.Join(dir, "enough") // the worker ends once it exists
	var mu sync.Mutex
	var samples []contract.DeviceReport
	var sizes []int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var rep contract.DeviceReport
		require.NoError(t, json.Unmarshal(b, &rep), string(b))
		require.True(t, contract.VerifyReport(secret, b, r.Header.Get(contract.HeaderReportSignature)))
		if len(rep.GPU) > 0 {
			mu.Lock()
			samples, sizes = append(samples, rep), append(sizes, len(b))
			if len(samples) == 2 {
				require.NoError(t, os.WriteFile(enough, nil, 0o644))
			}
			mu.Unlock()
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()

	bin := filepath.Join(dir, "bin")
	require.NoError(t, os.Mkdir(bin, 0o755))
	line := func(at int64, u0, u1 int) string {
		return `[{"i":"0","u":"GPU-f0","t":` + strconv.FormatInt(at, 10) + `,"util":` + strconv.Itoa(u0) + `,"mem":1024,"pw":61.5,"temp":40,"xid":0},` +
			`{"i":"1","u":"GPU-f1","t":` + strconv.FormatInt(at, 10) + `,"util":` + strconv.Itoa(u1) + `,"mem":30000,"pw":290,"temp":70,"xid":1}]`
	}
	script := "#!/bin/sh\necho \"$@\" > " + filepath.Join(dir, "args") + "\necho $$ > " + filepath.Join(dir, "pid") + "\n" +
		"echo '" + line(1765000000, 3, 97) + "'\necho 'not samples'\necho '" + line(1765000010, 2, 95) + "'\nexec sleep 1000\n"
	require.NoError(t, os.WriteFile(filepath.Join(bin, "xres-nvml"), []byte(script), 0o755))

	h := newFakeHost()
	h.devices["gpu"] = 2
	var stderr syncBuffer
	envVars := map[string]string{contract.EnvReportURL: srv.URL + "/api/report", EnvContainerID: "container_1_0001_01_000002", "TMPDIR": t.TempDir(),
		EnvTokenFile: tokenFile(t, secret), "PATH": bin + ":" + os.Getenv("PATH")}
	code := Main(context.Background(), []string{"--", "sh", "-c", "while [ ! -e " + enough + " ]; do sleep 0.02; done"}, Env{
		Getenv:   func(k string) string { return envVars[k] },
		Environ:  []string{"PATH=" + os.Getenv("PATH")},
		Stderr:   &stderr,
		Registry: registryWith(h),
		Load: func(Config) (Loaded, error) {
			return Loaded{Specs: []resources.Spec{gpuSpec(2)}, MetricsInterval: 250 * time.Millisecond}, nil
		},
	})
	require.Equal(t, 0, code, stderr.String())

	args, err := os.ReadFile(filepath.Join(dir, "args"))
	require.NoError(t, err)
	require.Equal(t, "sample --interval 250ms --gpus 0,1", strings.TrimSpace(string(args)))
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, samples, 2)
	require.Equal(t, "container_1_0001_01_000002", samples[0].Container)
	require.Empty(t, samples[0].Resources)
	require.Greater(t, samples[1].Seq, samples[0].Seq)
	require.Equal(t, []contract.GPUSample{
		{Index: "0", UUID: "GPU-f0", At: 1765000010, Util: 2, MemMiB: 1024, PowerW: 61.5, TempC: 40},
		{Index: "1", UUID: "GPU-f1", At: 1765000010, Util: 95, MemMiB: 30000, PowerW: 290, TempC: 70, XIDs: 1},
	}, samples[1].GPU)
	require.Contains(t, stderr.String(), "no samples; skipped")
	t.Logf("a samples report of 2 GPUs: %d bytes", sizes[0])

	// The helper was stopped and waited for before the launcher returned.
	pid, err := os.ReadFile(filepath.Join(dir, "pid"))
	require.NoError(t, err)
	n, err := strconv.Atoi(strings.TrimSpace(string(pid)))
	require.NoError(t, err)
	require.ErrorIs(t, syscall.Kill(n, 0), syscall.ESRCH, "xres-nvml sample outlived the worker")
}

// xres.metrics.interval is read by every launcher (default 10 s; 0: off);
// a value that is no duration is a configuration error naming the key.
func TestMetricsIntervalConfig(t *testing.T) {
	l, err := LoadConfig(Config{Path: "testdata/conf/ok", Getenv: func(string) string { return "" }})
	require.NoError(t, err)
	require.Equal(t, 10*time.Second, l.MetricsInterval)
	l, err = LoadConfig(Config{Path: "testdata/conf/ok", Dynamic: []string{"xres.metrics.interval=0"}, Getenv: func(string) string { return "" }})
	require.NoError(t, err)
	require.Zero(t, l.MetricsInterval)
	_, err = LoadConfig(Config{Path: "testdata/conf/ok", Dynamic: []string{"xres.metrics.interval=soon"}, Getenv: func(string) string { return "" }})
	require.ErrorIs(t, err, ErrConfig)
	require.Contains(t, err.Error(), "xres.metrics.interval")
}
