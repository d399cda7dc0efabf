package launch

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/driver/coord"
)

// Tests that fail when a behaviour the users rely on is broken (issue 41:
// mutations of this code that no test caught).

// procParent is pid's parent pid (field 4 of /proc/<pid>/stat); 0 when
// pid is gone.
func procParent(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	ppid, _ := strconv.Atoi(f[1])
	return ppid
}

// procChildren are the live pids whose parent is pid, with their command
// names.
func procChildren(pid int) map[int]string {
	out := map[int]string{}
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		s := string(b)
		open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || end < open {
			continue
		}
		fields := strings.Fields(s[end+1:])
		if len(fields) < 2 || fields[0] == "Z" {
			continue
		}
		if ppid, _ := strconv.Atoi(fields[1]); ppid == pid {
			child, _ := strconv.Atoi(strings.TrimSpace(s[:open]))
			out[child] = s[open+1 : end]
		}
	}
	return out
}

// The launcher is the reaper of its worker's orphaned helpers (a helper
// whose parent, a subshell of the worker, exited): they become the
// launcher's children, which it waits for when the worker ends, instead of
// init's, where nothing ties them to the container. Caught: the launcher
// not making itself the child subreaper.
func TestLauncherIsTheWorkersSubreaper(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	bin := launcherBinary(t)
	h := newFakeGPUHost(t, 1, 1)
	bgFile, release := filepath.Join(h.dir, "bg"), filepath.Join(h.dir, "release")
	// The subshell starts the helper and exits before the file is renamed:
	// by then the helper is an orphan.
	worker := `(sleep 600 & echo $! > "$1.tmp"); mv "$1.tmp" "$1"; while [ ! -e "$2" ]; do sleep 0.05; done`
	a := h.command(bin, "--conf", h.conf, "--", "sh", "-c", worker, "worker", bgFile, release)
	var stderr strings.Builder
	a.Stderr = &stderr
	require.NoError(t, a.Start())
	t.Cleanup(func() { _ = a.Process.Kill(); _ = a.Wait() })
	waitForFile(t, bgFile, 60*time.Second)
	b, err := os.ReadFile(bgFile)
	require.NoError(t, err)
	bg, err := strconv.Atoi(strings.TrimSpace(string(b)))
	require.NoError(t, err)
	t.Cleanup(func() { _ = syscall.Kill(bg, syscall.SIGKILL) })
	require.Equal(t, a.Process.Pid, procParent(bg), "the orphaned helper %d was adopted by %d, not by its launcher", bg, procParent(bg))

	require.NoError(t, os.WriteFile(release, nil, 0o644))
	require.NoError(t, a.Wait(), stderr.String())
	require.True(t, processGone(bg), "the helper ends with its worker's container")
}

// A built-in launcher's Flink lines name a holder that outlives the
// launcher while the worker's group lives: after the launcher is killed
// -9 (its stdin pipe closed), the holder goes on checking the group (it
// starts its 1 s sleep) instead of exiting. TestFlinkLineOutlivesLauncher
// looked at the holder at once after the kill, before it could have read
// the end of its stdin, so a holder that ended with its launcher passed.
// Caught: the holder exiting when its launcher does.
func TestFlinkHolderOutlivesKilledLauncher(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	flinkPeer(t) // the tools the Flink-style setup needs
	bin := launcherBinary(t)
	h := newFakeGPUHost(t, 1, 1)
	flinkFile := filepath.Join(h.dir, "flink-gpu-coordination")
	require.NoError(t, appendFile(h.conf, "external-resource.gpu.param.discovery-script.args: --enable-coordination-mode --coordination-file "+flinkFile+"\n"))
	// The worker's helper outlives anything a loaded host makes the test wait for (the
	// shared startWithHelper's lives 30 s).
	bgFile := filepath.Join(h.dir, "bg")
	a := h.command(bin, "--conf", h.conf, "--", "sh", "-c", `sleep 600 & echo $! > "$1.tmp" && mv "$1.tmp" "$1"; wait`, "worker", bgFile)
	require.NoError(t, a.Start())
	t.Cleanup(func() { _ = a.Process.Kill(); _ = a.Wait() })
	waitForFile(t, bgFile, 60*time.Second)
	b, err := os.ReadFile(bgFile)
	require.NoError(t, err)
	bg, err := strconv.Atoi(strings.TrimSpace(string(b)))
	require.NoError(t, err)
	t.Cleanup(func() { _ = syscall.Kill(bg, syscall.SIGKILL) })
	// The holder is told the worker's group before the state records it.
	require.Eventually(t, func() bool {
		st, _ := os.ReadFile(h.state)
		return strings.Contains(string(st), `"group":{"pgid":`)
	}, 60*time.Second, 5*time.Millisecond, "the worker's group recorded")
	var holder int
	require.Eventually(t, func() bool {
		lines, err := coord.ReadFlinkFile(flinkFile)
		if err != nil || len(lines) == 0 {
			return false
		}
		holder = flinkLinePID(t, flinkFile, "0")
		return true
	}, 60*time.Second, 10*time.Millisecond, "the launcher's line in Flink's file")
	require.NotEqual(t, a.Process.Pid, holder, "the line must not name the launcher")
	t.Cleanup(func() { _ = syscall.Kill(holder, syscall.SIGKILL) })

	// The launcher dies with its reaper (the OOM killer taking both), so the
	// worker's helper lives on and the holder must keep its line.
	killReaper(t, a.Process.Pid)
	require.NoError(t, a.Process.Signal(syscall.SIGKILL))
	_, _ = a.Process.Wait()
	// The holder has read the end of its stdin and checked the worker's
	// group once it sleeps; a holder that exits instead is gone (or a
	// zombie). Whichever comes first decides.
	deadline := time.Now().Add(60 * time.Second)
	for {
		if processGone(holder) {
			t.Fatalf("the holder %d ended with its launcher while the worker's helper %d runs", holder, bg)
		}
		sleeping := false
		for _, name := range procChildren(holder) {
			sleeping = sleeping || name == "sleep"
		}
		if sleeping {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the holder %d neither ended nor went on checking within 60 s", holder)
		}
		time.Sleep(10 * time.Millisecond)
	}
	require.False(t, processGone(bg))
	require.False(t, processGone(holder))
	require.Equal(t, holder, flinkLinePID(t, flinkFile, "0"), "the line stays")
	// Once the helper ends, so does the holder.
	require.NoError(t, syscall.Kill(bg, syscall.SIGKILL))
	require.Eventually(t, func() bool { return processGone(holder) }, 60*time.Second, 20*time.Millisecond,
		"the holder %d outlived the worker's group", holder)
}
