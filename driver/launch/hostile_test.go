package launch

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/driver/coord"
)

// exclusiveScript is the hostile tests' worker: it claims a marker folder
// named after its GPU for a while. mkdir fails only while another live
// worker has the same GPU, which is then a double grant, recorded in
// $1/double-<pid>.
const exclusiveScript = `d="$1/gpu-$CUDA_VISIBLE_DEVICES"
if mkdir "$d" 2>/dev/null; then sleep 0.05; rmdir "$d"; else echo "$CUDA_VISIBLE_DEVICES" > "$1/double-$$"; fi`

// TestStressLockFileDeleted is issue 12's first finding: while something
// removes every file but the state file from the coordination folder in a
// tight loop, rounds of 12 launchers on 8 GPUs still never grant one GPU
// to two live workers, and the state file ends empty (no lost update left
// an entry behind).
func TestStressLockFileDeleted(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 96 processes")
	}
	const rounds, perRound, gpus = 10, 16, 8
	bin := launcherBinary(t)
	h := newFakeGPUHost(t, gpus, 1)
	out := filepath.Join(h.dir, "markers")
	require.NoError(t, os.Mkdir(out, 0o755))
	coordDir := filepath.Dir(h.state)
	require.NoError(t, os.MkdirAll(coordDir, 0o777))

	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	deletions := 0
	go func() { // the hostile operator: a tmp cleaner gone wrong
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			ents, _ := os.ReadDir(coordDir)
			for _, e := range ents {
				if e.Name() != filepath.Base(h.state) && os.Remove(filepath.Join(coordDir, e.Name())) == nil {
					deletions++
				}
			}
			time.Sleep(200 * time.Microsecond)
		}
	}()
	var once sync.Once
	halt := func() { once.Do(func() { close(stop); wg.Wait() }) }
	defer halt()

	granted := 0
	for r := 0; r < rounds; r++ {
		var cmds []*launched
		done := make(chan *launched, perRound)
		for i := 0; i < perRound; i++ {
			l := &launched{id: i, stderr: &bytes.Buffer{}}
			l.cmd = h.command(bin, "--conf", h.conf, "--", "sh", "-c", exclusiveScript, "worker", out)
			l.cmd.Stderr = l.stderr
			require.NoError(t, l.cmd.Start())
			cmds = append(cmds, l)
			go func(l *launched) {
				err := l.cmd.Wait()
				l.code = 0
				if err != nil {
					l.code = l.cmd.ProcessState.ExitCode()
				}
				done <- l
			}(l)
		}
		for range cmds {
			select {
			case l := <-done:
				require.Contains(t, []int{0, ExitDiscovery}, l.code, "round %d launcher %d: %s", r, l.id, l.stderr)
				if l.code != 0 {
					require.Contains(t, l.stderr.String(), "no free devices left", "round %d launcher %d", r, l.id)
				}
				if l.code == 0 {
					granted++
				}
			case <-time.After(60 * time.Second):
				t.Fatalf("round %d did not end within 60s", r)
			}
		}
	}
	halt()
	doubles, _ := filepath.Glob(filepath.Join(out, "double-*"))
	var got []string
	for _, d := range doubles {
		b, _ := os.ReadFile(d)
		got = append(got, strconv.Quote(string(b)))
	}
	t.Logf("%d rounds: %d grants, %d coordination files deleted meanwhile", rounds, granted, deletions)
	require.Empty(t, got, "GPUs granted to two live workers at once")
	require.Positive(t, deletions, "the deleter never deleted anything: the test proves nothing")
	rep := h.probe(t, bin)
	require.Empty(t, rep.Resources[0].Coordination.Holders, "every grant was released")
}

// Issue 12, finding 2: a worker's forked helper outlives a SIGKILLed
// launcher. While it lives, its GPU is not granted again, and the refusal
// names it; once it is gone, the GPU is free. A worker that ends normally
// takes its helpers along.
func TestWorkerGroupHoldsDevices(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	bin := launcherBinary(t)
	h := newFakeGPUHost(t, 1, 1)
	a, bg, bgFile := startWithHelper(t, h, bin, "")
	killReaper(t, a.Process.Pid)
	require.NoError(t, a.Process.Signal(syscall.SIGKILL))
	_ = a.Wait()
	require.False(t, processGone(bg), "the helper should outlive its launcher for this test")

	var stderr bytes.Buffer
	second := h.command(bin, "--conf", h.conf, "--", "true")
	second.Stderr = &stderr
	err := second.Run()
	require.Error(t, err)
	require.Equal(t, ExitDiscovery, second.ProcessState.ExitCode(), stderr.String())
	require.Contains(t, stderr.String(), "alive: pids "+strconv.Itoa(bg)+" (sleep)")

	require.NoError(t, syscall.Kill(bg, syscall.SIGKILL))
	deadline := time.Now().Add(10 * time.Second)
	for !processGone(bg) {
		require.True(t, time.Now().Before(deadline), "helper %d did not die", bg)
		time.Sleep(5 * time.Millisecond)
	}
	stderr.Reset()
	third := h.command(bin, "--conf", h.conf, "--", "true")
	third.Stderr = &stderr
	require.NoError(t, third.Run(), stderr.String())

	// A worker that exits leaves no helper behind, and the launcher does
	// not wait for the helper to end by itself.
	require.NoError(t, os.Remove(bgFile))
	stderr.Reset()
	start := time.Now()
	fourth := h.command(bin, "--conf", h.conf, "--", "sh", "-c", `sleep 600 & echo $! > "$1"; exit 3`, "worker", bgFile)
	fourth.Stderr = &stderr
	require.Error(t, fourth.Run())
	require.Equal(t, 3, fourth.ProcessState.ExitCode(), stderr.String())
	require.Less(t, time.Since(start), 300*time.Second, "the launcher waited for the helper instead of ending it")
	b, err := os.ReadFile(bgFile)
	require.NoError(t, err)
	bg, err = strconv.Atoi(strings.TrimSpace(string(b)))
	require.NoError(t, err)
	require.True(t, processGone(bg), "the worker's helper %d outlived the worker's launcher", bg)
}

// Issue 12, finding 3: built-in launchers and launchers running Flink's
// script, on one host with one Flink --coordination-file, get disjoint
// GPUs; neither file is then unreadable to the other side, and the
// built-in launchers' lines leave Flink's file with their release.
func TestFlinkScriptBesideBuiltin(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	bin := launcherBinary(t)
	h := newFakeGPUHost(t, 2, 1)
	flinkFile := filepath.Join(h.dir, "flink-gpu-coordination")
	script, err := filepath.Abs("testdata/flink-style-discovery.sh")
	require.NoError(t, err)
	args := "--enable-coordination-mode --coordination-file " + flinkFile
	builtinConf := h.conf
	require.NoError(t, appendFile(builtinConf, "external-resource.gpu.param.discovery-script.args: "+args+"\n"))
	scriptConf := filepath.Join(h.dir, "script.yaml")
	require.NoError(t, os.WriteFile(scriptConf, []byte(`external-resources: gpu
external-resource.gpu.amount: 1
external-resource.gpu.yarn.config-key: yarn.io/gpu
external-resource.gpu.driver-factory.class: org.apache.flink.externalresource.gpu.GPUDriverFactory
external-resource.gpu.param.discovery-script.path: `+script+`
external-resource.gpu.param.discovery-script.args: `+args+`
`), 0o644))
	out := filepath.Join(h.dir, "grants")
	require.NoError(t, os.Mkdir(out, 0o755))
	release := filepath.Join(h.dir, "release")
	t.Cleanup(func() { _ = os.WriteFile(release, nil, 0o644) })

	start := func(conf, id string) *launched {
		l := &launched{stderr: &bytes.Buffer{}}
		l.cmd = h.command(bin, "--conf", conf, "--", "sh", "-c", holdScript, "worker", out, id, release)
		l.cmd.Stderr = l.stderr
		require.NoError(t, l.cmd.Start())
		return l
	}
	a := start(builtinConf, "builtin")
	waitForFile(t, filepath.Join(out, "builtin"), 30*time.Second)
	b := start(scriptConf, "script")
	waitForFile(t, filepath.Join(out, "script"), 30*time.Second)
	ia, _ := readGrant(t, filepath.Join(out, "builtin"))
	ib, _ := readGrant(t, filepath.Join(out, "script"))
	require.NotEqual(t, ia, ib, "the built-in launcher and Flink's script got the same GPU")

	fl, err := os.ReadFile(flinkFile)
	require.NoError(t, err)
	holder := flinkLinePID(t, flinkFile, ia)
	require.Contains(t, string(fl), fmt.Sprintf("%s %d\n", ia, holder), "the built-in grant is in Flink's file, in Flink's format")
	require.NotEqual(t, a.cmd.Process.Pid, holder, "the line names the launcher's holder, not the launcher")
	require.False(t, processGone(holder))
	require.Contains(t, string(fl), fmt.Sprintf("%s %d\n", ib, b.cmd.Process.Pid))
	st, err := os.ReadFile(h.state)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(string(st), "xres-coordination "), "xres's own state stays in its own file")

	// Both GPUs are taken, whichever side asks next.
	var stderr bytes.Buffer
	c := h.command(bin, "--conf", builtinConf, "--", "true")
	c.Stderr = &stderr
	require.Error(t, c.Run())
	require.Equal(t, ExitDiscovery, c.ProcessState.ExitCode(), stderr.String())
	require.Contains(t, stderr.String(), fmt.Sprintf("held by pid %d per Flink's coordination file %s", b.cmd.Process.Pid, flinkFile))
	stderr.Reset()
	d := h.command(bin, "--conf", scriptConf, "--", "true")
	d.Stderr = &stderr
	require.Error(t, d.Run())
	require.Equal(t, ExitDiscovery, d.ProcessState.ExitCode(), stderr.String())

	// probe holds nothing in either file.
	before, err := os.ReadFile(flinkFile)
	require.NoError(t, err)
	h.probe(t, bin)
	after, err := os.ReadFile(flinkFile)
	require.NoError(t, err)
	require.Equal(t, string(before), string(after))

	require.NoError(t, os.WriteFile(release, nil, 0o644))
	require.NoError(t, a.cmd.Wait(), a.stderr.String())
	require.NoError(t, b.cmd.Wait(), b.stderr.String())
	fl, err = os.ReadFile(flinkFile)
	require.NoError(t, err)
	require.NotContains(t, string(fl), fmt.Sprintf(" %d\n", holder), "the built-in launcher's release removes its line")
	require.True(t, processGone(holder), "the holder %d ends with its launcher", holder)
	// Flink's script never releases; its dead owner's GPU is reclaimed.
	stderr.Reset()
	e := h.command(bin, "--conf", builtinConf, "--", "sh", "-c", `echo "$CUDA_VISIBLE_DEVICES"`)
	var eout bytes.Buffer
	e.Stdout, e.Stderr = &eout, &stderr
	require.NoError(t, e.Run(), stderr.String())
	fl, err = os.ReadFile(flinkFile)
	require.NoError(t, err)
	require.NotContains(t, string(fl), strings.TrimSpace(eout.String())+" ", "the reclaimed GPU's stale Flink line is gone")
}

// Issue 29, item 1: a built-in launcher's line in Flink's coordination
// file names a process that lives as long as the reservation. With the
// launcher SIGKILLed (its worker dies of its parent-death signal) and the
// worker's forked helper still running, Flink's script, run directly
// (testdata/flink-style-discovery.sh follows Flink's algorithm: drop the
// lines whose pid is dead, take a free index, append its own pid), finds
// the GPU held; once the helper is gone, it gets it.
func TestFlinkLineOutlivesLauncher(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	script := flinkPeer(t)
	bin := launcherBinary(t)
	h := newFakeGPUHost(t, 1, 1)
	flinkFile := filepath.Join(h.dir, "flink-gpu-coordination")
	args := "--enable-coordination-mode --coordination-file " + flinkFile
	require.NoError(t, appendFile(h.conf, "external-resource.gpu.param.discovery-script.args: "+args+"\n"))
	a, bg, _ := startWithHelper(t, h, bin, filepath.Join(h.dir, "launcher.log"))
	holder := flinkLinePID(t, flinkFile, "0")
	require.NotEqual(t, a.Process.Pid, holder, "the line must not name the launcher")

	killReaper(t, a.Process.Pid)
	require.NoError(t, a.Process.Signal(syscall.SIGKILL))
	_ = a.Wait()
	require.False(t, processGone(bg), "the helper should outlive its launcher for this test")
	require.False(t, processGone(holder), "the line's pid died with the launcher")

	flink := func() (string, error) {
		cmd := exec.Command("bash", script, "1", "--enable-coordination-mode", "--coordination-file", flinkFile)
		cmd.Env = h.env
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := flink()
	require.Error(t, err, "Flink's script granted GPU 0 again while the worker's helper runs: %s", out)
	require.Contains(t, out, "Could not get enough GPU resources.")
	require.Equal(t, holder, flinkLinePID(t, flinkFile, "0"), "the line stays")

	// Once the helper is gone (a zombie counts as gone), the holder ends
	// within a second, and the GPU is Flink's script's again as soon as
	// the holder's new parent (init) has reaped it: Flink's ps -p shows a
	// zombie.
	require.NoError(t, syscall.Kill(bg, syscall.SIGKILL))
	require.Eventually(t, func() bool { return processGone(holder) }, 30*time.Second, 20*time.Millisecond,
		"the holder %d outlived the worker's group", holder)
	deadline := time.Now().Add(30 * time.Second)
	for {
		if out, err = flink(); err == nil {
			break
		}
		if time.Now().After(deadline) {
			if _, serr := os.Stat(fmt.Sprintf("/proc/%d", holder)); serr == nil {
				t.Logf("init has not reaped the ended holder %d in 30 s; Flink's ps counts its zombie: not checking the grant after it", holder)
				return
			}
			t.Fatalf("Flink's script still finds GPU 0 held, by %d, after the worker's helper and the holder ended: %s",
				flinkLinePID(t, flinkFile, "0"), out)
		}
		time.Sleep(100 * time.Millisecond)
	}
	require.Equal(t, "0", strings.TrimSpace(out))
}

// flinkLinePID is the pid on index's line in Flink's coordination file.
func flinkLinePID(tb testing.TB, file, index string) int {
	tb.Helper()
	lines, err := coord.ReadFlinkFile(file)
	require.NoError(tb, err)
	for _, l := range lines {
		if l.Index == index {
			return l.PID
		}
	}
	tb.Fatalf("no line for index %s in %s: %v", index, file, lines)
	return 0
}

func appendFile(path, text string) error {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(text); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// startWithHelper starts bin on h with a worker that forks a `sleep 30`
// helper and waits for it, and returns the launcher's command, the
// helper's pid and the file that pid was written to, once the launcher has
// recorded the worker's process group (just after the worker started).
// logFile ("": none) gets the launcher's log, shown should the group never
// be recorded; a file, since a pipe would stay open in the helper.
// killReaper kills the reaper of launcher's worker (supervise.go), as a
// host killing more than the launcher would (the OOM killer, an
// operator's kill -9 of the container's processes one by one): without
// it, nothing of the worker outlives a SIGKILLed launcher, and these tests
// check what the host coordination does when something does.
func killReaper(t *testing.T, launcher int) {
	t.Helper()
	// The reaper starts beside the worker, not before it: wait for it.
	deadline := time.Now().Add(60 * time.Second)
	for !killReaperOnce(t, launcher) {
		if time.Now().After(deadline) {
			t.Fatalf("launcher %d has no reaper", launcher)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func killReaperOnce(t *testing.T, launcher int) bool {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	require.NoError(t, err)
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		// A shell reaper is named on its command line; a cloned one
		// (reaper_linux_amd64.go) shares the launcher's and names its comm.
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		comm, cerr := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		if (err != nil || !bytes.HasPrefix(cmdline, []byte("xres-reaper\x00"))) && (cerr != nil || string(comm) != "xres-reaper\n") {
			continue
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(fields) > 1 && fields[1] == strconv.Itoa(launcher) {
			require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
			return true
		}
	}
	return false
}

func startWithHelper(t *testing.T, h *fakeGPUHost, bin, logFile string) (a *exec.Cmd, bg int, bgFile string) {
	t.Helper()
	bgFile = filepath.Join(h.dir, "bg")
	helper := `sleep 30 & echo $! > "$1.tmp" && mv "$1.tmp" "$1"; wait`
	a = h.command(bin, "--conf", h.conf, "--", "sh", "-c", helper, "worker", bgFile)
	if logFile != "" {
		lf, err := os.Create(logFile)
		require.NoError(t, err)
		t.Cleanup(func() { _ = lf.Close() })
		a.Stderr = lf
	}
	require.NoError(t, a.Start())
	waitForFile(t, bgFile, 30*time.Second)
	b, err := os.ReadFile(bgFile)
	require.NoError(t, err)
	bg, err = strconv.Atoi(strings.TrimSpace(string(b)))
	require.NoError(t, err)
	t.Cleanup(func() { _ = syscall.Kill(bg, syscall.SIGKILL) })
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, _ := os.ReadFile(h.state)
		if bytes.Contains(st, []byte(`"group":{"pgid":`)) {
			return a, bg, bgFile
		}
		if time.Now().After(deadline) {
			log := []byte("(not kept)")
			if logFile != "" {
				log, _ = os.ReadFile(logFile)
			}
			t.Fatalf("the worker's group was not recorded: %s\nlauncher log: %s", st, log)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
