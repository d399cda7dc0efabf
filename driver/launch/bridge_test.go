package launch

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/resources"
)

// bridgeCallerRole makes the test binary an engine's JVM that calls its
// discovery script (TestMain): `<test binary> __bridge-caller
// spark|flink OUT SCRIPT [AMOUNT [ARGS]]`. It runs the script as its own
// child the way the engine does: Spark's executor with no arguments,
// Flink's GPUDriver as one command string `<script> <amount> <args>`
// split on whitespace (the word "null" when the args are unset), killed
// after 10 s. It writes "<exit code>\n<stdout>\x00<stderr>" to OUT
// (renamed into place), then lives until its stdin closes, as the JVM
// that holds the devices.
const bridgeCallerRole = "__bridge-caller"

func runBridgeCaller(args []string) int {
	mode, out, script := args[0], args[1], args[2]
	argv := []string{script}
	if mode == "flink" {
		extra := "null"
		if len(args) > 4 && args[4] != "" {
			extra = args[4]
		}
		argv = strings.Fields(script + " " + args[3] + " " + extra)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	_ = cmd.Run()
	res := fmt.Sprintf("%d\n%s\x00%s", cmd.ProcessState.ExitCode(), stdout.String(), stderr.String())
	if err := os.WriteFile(out+".tmp", []byte(res), 0o644); err != nil || os.Rename(out+".tmp", out) != nil {
		return 1
	}
	_, _ = os.Stdin.Read(make([]byte, 1)) // until the test lets go
	return 0
}

// bridgeCaller is one running caller.
type bridgeCaller struct {
	cmd   *exec.Cmd
	stdin *os.File
	out   string
}

// callResult is what the caller's script call returned.
type callResult struct {
	code           int
	stdout, stderr string
}

// startCaller starts a caller of script in mode on h; AMOUNT and ARGS
// follow for Flink's protocol.
func startCaller(t *testing.T, h *fakeGPUHost, mode, script string, rest ...string) *bridgeCaller {
	t.Helper()
	self, err := os.Executable()
	require.NoError(t, err)
	out := filepath.Join(h.dir, fmt.Sprintf("call-%d", time.Now().UnixNano()))
	r, w, err := os.Pipe()
	require.NoError(t, err)
	cmd := exec.Command(self, append([]string{bridgeCallerRole, mode, out, script}, rest...)...)
	cmd.Env, cmd.Dir, cmd.Stdin = h.env, h.dir, r
	require.NoError(t, cmd.Start())
	_ = r.Close()
	c := &bridgeCaller{cmd: cmd, stdin: w, out: out}
	t.Cleanup(c.end)
	return c
}

// result waits for the caller's script call to return.
func (c *bridgeCaller) result(t *testing.T) callResult {
	t.Helper()
	waitForFile(t, c.out, 30*time.Second)
	b, err := os.ReadFile(c.out)
	require.NoError(t, err)
	head, rest, _ := strings.Cut(string(b), "\n")
	stdout, stderr, _ := strings.Cut(rest, "\x00")
	var code int
	_, err = fmt.Sscan(head, &code)
	require.NoError(t, err)
	return callResult{code: code, stdout: stdout, stderr: stderr}
}

// end lets the caller exit and waits for it.
func (c *bridgeCaller) end() {
	_ = c.stdin.Close()
	_ = c.cmd.Wait()
}

// sparkAddresses decodes Spark's ResourceInformation from a good call.
func sparkAddresses(t *testing.T, r callResult) []string {
	t.Helper()
	require.Equal(t, 0, r.code, "stderr: %s", r.stderr)
	var info struct {
		Name      string   `json:"name"`
		Addresses []string `json:"addresses"`
	}
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&info), "stdout %q", r.stdout)
	require.Equal(t, "gpu", info.Name)
	return info.Addresses
}

// bridgeOn sets h up for the bridge: a link xres-gpu-discovery to the
// launcher (as Spark's --files launcher#xres-gpu-discovery localizes it),
// and a wrapper script that runs it, the configuration in
// $FLINK_CONF_DIR.
func bridgeOn(t *testing.T, h *fakeGPUHost) (link, wrapper string) {
	t.Helper()
	link = filepath.Join(h.dir, "xres-gpu-discovery")
	require.NoError(t, os.Symlink(launcherBinary(t), link))
	wrapper = filepath.Join(h.dir, "gpu-discovery.sh")
	require.NoError(t, os.WriteFile(wrapper, []byte("#!/bin/sh\n\""+link+"\" \"$@\"\necho wrapper done >&2\n"), 0o755))
	h.env = append(h.env, "FLINK_CONF_DIR="+h.dir)
	return link, wrapper
}

// stateHolders maps each GPU index held in h's state file to its holder's pid.
func stateHolders(t *testing.T, h *fakeGPUHost, bin string) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, r := range h.probe(t, bin).Resources {
		for _, hd := range r.Coordination.Holders {
			// The fake nvidia-smi's UUIDs end in the index, in hex.
			i, err := strconv.ParseInt(hd.Device[len(hd.Device)-12:], 16, 0)
			require.NoError(t, err, hd.Device)
			if hd.Alive {
				out[strconv.FormatInt(i, 10)] = hd.PID
			}
		}
	}
	return out
}

// Issue 25: Spark's protocol. The holder is the caller (the JVM), not the
// wrapper script between them nor the bridge; the devices stay held after
// the bridge exits, for as long as the caller lives; a caller killed -9
// gives them back; too few free devices fail with one line naming the
// holder.
func TestBridgeSparkHolderIsCaller(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	bin := launcherBinary(t)
	h := newFakeGPUHost(t, 2, 1)
	link, wrapper := bridgeOn(t, h)

	a := startCaller(t, h, "spark", wrapper)
	ga := sparkAddresses(t, a.result(t))
	b := startCaller(t, h, "spark", link)
	gb := sparkAddresses(t, b.result(t))
	require.Len(t, ga, 1)
	require.Len(t, gb, 1)
	require.NotEqual(t, ga, gb, "two executors on one host got the same GPU")
	require.Equal(t, map[string]int{ga[0]: a.cmd.Process.Pid, gb[0]: b.cmd.Process.Pid}, stateHolders(t, h, bin),
		"each GPU is held by the JVM that called, through the wrapper script")

	c := startCaller(t, h, "spark", link)
	rc := c.result(t)
	require.Equal(t, ExitDiscovery, rc.code)
	require.Empty(t, rc.stdout)
	require.Equal(t, 1, strings.Count(strings.TrimSpace(rc.stderr), "\n")+1, "one stderr line: %q", rc.stderr)
	require.Contains(t, rc.stderr, fmt.Sprintf("held by pid %d", a.cmd.Process.Pid))
	require.Contains(t, rc.stderr, fmt.Sprintf("held by pid %d", b.cmd.Process.Pid))

	require.NoError(t, a.cmd.Process.Signal(syscall.SIGKILL))
	_ = a.cmd.Wait()
	d := startCaller(t, h, "spark", link)
	require.Equal(t, ga, sparkAddresses(t, d.result(t)), "the GPU of the caller killed -9 is reclaimed")
	b.end()
	e := startCaller(t, h, "spark", link)
	require.Equal(t, gb, sparkAddresses(t, e.result(t)), "the GPU of the caller that ended is free again")
}

// Issue 25: 32 callers at once on 8 GPUs, each asking 2 (Spark's protocol:
// $XRES_DISCOVERY_AMOUNT; Flink's: the first argument): exactly 4 get
// GPUs, all disjoint; the others fail with the discovery code.
func TestBridgeConcurrentCallersDisjoint(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	for _, protocol := range []string{protocolSpark, protocolFlink} {
		t.Run(protocol, func(t *testing.T) {
			h := newFakeGPUHost(t, 8, 1)
			link, _ := bridgeOn(t, h)
			h.env = append(h.env, EnvDiscoveryAmount+"=2")
			callers := make([]*bridgeCaller, 32)
			for i := range callers {
				callers[i] = startCaller(t, h, protocol, link, "2", "")
			}
			var got []string
			ok, failed := 0, 0
			for _, c := range callers {
				r := c.result(t)
				if r.code != 0 {
					require.Equal(t, ExitDiscovery, r.code, r.stderr)
					failed++
					continue
				}
				addrs := strings.Split(strings.TrimSuffix(r.stdout, "\n"), ",")
				if protocol == protocolSpark {
					addrs = sparkAddresses(t, r)
				}
				require.Len(t, addrs, 2, r.stdout)
				got = append(got, addrs...)
				ok++
			}
			sort.Strings(got)
			require.Equal(t, []string{"0", "1", "2", "3", "4", "5", "6", "7"}, got, "every GPU handed out once")
			require.Equal(t, 4, ok)
			require.Equal(t, 28, failed)
		})
	}
}

// Issue 25, item 3: Flink's calling convention, as GPUDriver runs a
// discovery script (one command string, "null" for unset args), beside
// Flink's own coordination file: the bridge's grant is a line in Flink's
// format naming the TaskManager's pid, Flink's script (run directly) gets
// another GPU, and the bridge then fails naming the line that holds the
// last one. Once the TaskManager is killed -9, its GPU is free again.
func TestBridgeFlinkCaller(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	h := newFakeGPUHost(t, 2, 1)
	link, _ := bridgeOn(t, h)
	flinkFile := filepath.Join(h.dir, "flink-gpu-coordination")
	args := "--enable-coordination-mode --coordination-file " + flinkFile

	tm := startCaller(t, h, "flink", link, "1", args)
	r := tm.result(t)
	require.Equal(t, 0, r.code, r.stderr)
	idx := strings.TrimSuffix(r.stdout, "\n")
	require.Regexp(t, `^[01]$`, idx, "one line of indices")
	fl, err := os.ReadFile(flinkFile)
	require.NoError(t, err)
	require.Equal(t, fmt.Sprintf("%s %d\n", idx, tm.cmd.Process.Pid), string(fl), "a line in Flink's format for the TaskManager")

	script, err := filepath.Abs("testdata/flink-style-discovery.sh")
	require.NoError(t, err)
	flinkTM := startCaller(t, h, "flink", script, "1", args)
	rf := flinkTM.result(t)
	require.Equal(t, 0, rf.code, rf.stderr)
	require.NotEqual(t, idx, strings.TrimSpace(rf.stdout), "Flink's script took the bridge's GPU")

	third := startCaller(t, h, "flink", link, "1", args)
	r3 := third.result(t)
	require.NotEqual(t, 0, r3.code)
	require.Empty(t, r3.stdout)
	require.Contains(t, r3.stderr, fmt.Sprintf("held by pid %d per Flink's coordination file %s", flinkTM.cmd.Process.Pid, flinkFile))

	require.NoError(t, tm.cmd.Process.Signal(syscall.SIGKILL))
	_ = tm.cmd.Wait()
	again := startCaller(t, h, "flink", link, "1", "") // args unset: GPUDriver passes "null"
	ra := again.result(t)
	require.Equal(t, 0, ra.code, ra.stderr)
	require.Equal(t, idx+"\n", ra.stdout, "the GPU of the TaskManager killed -9 is reclaimed")
}

func TestBridgeArgs(t *testing.T) {
	for _, c := range []struct {
		argv0 string
		want  []string
	}{
		{"./xres-gpu-discovery", []string{"discover", "--resources", "gpu", "--", "1", "null"}},
		{"/opt/xres/xres-fpga-discovery.sh", []string{"discover", "--resources", "fpga", "--", "1", "null"}},
		{"container-launcher", nil},
		{"xres--discovery", nil},
		{"gpu-discovery", nil},
	} {
		got, ok := BridgeArgs(c.argv0, []string{"1", "null"})
		require.Equal(t, c.want != nil, ok, c.argv0)
		require.Equal(t, c.want, got, c.argv0)
	}
}

func TestBridgeUsageErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"--", "two"}, nil, `the amount "two" is not a whole number`},
		{[]string{"--protocol", "spark", "--", "1"}, nil, "Spark's protocol takes no arguments"},
		{[]string{"--protocol", "flink"}, nil, "the amount is the first argument"},
		{[]string{"--protocol", "yarn"}, nil, `--protocol "yarn"`},
		{nil, map[string]string{EnvDiscoveryAmount: "x"}, "$" + EnvDiscoveryAmount + ": the amount must be a whole number > 0"},
		{[]string{"--resources", "gpu,fpga"}, nil, "the bridge serves one resource"},
	} {
		var stderr bytes.Buffer
		code := Main(context.Background(), append([]string{"discover"}, c.args...), Env{
			Getenv: func(k string) string { return c.env[k] },
			Stderr: &stderr,
		})
		require.Equal(t, ExitUsage, code, "%v: %s", c.args, stderr.String())
		require.Contains(t, stderr.String(), c.want)
		require.Contains(t, stderr.String(), "container-launcher discover [flags]", "the bridge's usage")
	}
}

// An executor of Spark on YARN has no Flink configuration: the bridge
// serves gpu with the GPU driver's defaults and the -D params its wrapper
// script gives (found missing by the minicluster's Spark run: the state
// file named by -D was not used).
func TestBridgeWithoutConfiguration(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	bin := launcherBinary(t)
	h := newFakeGPUHost(t, 2, 1)
	wrapper := filepath.Join(h.dir, "gpu-discovery.sh")
	require.NoError(t, os.WriteFile(wrapper, []byte(`#!/bin/sh
"`+bin+`" discover -Dexternal-resource.gpu.param.coordination.file=`+h.state+` -Dexternal-resource.gpu.param.discovery.source=nvidia-smi
`), 0o755))
	a := startCaller(t, h, "spark", wrapper)
	r := a.result(t)
	ga := sparkAddresses(t, r)
	require.Empty(t, r.stderr, "no warning about the configuration it does without")
	require.Len(t, ga, 1, "one GPU by default")
	require.Equal(t, map[string]int{ga[0]: a.cmd.Process.Pid}, stateHolders(t, h, bin), "held in the state file -D names")
}

// A configured resource without a driver factory is refused (the launcher
// would skip it and the bridge print no device).
func TestBridgeResourceWithoutDriver(t *testing.T) {
	var stderr bytes.Buffer
	code := Main(context.Background(), []string{"discover", "--resources", "fpga", "--holder-pid", "1", "--amount", "1"}, Env{
		Getenv: func(string) string { return "" },
		Stderr: &stderr,
		Load: func(Config) (Loaded, error) {
			return Loaded{Specs: []resources.Spec{{Name: "fpga", Amount: 1}}}, nil
		},
	})
	require.Equal(t, ExitConfig, code, stderr.String())
	require.Contains(t, stderr.String(), "external-resource.fpga.driver-factory.class is not set")
}

// Issue 41: `discover --holder-pid 1` held every GPU for init (until the
// next boot). The bridge reserves only for a running process of the
// caller's own user other than init, and reserves nothing otherwise.
func TestBridgeRefusesInitAsHolder(t *testing.T) {
	h := newFakeHost()
	h.devices["gpu"] = 2
	r := runMain(t, h, fixedSpecs(gpuSpec(1)), nil, "discover", "--resources", "gpu", "--holder-pid", "1", "--amount", "1")
	require.Equal(t, ExitUsage, r.code, "stdout %q stderr %q", r.stdout, r.stderr)
	require.Contains(t, r.stderr, "--holder-pid")
	require.Contains(t, r.stderr, "pid 1")
	require.Empty(t, r.stdout, "no device printed")
	require.Empty(t, h.Held("gpu"), "nothing reserved")
}
