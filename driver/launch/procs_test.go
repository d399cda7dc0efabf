package launch

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// Helpers for tests and benchmarks that run the real container-launcher
// binary as separate processes on a fake GPU host: the fake nvidia-smi of
// driver/gpu first on PATH, host coordination on, the state file in a
// temporary directory.

var (
	buildOnce sync.Once
	buildDir  string
	buildBin  string
	buildErr  error
)

func TestMain(m *testing.M) {
	// In-process launches (Main called by a test) start pinned
	// --per-device workers through os.Executable(), this test binary:
	// act as the launcher's __exec-pinned subcommand then.
	if len(os.Args) > 1 && os.Args[1] == pinExecCommand {
		os.Exit(Main(context.Background(), os.Args[1:], Env{Stderr: os.Stderr}))
	}
	// An engine's JVM calling its discovery script (bridge_test.go).
	if len(os.Args) > 1 && os.Args[1] == bridgeCallerRole {
		os.Exit(runBridgeCaller(os.Args[2:]))
	}
	flag := m.Run()
	if buildDir != "" {
		_ = os.RemoveAll(buildDir)
	}
	os.Exit(flag)
}

// launcherBinary builds cmd/container-launcher once per test binary.
func launcherBinary(tb testing.TB) string {
	tb.Helper()
	if runtime.GOOS != "linux" {
		tb.Skip("process tests need Linux (/proc for host coordination)")
	}
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "xres-launcher-test-")
		if buildErr != nil {
			return
		}
		buildBin, buildErr = buildInstalled(buildDir, "container-launcher", "../../cmd/container-launcher")
	})
	if buildErr != nil {
		tb.Fatal(buildErr)
	}
	return buildBin
}

// buildInstalled builds pkg static, as make build ships the launcher, and
// installs it as dir/name the way YARN localizes it (a streamed copy), not
// run where the linker left it: the linker writes its output through mmap,
// and the kernel then maps those page-cache pages at every exec in smaller
// pieces: the same bytes start 0.3-0.6 ms slower there (more page faults;
// an empty Go program too).
func buildInstalled(dir, name, pkg string) (string, error) {
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goBin); err != nil {
		goBin = "go"
	}
	linked := filepath.Join(dir, name+".linked")
	cmd := exec.Command(goBin, "build", "-o", linked, pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %w\n%s", pkg, err, out)
	}
	bin := filepath.Join(dir, name)
	return bin, copyExecutable(linked, bin)
}

// fakeGPUHost is a temporary directory with a configuration for nGPUs fake
// NVIDIA GPUs and a coordination state file.
type fakeGPUHost struct {
	dir   string
	conf  string
	state string
	env   []string
}

func newFakeGPUHost(tb testing.TB, nGPUs, amount int) *fakeGPUHost {
	tb.Helper()
	dir := tb.TempDir()
	fakebin, err := filepath.Abs("../gpu/testdata/fakebin")
	if err != nil {
		tb.Fatal(err)
	}
	h := &fakeGPUHost{dir: dir, conf: filepath.Join(dir, "flink-conf.yaml"), state: filepath.Join(dir, "coord", "state")}
	conf := fmt.Sprintf(`external-resources: gpu
external-resource.gpu.amount: %d
external-resource.gpu.yarn.config-key: yarn.io/gpu
external-resource.gpu.driver-factory.class: org.apache.flink.externalresource.gpu.GPUDriverFactory
external-resource.gpu.param.discovery.source: nvidia-smi
external-resource.gpu.param.coordination.file: %s
`, amount, h.state)
	if err := os.WriteFile(h.conf, []byte(conf), 0o644); err != nil {
		tb.Fatal(err)
	}
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "PATH", "XRES_FAKE_GPUS", "XRES_LOG_LEVEL", "FLINK_CONF_DIR", "CUDA_VISIBLE_DEVICES":
			continue
		}
		env = append(env, kv)
	}
	h.env = append(env,
		"PATH="+fakebin+string(os.PathListSeparator)+os.Getenv("PATH"),
		fmt.Sprintf("XRES_FAKE_GPUS=%d", nGPUs),
		"TMPDIR="+dir,
	)
	return h
}

// command returns the launcher command with args, on the fake host.
func (h *fakeGPUHost) command(bin string, args ...string) *exec.Cmd {
	cmd := exec.Command(bin, args...)
	cmd.Env = h.env
	cmd.Dir = h.dir
	return cmd
}

// probe runs `probe --json` and decodes it.
func (h *fakeGPUHost) probe(tb testing.TB, bin string) ProbeReport {
	tb.Helper()
	cmd := h.command(bin, "probe", "--conf", h.conf, "--json")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	_ = cmd.Run() // a non-zero code (no device left) still prints the report
	var rep ProbeReport
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		tb.Fatalf("probe --json: %v\nstdout: %s\nstderr: %s", err, stdout.String(), stderr.String())
	}
	return rep
}

// waitForFile waits until path exists.
func waitForFile(tb testing.TB, path string, within time.Duration) {
	tb.Helper()
	deadline := time.Now().Add(within)
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("%s did not appear within %s", path, within)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// copyExecutable writes a copy of the executable src at dst with plain
// writes.
func copyExecutable(src, dst string) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, data, 0o755)
}
