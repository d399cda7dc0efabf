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
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/stretchr/testify/require"

	"github.com/xres/xres/resources/contract"
)

// fakeRendezvousAM serves the report and the rendezvous: it answers "wait"
// until it has been asked notReady times, then ready with env and probe.
type fakeRendezvousAM struct {
	mu       sync.Mutex
	reports  []contract.DeviceReport
	asks     int
	notReady int
	env      map[string]string
	probe    []string
	// ranEarly is set when the worker's output existed while the AM still
	// said wait.
	out      string
	ranEarly bool
	// secret, when set, is the application's: unsigned counts the asks
	// not signed with it (a real AM refuses them).
	secret   []byte
	unsigned int
	// forge: the answers are not signed (a fake AM on the AM's address).
	forge bool
	// portSeen, when set, is created once a report with a port arrives.
	portSeen string
}

func (f *fakeRendezvousAM) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case r.Method == http.MethodPost && r.URL.Path == contract.ReportPath:
		var rep contract.DeviceReport
		b, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(b, &rep)
		f.reports = append(f.reports, rep)
		if rep.Port > 0 && f.portSeen != "" {
			_ = os.WriteFile(f.portSeen, nil, 0o644)
		}
		w.WriteHeader(http.StatusNoContent)
	case r.Method == http.MethodGet && r.URL.Path == contract.RendezvousPath:
		f.asks++
		if f.secret != nil && !contract.VerifyReport(f.secret, contract.RendezvousMessage(r.URL.Query().Get("container")), r.Header.Get(contract.HeaderReportSignature)) {
			f.unsigned++
		}
		if f.secret != nil && !f.forge {
			w = signingWriter{w, f.secret, r}
		}
		if _, err := os.Stat(f.out); err == nil && f.asks <= f.notReady {
			f.ranEarly = true
		}
		ans := contract.Rendezvous{Group: "ring", Rank: 1, WorldSize: 2}
		if r.URL.Query().Get("container") != "container_1_0001_01_000003" {
			http.Error(w, "unknown container", http.StatusNotFound)
			return
		}
		if f.asks > f.notReady {
			ans.Ready, ans.Env, ans.Probe = true, f.env, f.probe
		} else {
			ans.Waiting = "gang start of group ring: 1 of 2 workers have reserved their devices"
		}
		_ = json.NewEncoder(w).Encode(ans)
	default:
		http.NotFound(w, r)
	}
}

// signingWriter signs the (one) body written as the AM does, with key
// over the request's nonce.
type signingWriter struct {
	http.ResponseWriter
	key []byte
	r   *http.Request
}

func (s signingWriter) Write(b []byte) (int, error) {
	id := s.r.URL.Query().Get("container")
	s.Header().Set(contract.HeaderAnswerSignature, contract.SignReport(s.key, contract.AnswerMessage(contract.AnswerRendezvous, id, s.r.Header.Get(contract.HeaderNonce), b)))
	s.Header().Set("Content-Length", strconv.Itoa(len(b)))
	return s.ResponseWriter.Write(b)
}

// A waiting worker: the launcher picks its port, reports it with the
// devices, asks until the AM says ready, waits for the dependency to
// listen, and only then starts the worker with XRES_PORT and the AM's
// environment.
func TestRunWaitsForRendezvous(t *testing.T) {
	dep, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer dep.Close()
	out := filepath.Join(t.TempDir(), "seen")
	secret := []byte("0123456789abcdef0123456789abcdef")
	am := &fakeRendezvousAM{notReady: 3, out: out, probe: []string{dep.Addr().String()}, secret: secret,
		env: map[string]string{"XRES_RANK": "1", "MASTER_ADDR": "nm1", "MASTER_PORT": "7000"}}
	srv := httptest.NewServer(am)
	defer srv.Close()

	h := newFakeHost()
	h.devices["gpu"] = 1
	var stderr syncBuffer
	envVars := map[string]string{
		contract.EnvReportURL: srv.URL + contract.ReportPath, contract.EnvRendezvousURL: srv.URL + contract.RendezvousPath,
		contract.EnvRendezvousWait: "true", contract.EnvPortWanted: "auto",
		EnvContainerID: "container_1_0001_01_000003", "TMPDIR": t.TempDir(), EnvTokenFile: tokenFile(t, secret),
	}
	code := Main(context.Background(), []string{"--", "sh", "-c", `echo "$XRES_RANK $XRES_PORT $MASTER_ADDR:$MASTER_PORT" > ` + out}, Env{
		Getenv:         func(k string) string { return envVars[k] },
		Environ:        []string{"PATH=" + os.Getenv("PATH")},
		Dir:            t.TempDir(), // the info file goes there, not into this package
		Stderr:         &stderr,
		Registry:       registryWith(h),
		Load:           fixedSpecs(gpuSpec(1)),
		RendezvousPoll: time.Millisecond,
	})
	require.Equal(t, 0, code, stderr.String())
	am.mu.Lock()
	defer am.mu.Unlock()
	require.False(t, am.ranEarly, "the worker ran before the AM said ready")
	require.Equal(t, 4, am.asks)
	require.Zero(t, am.unsigned, "asks not signed with the application's secret")
	// The device report once, then when the command started.
	require.Len(t, am.reports, 2)
	port := am.reports[0].Port
	require.Positive(t, port)
	require.Empty(t, am.reports[1].Resources)
	require.False(t, am.reports[1].CommandStarted.Before(am.reports[0].Reserved))
	b, err := os.ReadFile(out)
	require.NoError(t, err)
	require.Equal(t, "1 "+strconv.Itoa(port)+" nm1:7000", strings.TrimSpace(string(b)))
	require.Contains(t, stderr.String(), "waiting for the application master's go")
}

// A group that does not wait asks once; an AM that cannot answer leaves
// the worker without XRES_RANK, started all the same.
func TestRunWithoutWaitAsksOnce(t *testing.T) {
	out := filepath.Join(t.TempDir(), "seen")
	var stderr syncBuffer
	envVars := map[string]string{contract.EnvRendezvousURL: "http://127.0.0.1:1/api/rendezvous",
		EnvContainerID: "container_1_0001_01_000003", "TMPDIR": t.TempDir()}
	h := newFakeHost()
	h.devices["gpu"] = 1
	code := Main(context.Background(), []string{"--", "sh", "-c", `echo "rank=$XRES_RANK port=$XRES_PORT" > ` + out}, Env{
		Getenv:   func(k string) string { return envVars[k] },
		Environ:  []string{"PATH=" + os.Getenv("PATH")},
		Dir:      t.TempDir(),
		Stderr:   &stderr,
		Registry: registryWith(h),
		Load:     fixedSpecs(gpuSpec(1)),
	})
	require.Equal(t, 0, code, stderr.String())
	b, err := os.ReadFile(out)
	require.NoError(t, err)
	require.Equal(t, "rank= port=", strings.TrimSpace(string(b)))
	require.Contains(t, stderr.String(), "starting it without XRES_RANK")
}

// port: worker: the worker gets XRES_PORT_FILE (no XRES_PORT), binds a
// port of its own and writes it there; the launcher then reports it to the
// AM, the whole report again (devices included), while the worker runs.
func TestRunWorkerReportsItsPort(t *testing.T) {
	secret := []byte("0123456789abcdef0123456789abcdef")
	seen := filepath.Join(t.TempDir(), "port-seen")
	am := &fakeRendezvousAM{env: map[string]string{"XRES_RANK": "0"}, secret: secret, portSeen: seen}
	srv := httptest.NewServer(am)
	defer srv.Close()
	h := newFakeHost()
	h.devices["gpu"] = 1
	var stderr syncBuffer
	dir := t.TempDir()
	out := filepath.Join(t.TempDir(), "seen")
	envVars := map[string]string{
		contract.EnvReportURL: srv.URL + contract.ReportPath, contract.EnvRendezvousURL: srv.URL + contract.RendezvousPath,
		contract.EnvRendezvousWait: "true", contract.EnvPortWanted: "worker",
		EnvContainerID: "container_1_0001_01_000003", "TMPDIR": t.TempDir(), EnvTokenFile: tokenFile(t, secret),
		"LOG_DIRS": dir,
	}
	// The worker writes half a line first (the launcher must not read it),
	// then the rest, then runs on until the AM has the port (the launcher
	// stops reporting once the worker has ended).
	script := `echo "file=$XRES_PORT_FILE port=$XRES_PORT" > ` + out + `
printf 43 > "$XRES_PORT_FILE"; sleep 0.3; echo 210 >> "$XRES_PORT_FILE"
for i in $(seq 200); do [ -e ` + seen + ` ] && exit 0; sleep 0.05; done; exit 9`
	code := Main(context.Background(), []string{"--", "sh", "-c", script}, Env{
		Getenv:         func(k string) string { return envVars[k] },
		Environ:        []string{"PATH=" + os.Getenv("PATH"), "LOG_DIRS=" + dir},
		Dir:            dir,
		Stderr:         &stderr,
		Registry:       registryWith(h),
		Load:           fixedSpecs(gpuSpec(1)),
		RendezvousPoll: time.Millisecond,
	})
	require.Equal(t, 0, code, stderr.String())
	b, err := os.ReadFile(out)
	require.NoError(t, err)
	require.Equal(t, "file="+filepath.Join(dir, contract.PortFileName)+" port=", strings.TrimSpace(string(b)))
	am.mu.Lock()
	defer am.mu.Unlock()
	var ports []int
	for _, r := range am.reports {
		if r.CommandStarted.IsZero() {
			ports = append(ports, r.Port)
		}
	}
	require.Equal(t, []int{0, 43210}, ports, "the device report without a port, then again with the worker's")
	last := am.reports[len(am.reports)-1]
	if last.Port != 43210 {
		last = am.reports[len(am.reports)-2]
	}
	require.Len(t, last.Resources["gpu"], 1, "the port's report carries the devices too")
	kept, err := os.ReadFile(filepath.Join(dir, contract.ReportFile))
	require.NoError(t, err)
	require.Contains(t, string(kept), `"port":43210`, "the report kept for a later AM attempt has the port")
	require.Contains(t, stderr.String(), "the worker reported its port")
}

// A port file that holds no port is logged once and read again.
func TestWatchPortFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), contract.PortFileName)
	var log syncBuffer
	logger := logrus.New()
	logger.SetOutput(&log)
	got := make(chan int, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	go watchPortFile(ctx, path, time.Millisecond, logger, func(p int) { got <- p })
	require.NoError(t, os.WriteFile(path, []byte("http\n"), 0o644))
	require.Eventually(t, func() bool { return strings.Contains(log.String(), "holds no port") }, 5*time.Second, time.Millisecond)
	require.NoError(t, os.WriteFile(path, []byte(" 8081 \n"), 0o644))
	select {
	case p := <-got:
		require.Equal(t, 8081, p)
	case <-ctx.Done():
		t.Fatal("the rewritten port was never read")
	}
	require.Equal(t, 1, strings.Count(log.String(), "holds no port"), log.String())
}

func TestRendezvousPort(t *testing.T) {
	p, err := rendezvousPort("")
	require.NoError(t, err)
	require.Zero(t, p)
	p, err = rendezvousPort("4242")
	require.NoError(t, err)
	require.Equal(t, 4242, p)
	p, err = rendezvousPort("AUTO")
	require.NoError(t, err)
	require.Positive(t, p)
	p, err = rendezvousPort("worker")
	require.NoError(t, err)
	require.Zero(t, p, "the worker picks it")
	_, err = rendezvousPort("http")
	require.ErrorIs(t, err, ErrConfig)
	require.ErrorContains(t, err, `XRES_PORT_WANTED="http" is not a port`)
}

// The launcher passes on of the AM's answer only the variables xres
// defines for the rendezvous, and only from an answer the AM signed for
// this request: an answer that sets CUDA_VISIBLE_DEVICES (one GPU is
// reserved), LD_PRELOAD or PATH gives the worker none of them, and an
// unsigned answer (a fake AM on the AM's address) gives it nothing.
func TestRendezvousAnswerFilteredAndAuthenticated(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	hostile := map[string]string{"XRES_RANK": "1", "XRES_TRAINER_ADDRESSES": "nm1:7000,nm2:7001", "MASTER_PORT": "7000",
		"CUDA_VISIBLE_DEVICES": "0,1,2,3", "LD_PRELOAD": "/tmp/evil.so", "PATH": "/tmp/evil", "XRES_RESOURCE_GPU_AMOUNT": "4",
		"MASTER_ADDR": "nm1; rm -rf /", "WORLD_SIZE": "two"}
	for _, tc := range []struct {
		name  string
		forge bool
		want  string
	}{
		{name: "signed: only the rendezvous variables", want: "rank=1 addrs=nm1:7000,nm2:7001 port=7000 cuda=0 preload= master= ws="},
		{name: "unsigned: nothing", forge: true, want: "rank= addrs= port= cuda=0 preload= master= ws="},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "seen")
			am := &fakeRendezvousAM{secret: key, forge: tc.forge, env: hostile}
			srv := httptest.NewServer(am)
			defer srv.Close()
			h := newFakeHost()
			h.devices["gpu"] = 4
			var stderr syncBuffer
			envVars := map[string]string{
				contract.EnvReportURL: srv.URL + contract.ReportPath, contract.EnvRendezvousURL: srv.URL + contract.RendezvousPath,
				EnvContainerID: "container_1_0001_01_000003", "TMPDIR": t.TempDir(), EnvTokenFile: tokenFile(t, key),
			}
			code := Main(context.Background(), []string{"--", "sh", "-c",
				`echo "rank=$XRES_RANK addrs=$XRES_TRAINER_ADDRESSES port=$MASTER_PORT cuda=$CUDA_VISIBLE_DEVICES preload=$LD_PRELOAD master=$MASTER_ADDR ws=$WORLD_SIZE" > ` + out}, Env{
				Getenv:         func(k string) string { return envVars[k] },
				Environ:        []string{"PATH=" + os.Getenv("PATH")},
				Dir:            t.TempDir(),
				Stderr:         &stderr,
				Registry:       registryWith(h),
				Load:           fixedSpecs(gpuSpec(1)),
				RendezvousPoll: time.Millisecond,
			})
			require.Equal(t, 0, code, stderr.String())
			b, err := os.ReadFile(out)
			require.NoError(t, err)
			require.Equal(t, tc.want, strings.TrimSpace(string(b)))
			if tc.forge {
				require.Contains(t, stderr.String(), "not signed by the application master")
			} else {
				for _, name := range []string{"CUDA_VISIBLE_DEVICES", "LD_PRELOAD", "PATH", "MASTER_ADDR", "WORLD_SIZE"} {
					require.Contains(t, stderr.String(), name, "the dropped variable is named")
				}
				require.NotContains(t, stderr.String(), "evil", "values are not logged")
			}
		})
	}
}

// XRES_AM_REPORT_URL (and so the rendezvous URL) may hold user
// information or a token: the launcher's log never shows them.
func TestReportURLRedactedInLogs(t *testing.T) {
	var stderr syncBuffer
	const secret, token = "S3cr3tPass", "T0kenValue"
	base := "http://user:" + secret + "@127.0.0.1:1"
	envVars := map[string]string{
		contract.EnvReportURL: base + contract.ReportPath + "?token=" + token, contract.EnvRendezvousURL: base + contract.RendezvousPath + "?access_token=" + token,
		contract.EnvWorkersURL: base + "/api/workers?sig=" + token,
		EnvContainerID:         "container_1_0001_01_000003", "TMPDIR": t.TempDir(), EnvTokenFile: tokenFile(t, []byte("0123456789abcdef0123456789abcdef")),
	}
	h := newFakeHost()
	h.devices["gpu"] = 1
	code := Main(context.Background(), []string{"--log-level", "debug", "--", "true"}, Env{
		Getenv:   func(k string) string { return envVars[k] },
		Environ:  []string{"PATH=" + os.Getenv("PATH")},
		Dir:      t.TempDir(),
		Stderr:   &stderr,
		Registry: registryWith(h),
		Load:     fixedSpecs(gpuSpec(1)),
	})
	require.Equal(t, 0, code, stderr.String())
	require.Contains(t, stderr.String(), "could not report the devices", "the failure is logged")
	require.Contains(t, stderr.String(), "127.0.0.1:1", "with the AM's address")
	require.NotContains(t, stderr.String(), secret)
	require.NotContains(t, stderr.String(), token)
}

// The launcher reads the worker counts with the peers' addresses signed
// with its container's key, and writes $XRES_WORKERS_FILE only from an
// answer the AM signed for that request.
func TestWorkersFileFromSignedAnswers(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	const id = "container_1_0001_01_000003"
	for _, tc := range []struct {
		name  string
		forge bool
		want  string
	}{
		{name: "signed", want: `{"target":2,"minimum":2,"running":2,"groups":[{"name":"w","addresses":["nm1:7000","nm2:7001"]}]}`},
		{name: "a fake AM's answer is not written", forge: true, want: "none"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			signed := 0
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body := []byte(`{"target":2,"minimum":2,"running":2,"groups":[{"name":"w"}]}`)
				if r.URL.Query().Get("container") == id && contract.VerifyReport(key, contract.WorkersMessage(id), r.Header.Get(contract.HeaderReportSignature)) {
					mu.Lock()
					signed++
					mu.Unlock()
					body = []byte(`{"target":2,"minimum":2,"running":2,"groups":[{"name":"w","addresses":["nm1:7000","nm2:7001"]}]}`)
				}
				if !tc.forge {
					w.Header().Set(contract.HeaderAnswerSignature, contract.SignReport(key, contract.AnswerMessage(contract.AnswerWorkers, id, r.Header.Get(contract.HeaderNonce), body)))
				}
				_, _ = w.Write(body)
			}))
			defer srv.Close()
			out := filepath.Join(t.TempDir(), "seen")
			h := newFakeHost()
			h.devices["gpu"] = 1
			var stderr syncBuffer
			envVars := map[string]string{contract.EnvWorkersURL: srv.URL + "/api/workers", EnvContainerID: id,
				"TMPDIR": t.TempDir(), EnvTokenFile: tokenFile(t, key)}
			code := Main(context.Background(), []string{"--", "sh", "-c", `cat "$XRES_WORKERS_FILE" > ` + out + ` 2>/dev/null || echo none > ` + out}, Env{
				Getenv:   func(k string) string { return envVars[k] },
				Environ:  []string{"PATH=" + os.Getenv("PATH")},
				Dir:      t.TempDir(),
				Stderr:   &stderr,
				Registry: registryWith(h),
				Load:     fixedSpecs(gpuSpec(1)),
			})
			require.Equal(t, 0, code, stderr.String())
			b, err := os.ReadFile(out)
			require.NoError(t, err)
			require.Equal(t, tc.want, strings.TrimSpace(string(b)))
			mu.Lock()
			defer mu.Unlock()
			require.Equal(t, 1, signed, "the launcher's request was signed with its key")
		})
	}
}
