package launch

import (
	"bytes"
	"errors"
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
)

// holdScript is the stress test's worker: it writes "<CUDA_VISIBLE_DEVICES>
// <its pid>" to $1/$2, then waits until the file $3 exists.
const holdScript = `echo "$CUDA_VISIBLE_DEVICES $$" > "$1/$2.tmp" && mv "$1/$2.tmp" "$1/$2"; while [ ! -e "$3" ]; do sleep 0.02; done`

type launched struct {
	id     int
	cmd    *exec.Cmd
	stderr *bytes.Buffer
	code   int
}

// startHolders starts n launchers at once, each running holdScript.
func startHolders(tb testing.TB, h *fakeGPUHost, bin string, n int, out, release string) ([]*launched, chan *launched) {
	tb.Helper()
	done := make(chan *launched, n)
	all := make([]*launched, n)
	for i := range all {
		l := &launched{id: i, stderr: &bytes.Buffer{}}
		l.cmd = h.command(bin, "--conf", h.conf, "--", "sh", "-c", holdScript, "worker", out, strconv.Itoa(i), release)
		l.cmd.Stderr = l.stderr
		all[i] = l
	}
	for _, l := range all {
		if err := l.cmd.Start(); err != nil {
			tb.Fatalf("start launcher %d: %v", l.id, err)
		}
		go func(l *launched) {
			err := l.cmd.Wait()
			l.code = 0
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				l.code = exitCodeOf(ee.ProcessState)
			} else if err != nil {
				l.code = -1
			}
			done <- l
		}(l)
	}
	return all, done
}

// readGrant reads a holder's "<index> <worker pid>" file.
func readGrant(tb testing.TB, path string) (index string, pid int) {
	tb.Helper()
	b, err := os.ReadFile(path)
	require.NoError(tb, err)
	f := strings.Fields(string(b))
	require.Len(tb, f, 2, "grant file %s: %q", path, b)
	pid, err = strconv.Atoi(f[1])
	require.NoError(tb, err)
	return f[0], pid
}

// processGone reports whether pid has exited (absent or a zombie).
func processGone(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] == 'Z'
	}
	return false
}

// TestStress64LaunchersOn8GPUs is issue 2's "Must show": 64 launchers
// started at once on a fake host with 8 GPUs, amount 1. Exactly 8 get
// distinct indices, the other 56 fail with the discovery exit code naming
// the holders; a launcher killed with SIGKILL takes its worker along and
// its GPU goes to the next launcher; once all end every GPU is free.
func TestStress64LaunchersOn8GPUs(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 64 processes")
	}
	const launchers, gpus = 64, 8
	bin := launcherBinary(t)
	h := newFakeGPUHost(t, gpus, 1)
	out := filepath.Join(h.dir, "grants")
	require.NoError(t, os.Mkdir(out, 0o755))
	release := filepath.Join(h.dir, "release")

	start := time.Now()
	all, done := startHolders(t, h, bin, launchers, out, release)
	defer func() { // never leave workers behind
		_ = os.WriteFile(release, nil, 0o644)
		for _, l := range all {
			if l.cmd.ProcessState == nil {
				_ = l.cmd.Process.Kill()
			}
		}
	}()

	// The losers end on their own; the winners wait for the release file.
	timeout := time.After(60 * time.Second)
	var failed []*launched
	for len(failed) < launchers-gpus {
		select {
		case l := <-done:
			require.Equal(t, ExitDiscovery, l.code, "launcher %d: stderr:\n%s", l.id, l.stderr)
			require.Contains(t, l.stderr.String(), "no free devices left on the host")
			require.Contains(t, l.stderr.String(), "held by pid")
			failed = append(failed, l)
		case <-timeout:
			t.Fatalf("only %d launchers failed within 60s", len(failed))
		}
	}
	indices := map[string]int{} // index -> launcher id
	workers := map[int]int{}    // launcher id -> worker pid
	for _, l := range all {
		if contains(failed, l) {
			continue
		}
		waitForFile(t, filepath.Join(out, strconv.Itoa(l.id)), 30*time.Second)
		idx, pid := readGrant(t, filepath.Join(out, strconv.Itoa(l.id)))
		prev, dup := indices[idx]
		require.False(t, dup, "GPU %s granted to launchers %d and %d", idx, prev, l.id)
		indices[idx] = l.id
		workers[l.id] = pid
	}
	decided := time.Since(start)
	t.Logf("%d launchers on %d GPUs decided in %s", launchers, gpus, decided.Round(time.Millisecond))
	var got []string
	for idx := range indices {
		got = append(got, idx)
	}
	sort.Strings(got)
	require.Equal(t, []string{"0", "1", "2", "3", "4", "5", "6", "7"}, got)

	rep := h.probe(t, bin)
	require.Len(t, rep.Resources, 1)
	require.Len(t, rep.Resources[0].Coordination.Holders, gpus)
	for _, hd := range rep.Resources[0].Coordination.Holders {
		require.True(t, hd.Alive, "holder %+v", hd)
	}

	// SIGKILL one holder: its worker dies with it (parent-death signal) and
	// the next launcher gets its GPU.
	victimIdx := "5"
	victim := all[indices[victimIdx]]
	require.NoError(t, victim.cmd.Process.Signal(syscall.SIGKILL))
	select {
	case l := <-done:
		require.Same(t, victim, l, "only the killed launcher may end now")
		require.Equal(t, 128+int(syscall.SIGKILL), l.code)
	case <-time.After(10 * time.Second):
		t.Fatal("the SIGKILLed launcher was not reaped")
	}
	workerPid := workers[victim.id]
	deadline := time.Now().Add(10 * time.Second)
	for !processGone(workerPid) {
		require.True(t, time.Now().Before(deadline), "worker %d outlived its SIGKILLed launcher", workerPid)
		time.Sleep(5 * time.Millisecond)
	}
	next := h.command(bin, "--conf", h.conf, "--", "sh", "-c", `echo "$CUDA_VISIBLE_DEVICES"`)
	var nextOut, nextErr bytes.Buffer
	next.Stdout, next.Stderr = &nextOut, &nextErr
	require.NoError(t, next.Run(), "next launcher: %s", nextErr.String())
	require.Equal(t, victimIdx, strings.TrimSpace(nextOut.String()), "the dead holder's GPU goes to the next launcher")

	// Release the winners: they exit 0 and every GPU is free again.
	require.NoError(t, os.WriteFile(release, nil, 0o644))
	for i := 0; i < gpus-1; i++ {
		select {
		case l := <-done:
			require.Equal(t, 0, l.code, "launcher %d: %s", l.id, l.stderr)
		case <-time.After(30 * time.Second):
			t.Fatal("winners did not end after the release")
		}
	}
	rep = h.probe(t, bin)
	require.Empty(t, rep.Resources[0].Coordination.Holders, "all GPUs free again")
	require.Len(t, rep.Resources[0].Devices, 1)
	require.Zero(t, rep.ExitCode)
}

func contains(list []*launched, l *launched) bool {
	for _, x := range list {
		if x == l {
			return true
		}
	}
	return false
}
