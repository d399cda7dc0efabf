package coord

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/driver"
)

// TestMain doubles as the helper process of the multi-process tests: with
// XRES_COORD_HELPER=reserve the test binary reserves devices, reports them
// on stdout, holds them until stdin closes, then releases and exits.
func TestMain(m *testing.M) {
	switch os.Getenv("XRES_COORD_HELPER") {
	case "reserve":
		os.Exit(helperReserve())
	case "churn":
		os.Exit(helperChurn())
	}
	os.Exit(m.Run())
}

func helperReserve() int {
	amount, _ := strconv.Atoi(os.Getenv("XRES_COORD_AMOUNT"))
	h, err := New(Options{StateFile: os.Getenv("XRES_COORD_STATE")})
	if err != nil {
		fmt.Println("ERR", err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	got, err := h.Reserve(ctx, "gpu", strings.Split(os.Getenv("XRES_COORD_CANDIDATES"), ","), amount, false)
	switch {
	case errors.Is(err, ErrNoDevicesLeft):
		fmt.Println("NOLEFT", err)
	case err != nil:
		fmt.Println("ERR", err)
	default:
		fmt.Println("OK", strings.Join(got, ","))
	}
	_, _ = io.Copy(io.Discard, os.Stdin)
	if err == nil {
		if err := h.Release(ctx, "gpu"); err != nil {
			fmt.Println("ERR release", err)
			return 1
		}
	}
	return 0
}

// helper is one running helper process.
type helper struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	line  string
}

func startHelper(t *testing.T, state string, amount int, candidates ...string) *helper {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(),
		"XRES_COORD_HELPER=reserve",
		"XRES_COORD_STATE="+state,
		"XRES_COORD_AMOUNT="+strconv.Itoa(amount),
		"XRES_COORD_CANDIDATES="+strings.Join(candidates, ","),
	)
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	h := &helper{cmd: cmd, stdin: stdin}
	t.Cleanup(func() {
		_ = stdin.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err, "helper output")
	h.line = strings.TrimSpace(line)
	return h
}

func (h *helper) granted() []string {
	if !strings.HasPrefix(h.line, "OK ") {
		return nil
	}
	return strings.Split(strings.TrimPrefix(h.line, "OK "), ",")
}

func newHost(t *testing.T, state string, owner Owner) *Host {
	t.Helper()
	h, err := New(Options{StateFile: state, Owner: owner})
	require.NoError(t, err)
	return h
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// liveOwner starts a sleeping process and returns its Owner.
func liveOwner(t *testing.T) Owner {
	t.Helper()
	cmd := exec.Command("sleep", "60")
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	o, err := ProcessOwner(cmd.Process.Pid)
	require.NoError(t, err)
	return o
}

// deadOwner returns the Owner of a process that has exited and been reaped.
func deadOwner(t *testing.T) Owner {
	t.Helper()
	cmd := exec.Command("sleep", "60")
	require.NoError(t, cmd.Start())
	o, err := ProcessOwner(cmd.Process.Pid)
	require.NoError(t, err)
	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
	return o
}

func writeEntries(t *testing.T, path string, entries ...Entry) {
	t.Helper()
	b := encodeState(entries)
	require.NoError(t, os.WriteFile(path, b, 0o644))
}

func TestReserveAndRelease(t *testing.T) {
	state := filepath.Join(t.TempDir(), "coord", "state")
	self, err := Self()
	require.NoError(t, err)
	other := liveOwner(t)
	third := liveOwner(t)
	ctx := ctxT(t)
	keys := []string{"GPU-a", "GPU-b", "GPU-c", "GPU-d"}

	a := newHost(t, state, self)
	got, err := a.Reserve(ctx, "gpu", keys, 2, false)
	require.NoError(t, err)
	require.Equal(t, []string{"GPU-a", "GPU-b"}, got)

	b := newHost(t, state, other)
	got, err = b.Reserve(ctx, "gpu", keys, 2, false)
	require.NoError(t, err)
	require.Equal(t, []string{"GPU-c", "GPU-d"}, got, "a second live process gets the other devices")

	// Keys are host-wide: the same GPUs under another resource name (one job
	// calls them "gpu", another "gpus") are held too.
	_, err = newHost(t, state, third).Reserve(ctx, "gpus", keys, 1, false)
	require.ErrorIs(t, err, ErrNoDevicesLeft)
	require.Contains(t, err.Error(), fmt.Sprintf("GPU-c held by pid %d (sleep) for gpu", other.PID))
	got, err = b.Reserve(ctx, "fpga", []string{"0000:3b:00.1"}, 1, false)
	require.NoError(t, err)
	require.Equal(t, []string{"0000:3b:00.1"}, got)

	c := newHost(t, state, third)
	_, err = c.Reserve(ctx, "gpu", keys, 1, false)
	require.ErrorIs(t, err, ErrNoDevicesLeft)
	require.ErrorIs(t, err, driver.ErrNotEnoughDevices)
	require.Contains(t, err.Error(), fmt.Sprintf("GPU-a held by pid %d", self.PID))
	require.Contains(t, err.Error(), fmt.Sprintf("GPU-c held by pid %d (sleep)", other.PID))
	require.Contains(t, err.Error(), state)

	require.NoError(t, a.Release(ctx, "gpu"))
	got, err = c.Reserve(ctx, "gpu", keys, 2, false)
	require.NoError(t, err)
	require.Equal(t, []string{"GPU-a", "GPU-b"}, got, "released devices are free again")

	hs, err := a.Holders()
	require.NoError(t, err)
	var summary []string
	for _, h := range hs {
		summary = append(summary, fmt.Sprintf("%s/%s/%d", h.Resource, h.Key, h.PID))
		require.True(t, h.Alive)
	}
	require.Equal(t, []string{
		fmt.Sprintf("fpga/0000:3b:00.1/%d", other.PID),
		fmt.Sprintf("gpu/GPU-a/%d", third.PID),
		fmt.Sprintf("gpu/GPU-b/%d", third.PID),
		fmt.Sprintf("gpu/GPU-c/%d", other.PID),
		fmt.Sprintf("gpu/GPU-d/%d", other.PID),
	}, summary)

	// Release removes exactly the owner's entries of that resource.
	require.NoError(t, b.Release(ctx, "gpu"))
	hs, err = a.Holders()
	require.NoError(t, err)
	require.Len(t, hs, 3)
	require.NoError(t, b.ReleaseAll(ctx))
	hs, err = a.Holders()
	require.NoError(t, err)
	require.Len(t, hs, 2)
}

func TestReclaim(t *testing.T) {
	live := liveOwner(t)
	tests := []struct {
		name    string
		holder  Owner
		reclaim bool
	}{
		{"dead holder", deadOwner(t), true},
		{"pid reused: alive with another start time", Owner{PID: live.PID, Start: live.Start + 1, Boot: live.Boot, PIDNS: live.PIDNS}, true},
		{"recorded before a reboot", Owner{PID: live.PID, Start: live.Start, Boot: "another-boot", PIDNS: live.PIDNS}, true},
		{"live holder", live, false},
		{"holder in another pid namespace", Owner{PID: 999999, Start: 1, Boot: live.Boot, PIDNS: "pid:[1]"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			state := filepath.Join(t.TempDir(), "state")
			writeEntries(t, state, Entry{Resource: "gpu", Key: "1", Owner: tc.holder})
			h := newHost(t, state, Owner{}) // self
			got, err := h.Reserve(ctxT(t), "gpu", []string{"1"}, 1, false)
			if !tc.reclaim {
				require.ErrorIs(t, err, ErrNoDevicesLeft)
				return
			}
			require.NoError(t, err)
			require.Equal(t, []string{"1"}, got)
			hs, err := h.Holders()
			require.NoError(t, err)
			require.Len(t, hs, 1, "the dead holder's entry is gone")
			require.Equal(t, h.Owner().PID, hs[0].PID)
		})
	}
}

// Flink's script deleted "/1 /" and so also freed 11, 21, …: keys match
// exactly here.
func TestExactKeyMatch(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	live := liveOwner(t)
	writeEntries(t, state,
		Entry{Resource: "gpu", Key: "1", Owner: deadOwner(t)},
		Entry{Resource: "gpu", Key: "11", Owner: live},
		Entry{Resource: "gpu", Key: "21", Owner: live},
	)
	h := newHost(t, state, Owner{})
	keys := []string{"1", "11", "21"}
	got, err := h.Reserve(ctxT(t), "gpu", keys, 1, false)
	require.NoError(t, err)
	require.Equal(t, []string{"1"}, got)
	_, err = h.Reserve(ctxT(t), "gpu", keys, 1, false)
	require.ErrorIs(t, err, ErrNoDevicesLeft)
	require.NoError(t, h.Release(ctxT(t), "gpu"))
	hs, err := h.Holders()
	require.NoError(t, err)
	require.Len(t, hs, 2, "releasing 1 leaves 11 and 21")
}

func TestDryRunRecordsNothing(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	h := newHost(t, state, Owner{})
	got, err := h.Reserve(ctxT(t), "gpu", []string{"a", "b"}, 2, true)
	require.NoError(t, err)
	require.Equal(t, []string{"a", "b"}, got)
	_, err = os.Stat(state)
	require.ErrorIs(t, err, os.ErrNotExist)
	_, err = os.Stat(state + ".lock")
	require.ErrorIs(t, err, os.ErrNotExist, "a dry run takes no lock")

	writeEntries(t, state, Entry{Resource: "gpu", Key: "a", Owner: liveOwner(t)})
	got, err = h.Reserve(ctxT(t), "gpu", []string{"a", "b"}, 1, true)
	require.NoError(t, err)
	require.Equal(t, []string{"b"}, got)
	_, err = h.Reserve(ctxT(t), "gpu", []string{"a", "b"}, 2, true)
	require.ErrorIs(t, err, ErrNoDevicesLeft)
}

func TestCorruptStateNeverGrants(t *testing.T) {
	valid := encodeState([]Entry{{Resource: "gpu", Key: "GPU-a", Owner: Owner{PID: 1, Start: 1}}})
	tests := []struct {
		name string
		data []byte
	}{
		{"empty", []byte{}},
		{"truncated body", valid[:len(valid)-5]},
		{"truncated header", valid[:10]},
		{"garbage", []byte("\x00\xff\x13garbage\n\x01")},
		{"flink coordination file", []byte("0 12345\n1 12345\n")},
		{"appended to", append(append([]byte{}, valid...), []byte("\n0 1\n")...)},
		{"bit flip", func() []byte { b := append([]byte{}, valid...); b[len(b)-3] ^= 1; return b }()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			state := filepath.Join(t.TempDir(), "state")
			require.NoError(t, os.WriteFile(state, tc.data, 0o644))
			h := newHost(t, state, Owner{})
			for _, dry := range []bool{false, true} {
				got, err := h.Reserve(ctxT(t), "gpu", []string{"GPU-a", "GPU-b"}, 1, dry)
				require.ErrorIs(t, err, ErrCorruptState)
				require.Nil(t, got)
				require.Contains(t, err.Error(), state, "the error names the file")
				require.Contains(t, err.Error(), "remove the file", "the error says how to fix it")
			}
			require.ErrorIs(t, h.Release(ctxT(t), "gpu"), ErrCorruptState)
			after, err := os.ReadFile(state)
			require.NoError(t, err)
			require.Equal(t, tc.data, after, "a corrupt file is left as it is for the operator")
		})
	}
}

func TestUnwritableDirectory(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "a-file")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	tests := []struct {
		name  string
		state string
		setup func(t *testing.T)
	}{
		{"parent is a file", filepath.Join(file, "sub", "state"), func(*testing.T) {}},
		{"read-only directory", filepath.Join(dir, "ro", "state"), func(t *testing.T) {
			if os.Geteuid() == 0 {
				t.Skip("root ignores directory permissions")
			}
			require.NoError(t, os.Mkdir(filepath.Join(dir, "ro"), 0o555))
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.setup(t)
			h := newHost(t, tc.state, Owner{})
			_, err := h.Reserve(ctxT(t), "gpu", []string{"a"}, 1, false)
			require.Error(t, err)
			require.Contains(t, err.Error(), filepath.Dir(tc.state))
			require.Contains(t, err.Error(), "writable")
			require.Error(t, h.Check(ctxT(t)))
		})
	}
}

func TestLockTimeout(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	f, err := os.OpenFile(state+".lock", os.O_RDWR|os.O_CREATE, 0o644)
	require.NoError(t, err)
	defer f.Close()
	require.NoError(t, syscall.Flock(int(f.Fd()), syscall.LOCK_EX))

	h := newHost(t, state, Owner{})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err = h.Reserve(ctx, "gpu", []string{"a"}, 1, false)
	require.ErrorIs(t, err, ErrLockTimeout)
	require.Contains(t, err.Error(), state+".lock")

	// Without a deadline in the context, the configured timeout applies.
	h2, err := New(Options{StateFile: state, LockTimeout: 50 * time.Millisecond})
	require.NoError(t, err)
	_, err = h2.Reserve(context.Background(), "gpu", []string{"a"}, 1, false)
	require.ErrorIs(t, err, ErrLockTimeout)

	require.NoError(t, syscall.Flock(int(f.Fd()), syscall.LOCK_UN))
	_, err = h.Reserve(ctxT(t), "gpu", []string{"a"}, 1, false)
	require.NoError(t, err)
}

func TestStateFileIsReplacedNotTheLock(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	crashed := filepath.Join(filepath.Dir(state), ".state.123.tmp")
	require.NoError(t, os.WriteFile(crashed, []byte("half a"), 0o644))
	h := newHost(t, state, Owner{})
	_, err := h.Reserve(ctxT(t), "gpu", []string{"a", "b"}, 1, false)
	require.NoError(t, err)
	require.NoFileExists(t, crashed, "a crashed writer's temp file is cleaned up")
	lockBefore, err := os.Stat(state + ".lock")
	require.NoError(t, err)
	stateBefore, err := os.Stat(state)
	require.NoError(t, err)
	_, err = h.Reserve(ctxT(t), "gpu", []string{"a", "b"}, 1, false)
	require.NoError(t, err)
	lockAfter, err := os.Stat(state + ".lock")
	require.NoError(t, err)
	stateAfter, err := os.Stat(state)
	require.NoError(t, err)
	require.True(t, os.SameFile(lockBefore, lockAfter), "the lock file keeps its inode")
	require.True(t, os.SameFile(stateBefore, stateAfter), "a small state file is rewritten in place (one write of one page)")
	entries, err := os.ReadDir(filepath.Dir(state))
	require.NoError(t, err)
	require.Len(t, entries, 2, "no temp files left behind")
}

// The state file is rewritten in place while it fits a page, padded so
// that it never shrinks; past a page it is replaced (temp file, rename),
// and written in place again once it is back under a page.
func TestStateWrittenInPlaceUpToAPage(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	h := newHost(t, state, Owner{})
	keys := make([]string, 40)
	for i := range keys {
		keys[i] = fmt.Sprintf("GPU-%02d-%s", i, strings.Repeat("x", 60))
	}
	ctx := ctxT(t)
	_, err := h.Reserve(ctx, "gpu", keys, 1, false)
	require.NoError(t, err)
	first, err := os.Stat(state)
	require.NoError(t, err)
	require.NoError(t, h.Release(ctx, "gpu"))
	released, err := os.Stat(state)
	require.NoError(t, err)
	require.True(t, os.SameFile(first, released), "rewritten in place")
	require.Equal(t, first.Size(), released.Size(), "padded, not shrunk")
	entries, err := h.read()
	require.NoError(t, err)
	require.Empty(t, entries)

	_, err = h.Reserve(ctx, "gpu", keys, len(keys), false) // well over a page
	require.NoError(t, err)
	big, err := os.Stat(state)
	require.NoError(t, err)
	require.Greater(t, big.Size(), int64(inPlaceMax))
	require.NoError(t, h.Release(ctx, "gpu"))
	small, err := os.Stat(state)
	require.NoError(t, err)
	require.False(t, os.SameFile(big, small), "a file over a page is replaced")
	require.Less(t, small.Size(), int64(inPlaceMax), "and shrinks back")
	_, err = h.Reserve(ctx, "gpu", keys, 1, false)
	require.NoError(t, err)
	again, err := os.Stat(state)
	require.NoError(t, err)
	require.True(t, os.SameFile(small, again), "in place again")
	entries, err = h.read()
	require.NoError(t, err)
	require.Len(t, entries, 1)
}

// A padded file decodes to the same entries, for every size up to a page.
func TestStatePaddedDecodes(t *testing.T) {
	entries := []Entry{{Resource: "gpu", Key: "GPU-a", Owner: Owner{PID: 1, Start: 2}, Since: time.Unix(0, 0).UTC()}}
	plain := encodeState(entries)
	for size := 0; size <= inPlaceMax; size += 7 {
		b := encodeStatePadded(entries, size)
		require.GreaterOrEqual(t, len(b), size)
		require.LessOrEqual(t, len(b), max(size+1, len(plain)), "at most a digit over")
		got, err := decodeState(b)
		require.NoError(t, err, "size %d", size)
		require.Equal(t, entries, got)
	}
}

// helperChurn reserves and releases in a loop until killed (the test kills
// it with SIGKILL mid-write).
func helperChurn() int {
	h, err := New(Options{StateFile: os.Getenv("XRES_COORD_STATE")})
	if err != nil {
		fmt.Println("ERR", err)
		return 1
	}
	keys := strings.Split(os.Getenv("XRES_COORD_CANDIDATES"), ",")
	fmt.Println("READY")
	for i := 0; ; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		if _, err := h.Reserve(ctx, "gpu", keys, 1+i%len(keys), false); err != nil && !errors.Is(err, ErrNoDevicesLeft) {
			fmt.Println("ERR", err)
			cancel()
			return 1
		}
		if err := h.Release(ctx, "gpu"); err != nil {
			fmt.Println("ERR", err)
			cancel()
			return 1
		}
		cancel()
	}
}

// Writers killed with SIGKILL at random points of their in-place writes
// never leave a file that is not whole: after every kill the state decodes
// and the next writer goes on.
func TestInPlaceWriteSurvivesKill9(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	keys := []string{"GPU-0", "GPU-1", "GPU-2", "GPU-3", "GPU-4", "GPU-5", "GPU-6", "GPU-7"}
	rounds := 30
	if testing.Short() {
		rounds = 5
	}
	for r := 0; r < rounds; r++ {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "XRES_COORD_HELPER=churn", "XRES_COORD_STATE="+state,
			"XRES_COORD_CANDIDATES="+strings.Join(keys, ","))
		stdout, err := cmd.StdoutPipe()
		require.NoError(t, err)
		cmd.Stderr = os.Stderr
		require.NoError(t, cmd.Start())
		line, err := bufio.NewReader(stdout).ReadString('\n')
		require.NoError(t, err)
		require.Equal(t, "READY", strings.TrimSpace(line))
		time.Sleep(time.Duration(1+r%7) * time.Millisecond)
		require.NoError(t, cmd.Process.Kill())
		_ = cmd.Wait()
		b, err := os.ReadFile(state)
		if errors.Is(err, os.ErrNotExist) {
			continue // killed before its first write
		}
		require.NoError(t, err)
		_, err = decodeState(b)
		require.NoError(t, err, "round %d: the state file is not whole after a kill -9", r)
	}
}

// A dry run that reads the file while a writer rewrites it in place may
// see it torn; it reads again under the lock, so it never reports a
// whole file as corrupt, and reports one that is corrupt under the lock too.
func TestDryRunReadsAgainUnderTheLock(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	h := newHost(t, state, Owner{})
	keys := []string{"GPU-0", "GPU-1", "GPU-2", "GPU-3"}
	ctx := ctxT(t)
	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		w := newHost(t, state, liveOwner(t))
		for i := 0; ; i++ {
			select {
			case <-stop:
				done <- nil
				return
			default:
			}
			if _, err := w.Reserve(ctx, "gpu", keys, 1+i%3, false); err != nil {
				done <- err
				return
			}
			if err := w.Release(ctx, "gpu"); err != nil {
				done <- err
				return
			}
		}
	}()
	for i := 0; i < 300; i++ {
		_, err := h.Reserve(ctx, "gpu", keys, 1, true)
		require.NoError(t, err)
		_, err = h.Holders()
		require.NoError(t, err)
	}
	close(stop)
	require.NoError(t, <-done)

	require.NoError(t, os.WriteFile(state, []byte("xres-coordination v1 3 00\nabc"), 0o666))
	_, err := h.Reserve(ctx, "gpu", keys, 1, true)
	require.ErrorIs(t, err, ErrCorruptState)
}

// Many processes at once never get the same device.
func TestMultiProcessNoDoubleGrant(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	keys := []string{"GPU-0", "GPU-1", "GPU-2", "GPU-3"}
	const procs = 10
	helpers := make([]*helper, procs)
	var wg sync.WaitGroup
	for i := range helpers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			helpers[i] = startHelper(t, state, 1, keys...)
		}()
	}
	wg.Wait()
	var granted []string
	noneLeft := 0
	for _, h := range helpers {
		switch g := h.granted(); {
		case g != nil:
			granted = append(granted, g...)
		case strings.HasPrefix(h.line, "NOLEFT"):
			noneLeft++
		default:
			t.Fatalf("unexpected helper output %q", h.line)
		}
	}
	sort.Strings(granted)
	require.Equal(t, keys, granted, "each device granted exactly once")
	require.Equal(t, procs-len(keys), noneLeft)

	// Holders that end release their devices.
	for _, h := range helpers {
		_ = h.stdin.Close()
		require.NoError(t, h.cmd.Wait())
	}
	hs, err := newHost(t, state, Owner{}).Holders()
	require.NoError(t, err)
	require.Empty(t, hs)
}

// A holder killed with SIGKILL (reaped or still a zombie) loses its devices
// to the next caller.
func TestMultiProcessKilledHolderReclaimed(t *testing.T) {
	for _, reap := range []bool{true, false} {
		t.Run(fmt.Sprintf("reaped=%v", reap), func(t *testing.T) {
			state := filepath.Join(t.TempDir(), "state")
			keys := []string{"GPU-0", "GPU-1"}
			holder := startHelper(t, state, 2, keys...)
			require.Equal(t, keys, holder.granted())

			other := startHelper(t, state, 1, keys...)
			require.True(t, strings.HasPrefix(other.line, "NOLEFT"), other.line)

			require.NoError(t, holder.cmd.Process.Signal(syscall.SIGKILL))
			if reap {
				_ = holder.cmd.Wait()
			} else {
				waitZombie(t, holder.cmd.Process.Pid)
			}
			next := startHelper(t, state, 2, keys...)
			require.Equal(t, keys, next.granted())
		})
	}
}

func waitZombie(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		st, err := defaultProc.stat(pid)
		require.NoError(t, err)
		if st.state == 'Z' {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("process %d did not become a zombie", pid)
}

func TestParseStat(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		state   byte
		start   uint64
		wantErr bool
	}{
		{"plain", "19573 (cat) R 19570 19570 3409 0 -1 4194304 122 0 0 0 0 0 0 0 20 0 1 0 49563 3133440 406", 'R', 49563, false},
		{"name with spaces and parens", "42 (a) b (c) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 777 0 0", 'S', 777, false},
		{"zombie", "7 (x) Z 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5 0 0", 'Z', 5, false},
		{"no name", "7 x R 1", 0, 0, true},
		{"too short", "7 (x) R 1 2 3", 0, 0, true},
		{"bad start", "7 (x) R 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 zz 0 0", 0, 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st, err := parseStat([]byte(tc.in))
			if tc.wantErr {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.state, st.state)
			require.Equal(t, tc.start, st.start)
		})
	}
}

func TestSelfMatchesProc(t *testing.T) {
	self, err := Self()
	require.NoError(t, err)
	require.Equal(t, os.Getpid(), self.PID)
	require.NotZero(t, self.Start)
	require.Equal(t, alive, defaultProc.check(self, self))
}

// A holder's arguments may carry secrets: messages name its program only.
func TestHolderArgumentsNeverShown(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	cmd := exec.Command("sh", "-c", "while :; do sleep 1; done", "worker", "--password=hunter2")
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	holder, err := ProcessOwner(cmd.Process.Pid)
	require.NoError(t, err)
	ctx := ctxT(t)
	_, err = newHost(t, state, holder).Reserve(ctx, "gpu", []string{"GPU-a"}, 1, false)
	require.NoError(t, err)
	_, err = newHost(t, state, liveOwner(t)).Reserve(ctx, "gpu", []string{"GPU-a"}, 1, false)
	require.ErrorIs(t, err, ErrNoDevicesLeft)
	require.Contains(t, err.Error(), fmt.Sprintf("held by pid %d (sh)", cmd.Process.Pid))
	require.NotContains(t, err.Error(), "hunter2")
	hs, err := newHost(t, state, holder).Holders()
	require.NoError(t, err)
	require.Len(t, hs, 1)
	require.Equal(t, "sh", hs[0].Program)
}

// Issue 29: a Reserve that recorded nothing says so
// (driver.ErrNothingReserved), so that its driver releases nothing after
// it; a granted one's Release still frees it.
func TestReserveFailureSaysNothingReserved(t *testing.T) {
	corrupt := filepath.Join(t.TempDir(), "state")
	require.NoError(t, os.WriteFile(corrupt, []byte("garbage\n"), 0o644))
	_, err := newHost(t, corrupt, Owner{}).Reserve(ctxT(t), "gpu", []string{"GPU-a"}, 1, false)
	require.ErrorIs(t, err, ErrCorruptState)
	require.ErrorIs(t, err, driver.ErrNothingReserved)

	state := filepath.Join(t.TempDir(), "state")
	h := newHost(t, state, Owner{})
	_, err = h.Reserve(ctxT(t), "gpu", []string{"GPU-a"}, 2, false)
	require.ErrorIs(t, err, driver.ErrNotEnoughDevices)
	require.ErrorIs(t, err, driver.ErrNothingReserved)
	got, err := h.Reserve(ctxT(t), "gpu", []string{"GPU-a"}, 1, false)
	require.NoError(t, err)
	require.Equal(t, []string{"GPU-a"}, got)
	require.NoError(t, h.Release(ctxT(t), "gpu"))
}
