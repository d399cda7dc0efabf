package coord

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/driver"
)

// Issue 12, finding 1: a holder keeps excluding others while the lock
// file is deleted or replaced under it.
func TestLockSurvivesLockFileRemoval(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, lock string)
	}{
		{"deleted", func(t *testing.T, lock string) { require.NoError(t, os.Remove(lock)) }},
		{"replaced", func(t *testing.T, lock string) {
			require.NoError(t, os.WriteFile(lock+".new", nil, 0o644))
			require.NoError(t, os.Rename(lock+".new", lock))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			state := filepath.Join(t.TempDir(), "state")
			holder := newHost(t, state, Owner{})
			other := newHost(t, state, liveOwner(t))
			inside, leave := make(chan struct{}), make(chan struct{})
			held := make(chan error, 1)
			go func() {
				held <- holder.locked(ctxT(t), func() error { close(inside); <-leave; return nil })
			}()
			<-inside
			tc.change(t, holder.lock)
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			_, err := other.Reserve(ctx, "gpu", []string{"a"}, 1, false)
			require.ErrorIs(t, err, ErrLockTimeout, "a second holder got in while the first held the lock")
			close(leave)
			require.NoError(t, <-held)
			_, err = other.Reserve(ctxT(t), "gpu", []string{"a"}, 1, false)
			require.NoError(t, err)
		})
	}
}

// A temp file removed before its rename is written again. The state is
// made larger than a page first, so that every write goes through a temp
// file (smaller ones are rewritten in place).
func TestWriteSurvivesTempRemoval(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	h := newHost(t, state, Owner{})
	for i := 0; i < 64; i++ {
		name := fmt.Sprintf("filler-resource-%03d", i)
		_, err := h.Reserve(ctxT(t), name, []string{fmt.Sprintf("GPU-%03d-%s", i, strings.Repeat("f", 32))}, 1, false)
		require.NoError(t, err)
	}
	fi, err := os.Stat(state)
	require.NoError(t, err)
	require.Greater(t, fi.Size(), int64(inPlaceMax), "the state must be past the in-place size")
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			tmps, _ := filepath.Glob(filepath.Join(dir, ".state.*.tmp"))
			for _, f := range tmps {
				_ = os.Remove(f)
			}
			// A cleaner sweeping without pause on a loaded 2-core machine
			// hit all of a write's tries; a real one is far slower still.
			time.Sleep(50 * time.Microsecond)
		}
	}()
	for i := 0; i < 50; i++ {
		_, err := h.Reserve(ctxT(t), "gpu", []string{"a"}, 1, false)
		require.NoError(t, err)
		require.NoError(t, h.Release(ctxT(t), "gpu"))
	}
	close(stop)
	<-done
}

// Issue 12, finding 2: an entry whose owner died stays held while a
// process of its worker group lives; a group id now led by another
// process (reused) holds nothing.
func TestDeadOwnerLiveGroupHolds(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	member, g := startGroupLeader(t)
	require.Equal(t, member.Process.Pid, g.PGID)

	gone := deadOwner(t)
	writeEntries(t, state, Entry{Resource: "gpu", Key: "a", Owner: gone, Group: &g, Since: time.Now().UTC().Truncate(time.Second)})
	b, err := os.ReadFile(state)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(string(b), stateMagic+" "+stateV3+" "), "a group makes the file v3")

	h := newHost(t, state, Owner{})
	_, err = h.Reserve(ctxT(t), "gpu", []string{"a"}, 1, false)
	require.ErrorIs(t, err, ErrNoDevicesLeft)
	require.Contains(t, err.Error(), fmt.Sprintf("alive: pids %d (sleep)", member.Process.Pid))
	hs, err := h.Holders()
	require.NoError(t, err)
	require.Len(t, hs, 1)
	require.True(t, hs[0].Alive)
	require.Equal(t, []int{member.Process.Pid}, hs[0].Members)

	reused := g
	reused.Start++ // the id is now another group's
	writeEntries(t, state, Entry{Resource: "gpu", Key: "a", Owner: gone, Group: &reused, Since: time.Now().UTC().Truncate(time.Second)})
	_, err = h.Reserve(ctxT(t), "gpu", []string{"a"}, 1, false)
	require.NoError(t, err, "a reused group id holds nothing")
	require.NoError(t, h.Release(ctxT(t), "gpu"))

	writeEntries(t, state, Entry{Resource: "gpu", Key: "a", Owner: gone, Group: &g, Since: time.Now().UTC().Truncate(time.Second)})
	require.NoError(t, member.Process.Kill())
	_ = member.Wait()
	_, err = h.Reserve(ctxT(t), "gpu", []string{"a"}, 1, false)
	require.NoError(t, err, "once the group is gone the device is free")
}

// Issue 12, finding 3: with Flink's coordination file, the Host honours
// Flink's live lines, writes its grants there in Flink's format, keeps its
// own state apart and removes its lines on release; a dry run writes
// nothing; an xres state file where Flink's should be is refused.
func TestFlinkFileInterop(t *testing.T) {
	dir := t.TempDir()
	state, flink := filepath.Join(dir, "state"), filepath.Join(dir, "flink")
	live := liveOwner(t)
	require.NoError(t, os.WriteFile(flink, []byte(fmt.Sprintf("0 %d\n1 %d\n", live.PID, deadOwner(t).PID)), 0o644))
	h, err := New(Options{StateFile: state, FlinkFile: flink})
	require.NoError(t, err)
	cands := []driver.Candidate{{Key: "GPU-a", Index: "0"}, {Key: "GPU-b", Index: "1"}, {Key: "GPU-c", Index: "2"}}

	got, err := h.ReserveCandidates(ctxT(t), "gpu", cands, 2, true)
	require.NoError(t, err)
	require.Equal(t, []string{"GPU-b", "GPU-c"}, got, "index 0 is held by a live Flink owner")
	before, err := os.ReadFile(flink)
	require.NoError(t, err)

	after, err := os.ReadFile(flink)
	require.NoError(t, err)
	require.Equal(t, string(before), string(after), "a dry run writes nothing")
	require.NoFileExists(t, state)

	got, err = h.ReserveCandidates(ctxT(t), "gpu", cands, 2, false)
	require.NoError(t, err)
	require.Equal(t, []string{"GPU-b", "GPU-c"}, got)
	holder := FlinkHolder()
	require.NotZero(t, holder, "the lines name a holder")
	require.NotEqual(t, os.Getpid(), holder, "not the launcher, which may die before its worker's helpers")
	b, err := os.ReadFile(flink)
	require.NoError(t, err)
	require.Equal(t, fmt.Sprintf("0 %d\n1 %d\n2 %d\n", live.PID, holder, holder), string(b), "the dead owner's line is replaced")
	_, err = h.ReserveCandidates(ctxT(t), "gpu", cands, 1, false)
	require.ErrorIs(t, err, ErrNoDevicesLeft)
	require.Contains(t, err.Error(), fmt.Sprintf("GPU-a (index 0) held by pid %d per Flink's coordination file %s", live.PID, flink))

	require.NoError(t, h.Release(ctxT(t), "gpu"))
	b, err = os.ReadFile(flink)
	require.NoError(t, err)
	require.Equal(t, fmt.Sprintf("0 %d\n", live.PID), string(b))
	require.Zero(t, FlinkHolder(), "the holder ends with the last line naming it")
	require.True(t, pidGone(holder), "holder %d still runs", holder)

	_, err = New(Options{StateFile: state, FlinkFile: state})
	require.ErrorIs(t, err, ErrSameFile)
	writeEntries(t, flink, Entry{Resource: "gpu", Key: "GPU-a", Owner: live, Since: time.Now().UTC().Truncate(time.Second)})
	_, err = h.ReserveCandidates(ctxT(t), "gpu", cands, 1, false)
	require.ErrorIs(t, err, ErrCorruptState)
	require.Contains(t, err.Error(), "is an xres state file, not Flink's coordination file")
}

// The state file is not fsync'ed: a file torn by a crash (last written
// before this boot) is read as empty, since none of its holders survived;
// a torn file of this boot still blocks every grant.
func TestTornStateFromBeforeBoot(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	require.NoError(t, os.WriteFile(state, []byte("xres-coordination v1 99 ab"), 0o644))
	h := newHost(t, state, Owner{})
	_, err := h.Reserve(ctxT(t), "gpu", []string{"a"}, 1, false)
	require.ErrorIs(t, err, ErrCorruptState, "torn during this boot")

	long := time.Unix(1_000_000, 0)
	require.NoError(t, os.Chtimes(state, long, long))
	got, err := h.Reserve(ctxT(t), "gpu", []string{"a"}, 1, false)
	require.NoError(t, err)
	require.Equal(t, []string{"a"}, got)
}

// Issue 29, item 1: the holder that this process's lines in Flink's file
// name lives while its launcher does (its stdin is open), then while a
// worker group it was told of has a process, and then ends by itself.
func TestFlinkHolderOutlivesLauncher(t *testing.T) {
	fh, exited := startTestHolder(t)
	member, g := startGroupLeader(t)
	require.NoError(t, fh.tell(g))

	fh.letGo() // what the launcher's SIGKILL does to the holder's stdin
	select {
	case err := <-exited:
		t.Fatalf("the holder ended (%v) while the worker group %d lives", err, member.Process.Pid)
	case <-time.After(1500 * time.Millisecond):
	}
	require.NoError(t, member.Process.Kill())
	_ = member.Wait()
	select {
	case err := <-exited:
		require.NoError(t, err, "the holder exits 0 once the group is gone")
	case <-time.After(10 * time.Second):
		t.Fatal("the holder did not end after the worker group did")
	}
}

// A group whose processes are all zombies (dead, not yet reaped: an init
// that reaps late) holds nothing, as in xres's own state; neither does a
// group id whose processes started before its leader (reused).
func TestFlinkHolderIgnoresZombies(t *testing.T) {
	for _, tc := range []struct {
		name  string
		group func(t *testing.T, g Group) Group
	}{
		{"zombie", func(t *testing.T, g Group) Group {
			require.NoError(t, syscall.Kill(g.PGID, syscall.SIGKILL))
			require.Eventually(t, func() bool {
				st, err := defaultProc.stat(g.PGID)
				return err == nil && st.state == 'Z'
			}, 10*time.Second, 5*time.Millisecond)
			return g
		}},
		{"reused id", func(t *testing.T, g Group) Group { g.Start++; return g }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, g := startGroupLeader(t) // not reaped before the cleanup: a zombie
			fh, exited := startTestHolder(t)
			require.NoError(t, fh.tell(tc.group(t, g)))
			fh.letGo()
			select {
			case err := <-exited:
				require.NoError(t, err)
			case <-time.After(10 * time.Second):
				t.Fatal("the holder waited for a group with no live process")
			}
		})
	}
}

// A holder told of no group ends as soon as its launcher is gone.
func TestFlinkHolderWithoutGroupEndsWithLauncher(t *testing.T) {
	fh, exited := startTestHolder(t)
	fh.letGo()
	select {
	case err := <-exited:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("the holder outlived its launcher without a group to wait for")
	}
}

// startTestHolder starts a holder and reaps it in the background: exited
// reports its end. It is killed when the test ends.
func startTestHolder(t *testing.T) (*flinkHolder, <-chan error) {
	t.Helper()
	fh, err := startFlinkHolder()
	require.NoError(t, err)
	exited := make(chan error, 1)
	go func() { exited <- fh.cmd.Wait() }()
	t.Cleanup(func() { fh.letGo(); _ = fh.cmd.Process.Kill() })
	return fh, exited
}

// pidGone says whether pid no longer exists (reaped).
func pidGone(pid int) bool {
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

// startGroupLeader starts `sleep 60` in a process group of its own and
// returns it with its group; the cleanup kills and reaps it.
func startGroupLeader(t *testing.T) (*exec.Cmd, Group) {
	t.Helper()
	member := exec.Command("sleep", "60")
	member.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, member.Start())
	t.Cleanup(func() { _ = member.Process.Kill(); _ = member.Wait() })
	g, err := GroupOf(member.Process.Pid)
	require.NoError(t, err)
	return member, g
}
