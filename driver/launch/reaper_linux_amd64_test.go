package launch

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The cloned reaper holds nothing of the launcher's but its pipe: a lock
// the launcher holds when it is cloned (the coordination's, taken beside
// the worker's start) must not outlive the launcher's own descriptor, nor
// another reaper's pipe end keep that reaper waiting. It is named
// xres-reaper, in a process group of its own, and signals the group once
// the pipe ends.
func TestClonedReaperHoldsOnlyItsPipe(t *testing.T) {
	victim := exec.Command("sleep", "3600")
	victim.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, victim.Start())
	t.Cleanup(func() { _ = syscall.Kill(-victim.Process.Pid, syscall.SIGKILL); _ = victim.Wait() })
	lock, err := os.Create(filepath.Join(t.TempDir(), "lock"))
	require.NoError(t, err)
	require.NoError(t, syscall.Flock(int(lock.Fd()), syscall.LOCK_EX))

	rp, err := startReaper(victim.Process.Pid)
	require.NoError(t, err)
	require.NotNil(t, rp.stack, "cloned, not a shell")
	fdDir := "/proc/" + strconv.Itoa(rp.pid) + "/fd"
	deadline := time.Now().Add(time.Minute)
	for {
		fds, err := os.ReadDir(fdDir)
		require.NoError(t, err)
		if len(fds) == 1 && fds[0].Name() == "0" {
			break
		}
		require.False(t, time.Now().After(deadline), "the reaper still holds %d descriptors", len(fds))
		time.Sleep(time.Millisecond)
	}
	comm, err := os.ReadFile("/proc/" + strconv.Itoa(rp.pid) + "/comm")
	require.NoError(t, err)
	require.Equal(t, "xres-reaper\n", string(comm))
	pgid, err := syscall.Getpgid(rp.pid)
	require.NoError(t, err)
	require.Equal(t, rp.pid, pgid)

	// The lock is free once the launcher's descriptor is closed.
	require.NoError(t, lock.Close())
	other, err := os.Open(lock.Name())
	require.NoError(t, err)
	defer other.Close()
	require.NoError(t, syscall.Flock(int(other.Fd()), syscall.LOCK_EX|syscall.LOCK_NB), "the reaper keeps the launcher's lock")

	// The pipe ends as it does when the launcher dies: the group is killed.
	require.NoError(t, rp.w.Close())
	require.Equal(t, 128+int(syscall.SIGKILL), exitCodeOfWait(t, victim))
	require.Equal(t, 0, waitPid(rp.pid))
}
