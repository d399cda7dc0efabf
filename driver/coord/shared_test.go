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
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/driver"
	"github.com/xres/xres/resources"
)

// Issue 41, host state: hosts shared by several Unix users, careless
// configuration. The tampering tests run the other user's side as uid
// 65534 (setpriv) and need root for that; CI runs as root.

const otherUID = 65534

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: acts as another Unix user (setpriv --reuid 65534) or makes device nodes and foreign-owned folders")
	}
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Skip("needs setpriv (util-linux) to act as another Unix user")
	}
}

// asOther runs the shell script as uid/gid 65534 and returns its combined
// output and error.
func asOther(t *testing.T, script string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("setpriv", append([]string{"--reuid", strconv.Itoa(otherUID), "--regid", strconv.Itoa(otherUID), "--clear-groups", "sh", "-c", script, "sh"}, args...)...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// sharedFolder returns a coordination folder every user may reach, with
// mode mode (a t.TempDir is 0700: its parents are opened up).
func sharedFolder(t *testing.T, mode os.FileMode) string {
	t.Helper()
	base := t.TempDir()
	require.NoError(t, os.Chmod(base, 0o755))
	require.NoError(t, os.Chmod(filepath.Dir(base), 0o755))
	dir := filepath.Join(base, "xres")
	require.NoError(t, os.Mkdir(dir, 0o700))
	require.NoError(t, os.Chmod(dir, mode))
	return dir
}

// unchanged records path's identity and content, and checks them later.
func unchanged(t *testing.T, path string) func() {
	t.Helper()
	before, err := os.Lstat(path)
	require.NoError(t, err)
	var content []byte
	if before.Mode().IsRegular() {
		content, err = os.ReadFile(path)
		require.NoError(t, err)
	}
	return func() {
		t.Helper()
		after, err := os.Lstat(path)
		require.NoError(t, err, "%s is gone", path)
		require.True(t, os.SameFile(before, after), "%s was replaced", path)
		require.Equal(t, before.Mode(), after.Mode(), "%s changed its mode", path)
		if before.Mode().IsRegular() {
			got, err := os.ReadFile(path)
			require.NoError(t, err)
			require.Equal(t, string(content), string(got), "%s was written", path)
		}
	}
}

// A coordination.file naming a file that is not an xres state file (a typo
// naming a dated configuration file, a device, a FIFO, a folder) is never
// written over, truncated or replaced, and is never read without bound: the
// error names the file and why. As root, coordination.file: /dev/null once
// replaced /dev/null with a regular 0666 file (a file from before the boot
// was taken for a state file torn by a crash).
func TestForeignStateFileNeverWritten(t *testing.T) {
	tests := []struct {
		name   string
		make   func(t *testing.T, path string)
		errHas string
	}{
		{"dated configuration file", func(t *testing.T, path string) {
			require.NoError(t, os.WriteFile(path, []byte("jobmanager.rpc.address: localhost\ntaskmanager.numberOfTaskSlots: 4\n"), 0o644))
			old := time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)
			require.NoError(t, os.Chtimes(path, old, old))
		}, "is not an xres state file"},
		{"dated binary file", func(t *testing.T, path string) {
			require.NoError(t, os.WriteFile(path, []byte("\x7fELF\x02\x01\x01"), 0o755))
			old := time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)
			require.NoError(t, os.Chtimes(path, old, old))
		}, "is not an xres state file"},
		{"null device", func(t *testing.T, path string) {
			needRoot(t)
			require.NoError(t, syscall.Mknod(path, syscall.S_IFCHR|0o666, 1<<8|3))
			old := time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)
			require.NoError(t, os.Chtimes(path, old, old))
		}, "not a regular file"},
		{"FIFO", func(t *testing.T, path string) {
			require.NoError(t, syscall.Mkfifo(path, 0o666))
		}, "not a regular file"},
		{"folder", func(t *testing.T, path string) {
			require.NoError(t, os.Mkdir(path, 0o755))
		}, "not a regular file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			state := filepath.Join(t.TempDir(), "coordination.state")
			tc.make(t, state)
			check := unchanged(t, state)
			h := newHost(t, state, Owner{})
			for _, dry := range []bool{true, false} {
				got, err := h.Reserve(ctxT(t), "gpu", []string{"GPU-a"}, 1, dry)
				require.Error(t, err, "dry run %v", dry)
				require.Nil(t, got)
				require.ErrorIs(t, err, ErrCorruptState)
				require.ErrorContains(t, err, state)
				require.ErrorContains(t, err, tc.errHas)
			}
			require.Error(t, h.Check(ctxT(t)))
			_, err := h.Holders()
			require.Error(t, err)
			check()
		})
	}
}

// A planted symbolic link is never followed: a lock file linked anywhere
// does not make a (root) launcher create the link's target, and a state
// file linked to a secret is neither written nor quoted.
func TestSymlinksToHostStateNeverFollowed(t *testing.T) {
	elsewhere := t.TempDir()
	t.Run("lock", func(t *testing.T) {
		state := filepath.Join(t.TempDir(), "coordination.state")
		target := filepath.Join(elsewhere, "created-by-the-launcher")
		require.NoError(t, os.Symlink(target, state+".lock"))
		h := newHost(t, state, Owner{})
		_, err := h.Reserve(ctxT(t), "gpu", []string{"GPU-a"}, 1, false)
		require.ErrorIs(t, err, ErrUnsafeFile)
		require.ErrorContains(t, err, state+".lock is a symbolic link")
		require.NoFileExists(t, target, "the link's target was created")
	})
	t.Run("state", func(t *testing.T) {
		state := filepath.Join(t.TempDir(), "coordination.state")
		secret := filepath.Join(elsewhere, "secret")
		require.NoError(t, os.WriteFile(secret, []byte("password=hunter2\n"), 0o600))
		require.NoError(t, os.Symlink(secret, state))
		check := unchanged(t, secret)
		h := newHost(t, state, Owner{})
		_, err := h.Reserve(ctxT(t), "gpu", []string{"GPU-a"}, 1, false)
		require.ErrorIs(t, err, ErrCorruptState)
		require.ErrorContains(t, err, "symbolic link")
		require.NotContains(t, err.Error(), "hunter2")
		check()
		li, err := os.Lstat(state)
		require.NoError(t, err)
		require.NotZero(t, li.Mode()&os.ModeSymlink, "the link is left for the operator")
	})
	t.Run("device cache lock", func(t *testing.T) {
		state := filepath.Join(t.TempDir(), "coordination.state")
		inner := &countingEnum{key: "k"}
		c := newDeviceCache(inner, state, nil)
		target := filepath.Join(elsewhere, "cache-lock-target")
		require.NoError(t, os.Symlink(target, c.path+".lock"))
		devs, err := c.Enumerate(ctxT(t))
		require.NoError(t, err, "the listing is made without the cache")
		require.Len(t, devs, 1)
		require.NoFileExists(t, target)
	})
}

// Flink's --coordination-file is used only when it is Flink's (or empty,
// or new): a link to a root-only file is neither truncated nor appended
// to, and the error quotes nothing of it; a file of another format is left
// as it is; a FIFO is not read.
func TestFlinkFileNotFlinksNeverWritten(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "shadow")
	require.NoError(t, os.WriteFile(secret, []byte("root:$6$secret-hash:19000:0:99999:7:::\n"), 0o600))
	config := filepath.Join(dir, "flink-conf.yaml")
	require.NoError(t, os.WriteFile(config, []byte("taskmanager.numberOfTaskSlots: 4\n"), 0o644))
	link := filepath.Join(dir, "flink-coordination")
	require.NoError(t, os.Symlink(secret, link))
	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o666))
	for _, tc := range []struct{ name, file, errHas string }{
		{"link to a root-only file", link, "symbolic link"},
		{"configuration file", config, "is not a line of Flink's coordination file"},
		{"FIFO", fifo, "not a regular file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			check := unchanged(t, tc.file)
			checkSecret := unchanged(t, secret)
			h, err := New(Options{StateFile: filepath.Join(t.TempDir(), "state"), FlinkFile: tc.file})
			require.NoError(t, err)
			for _, dry := range []bool{true, false} {
				_, err = h.Reserve(ctxT(t), "gpu", []string{"GPU-a"}, 1, dry)
				require.Error(t, err)
				require.ErrorContains(t, err, tc.file)
				require.ErrorContains(t, err, tc.errHas)
				require.NotContains(t, err.Error(), "secret-hash")
				require.NotContains(t, err.Error(), "numberOfTaskSlots")
			}
			check()
			checkSecret()
		})
	}
}

// A relative coordination.file is refused: under YARN every container has
// a working folder of its own, so nothing would be coordinated.
func TestRelativeStateFileRefused(t *testing.T) {
	_, err := New(Options{StateFile: "coordination.state"})
	require.ErrorContains(t, err, `"coordination.state" is a relative path`)
	require.ErrorContains(t, err, "absolute host path")
}

// A coordination folder others could replace the state in is refused with
// the fix: world-writable without the sticky bit (the README's old
// `install -d -m 0777`), or owned by another user. A sticky world-writable
// folder (1777) and a group folder (2770) are fine.
func TestUnsafeFolderRefused(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mode   os.FileMode
		owner  int
		errHas string
	}{
		{"world-writable", 0o777, -1, "world-writable without the sticky bit"},
		{"owned by another user", 0o755, otherUID, fmt.Sprintf("owned by uid %d", otherUID)},
		{"sticky", 0o777 | os.ModeSticky, -1, ""},
		{"group folder", 0o770 | os.ModeSetgid, -1, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.owner >= 0 {
				needRoot(t)
			}
			dir := sharedFolder(t, tc.mode)
			if tc.owner >= 0 {
				require.NoError(t, os.Chown(dir, tc.owner, tc.owner))
			}
			h := newHost(t, filepath.Join(dir, "coordination.state"), liveOwner(t))
			_, err := h.Reserve(ctxT(t), "gpu", []string{"GPU-a"}, 1, false)
			if tc.errHas == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ErrUnsafeFolder)
			require.ErrorContains(t, err, dir)
			require.ErrorContains(t, err, tc.errHas)
			require.ErrorContains(t, err, "install -d -m")
			require.NoFileExists(t, filepath.Join(dir, "coordination.state"))
		})
	}
}

// A recorded pid no kernel can have is dead. Such a pid passed to kill(2)
// wrapped around to 1 (or -1) and so counted as alive forever.
func TestPidAboveMaxIsDead(t *testing.T) {
	self, err := Self()
	require.NoError(t, err)
	for _, pid := range []int{1<<32 + 1, 1<<32 - 1, defaultProc.pidMax() + 1} {
		t.Run(strconv.Itoa(pid), func(t *testing.T) {
			state := filepath.Join(t.TempDir(), "state")
			planted := self
			planted.PID, planted.Start = pid, 1
			writeEntries(t, state, Entry{Resource: "gpu", Key: "GPU-a", Owner: planted, Since: time.Now().UTC().Truncate(time.Second)})
			h := newHost(t, state, liveOwner(t))
			got, err := h.Reserve(ctxT(t), "gpu", []string{"GPU-a"}, 1, false)
			require.NoError(t, err, "a pid above pid_max holds nothing")
			require.Equal(t, []string{"GPU-a"}, got)
		})
	}
}

// The holder the bridge reserves for: never init, never another user's
// process.
func TestCheckHolder(t *testing.T) {
	require.NoError(t, CheckHolder(os.Getpid()))
	require.ErrorIs(t, CheckHolder(1), ErrBadHolder)
	require.ErrorContains(t, CheckHolder(1), "until the next boot")
	require.ErrorIs(t, CheckHolder(1<<32+1), ErrBadHolder)
	dead := deadOwner(t)
	require.ErrorContains(t, CheckHolder(dead.PID), "not a running process")
	if os.Geteuid() != 0 {
		return
	}
	needRoot(t)
	cmd := exec.Command("setpriv", "--reuid", strconv.Itoa(otherUID), "--regid", strconv.Itoa(otherUID), "--clear-groups", "sleep", "60")
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	// setpriv execs sleep once it changed its uid: wait for that.
	require.Eventually(t, func() bool { uid, ok := procUID(defaultProc, cmd.Process.Pid); return ok && uid == otherUID }, 10*time.Second, 5*time.Millisecond)
	err := CheckHolder(cmd.Process.Pid)
	require.ErrorIs(t, err, ErrBadHolder)
	require.ErrorContains(t, err, fmt.Sprintf("runs as uid %d", otherUID))
}

// fakeProc writes a /proc tree with the given processes: pid → parent,
// argv and stdin.
type fakeProcess struct {
	ppid  int
	argv  []string
	stdin string
}

func fakeProcTree(t *testing.T, procs map[int]fakeProcess) procFS {
	t.Helper()
	root := t.TempDir()
	for pid, p := range procs {
		d := filepath.Join(root, strconv.Itoa(pid))
		require.NoError(t, os.MkdirAll(filepath.Join(d, "fd"), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(d, "cmdline"), []byte(strings.Join(p.argv, "\x00")+"\x00"), 0o644))
		stat := fmt.Sprintf("%d (%s) S %d %d %d 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 %d 0 0", pid, filepath.Base(p.argv[0]), p.ppid, pid, pid, 1000+pid)
		require.NoError(t, os.WriteFile(filepath.Join(d, "stat"), []byte(stat), 0o644))
		if p.stdin != "" {
			require.NoError(t, os.Symlink(p.stdin, filepath.Join(d, "fd", "0")))
		}
	}
	return procFS{root: root}
}

// The bridge's caller: the engine above its wrapper scripts, but never
// what runs an interactive shell (run by hand, the bridge reserved for
// the terminal or sshd above the shell, as long as that ran).
func TestCallerNotAboveAnInteractiveShell(t *testing.T) {
	p := fakeProcTree(t, map[int]fakeProcess{
		100: {ppid: 1, argv: []string{"sshd: alice@pts/0"}, stdin: "/dev/null"},
		200: {ppid: 100, argv: []string{"-bash"}, stdin: "/dev/pts/0"},
		210: {ppid: 200, argv: []string{"bash", "-l"}, stdin: "/dev/pts/0"},
		300: {ppid: 1, argv: []string{"java", "-cp", "x", "TaskManager"}, stdin: "/dev/null"},
		310: {ppid: 300, argv: []string{"/bin/sh", "/opt/xres/gpu-discovery.sh", "1"}, stdin: "/dev/null"},
		320: {ppid: 300, argv: []string{"bash", "-c", "exec ./discover"}, stdin: "/dev/pts/1"},
		330: {ppid: 300, argv: []string{"sh"}, stdin: "pipe:[1234]"},
		340: {ppid: 300, argv: []string{"bash", "-e", "-o", "pipefail", "run.sh"}, stdin: "/dev/pts/1"},
	})
	for _, tc := range []struct {
		from, want int
		errHas     string
	}{
		{from: 200, errHas: "interactive shell (pid 200, bash)"},
		{from: 210, errHas: "interactive shell (pid 210, bash)"},
		{from: 310, want: 300},
		{from: 320, want: 300},
		{from: 330, want: 300},
		{from: 340, want: 300},
	} {
		t.Run(strconv.Itoa(tc.from), func(t *testing.T) {
			got, err := p.caller(tc.from)
			if tc.errHas != "" {
				require.ErrorIs(t, err, ErrNoCaller)
				require.ErrorContains(t, err, tc.errHas)
				require.ErrorContains(t, err, "--holder-pid")
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

// Tampering by another Unix user in the README's shared folder (1777,
// sticky): deleting the state file, rolling it back to an older valid
// copy, rewriting it, rewriting or planting the device cache. None gives a
// held device to a second holder.
func TestOtherUserCannotTamper(t *testing.T) {
	needRoot(t)
	dir := sharedFolder(t, 0o777|os.ModeSticky)
	state := filepath.Join(dir, "coordination.state")
	first := newHost(t, state, liveOwner(t))
	_, err := first.Reserve(ctxT(t), "gpu", []string{"GPU-b"}, 1, false)
	require.NoError(t, err)
	old := filepath.Join(filepath.Dir(dir), "old-state")
	b, err := os.ReadFile(state)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(old, b, 0o644)) // a valid copy from before GPU-a was held
	holder := newHost(t, state, liveOwner(t))
	got, err := holder.Reserve(ctxT(t), "gpu", []string{"GPU-a"}, 1, false)
	require.NoError(t, err)
	require.Equal(t, []string{"GPU-a"}, got)

	for _, tc := range []struct{ name, script string }{
		{"delete", `rm -f "$1"`},
		{"roll back in place", `cat "$2" > "$1"`},
		{"roll back by rename", `cp "$2" "$3/.mine" && mv -f "$3/.mine" "$1"`},
		{"truncate", `: > "$1"`},
		{"chmod", `chmod 600 "$1"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := asOther(t, tc.script, state, old, dir)
			require.Error(t, err, "uid %d could %s the state file: %s", otherUID, tc.name, out)
			second := newHost(t, state, liveOwner(t))
			_, err = second.Reserve(ctxT(t), "gpu", []string{"GPU-a"}, 1, false)
			require.ErrorIs(t, err, ErrNoDevicesLeft, "GPU-a granted twice")
		})
	}

	t.Run("device cache", func(t *testing.T) {
		inner := &countingEnum{key: "tamper"}
		c := newDeviceCache(inner, state, nil)
		c.ttl = time.Hour
		_, err := c.Enumerate(ctxT(t))
		require.NoError(t, err)
		fake := appendDeviceCache(nil, deviceCacheFile{Boot: c.boot, Time: time.Now(), Devices: []driver.Device{{Key: "GPU-planted", Info: resources.Properties{"index": "0"}}}})
		out, err := asOther(t, `printf %s "$2" > "$1"`, c.path, string(fake))
		require.Error(t, err, "uid %d rewrote the device cache: %s", otherUID, out)
		devs, err := c.Enumerate(ctxT(t))
		require.NoError(t, err)
		require.Equal(t, "GPU-a", devs[0].Key)
	})
}

// What another user may still do in a sticky folder is plant files before
// xres creates them. A planted state (garbage, or a valid one naming a
// holder in another pid namespace, which could not be proven dead until the
// next boot) or device cache is not trusted: the state blocks grants with
// an error naming the file and its owner (failing closed, at once), the
// cache is not used.
func TestPlantedFilesNotTrusted(t *testing.T) {
	needRoot(t)
	self, err := Self()
	require.NoError(t, err)
	foreign := Owner{PID: 4242, Start: 1, Boot: self.Boot, PIDNS: "pid:[1]"}
	valid := encodeState([]Entry{{Resource: "gpu", Key: "GPU-a", Owner: foreign, Since: time.Now().UTC().Truncate(time.Second)}})
	for _, tc := range []struct {
		name    string
		content []byte
	}{
		{"garbage", []byte("garbage\n")},
		{"foreign-namespace holder", valid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := sharedFolder(t, 0o777|os.ModeSticky)
			state := filepath.Join(dir, "coordination.state")
			out, err := asOther(t, `printf %s "$2" > "$1"`, state, string(tc.content))
			require.NoError(t, err, out)
			h := newHost(t, state, liveOwner(t))
			for _, dry := range []bool{true, false} {
				_, err = h.Reserve(ctxT(t), "gpu", []string{"GPU-a"}, 1, dry)
				require.ErrorIs(t, err, ErrCorruptState)
				require.ErrorContains(t, err, state)
				require.ErrorContains(t, err, fmt.Sprintf("owned by uid %d", otherUID))
			}
		})
	}
	t.Run("device cache", func(t *testing.T) {
		dir := sharedFolder(t, 0o777|os.ModeSticky)
		inner := &countingEnum{key: "planted"}
		c := newDeviceCache(inner, filepath.Join(dir, "coordination.state"), nil)
		c.ttl = time.Hour
		fake := appendDeviceCache(nil, deviceCacheFile{Boot: c.boot, Time: time.Now(), Devices: []driver.Device{{Key: "GPU-planted"}}})
		out, err := asOther(t, `printf %s "$2" > "$1"`, c.path, string(fake))
		require.NoError(t, err, out)
		devs, err := c.Enumerate(ctxT(t))
		require.NoError(t, err)
		require.Equal(t, "GPU-a", devs[0].Key, "the planted listing was used")
		require.EqualValues(t, 1, inner.calls.Load())
	})
}

// Denial of service by another user is bounded and named: a state file of
// another user's that this one cannot read (chmod 600) fails at once with
// the file and the reason; a lock held with flock for minutes makes the
// launcher give up at its deadline, naming the lock and its holder.
func TestOtherUserDenialOfServiceBoundedAndNamed(t *testing.T) {
	needRoot(t)
	t.Run("unreadable state", func(t *testing.T) {
		dir := sharedFolder(t, 0o777|os.ModeSticky)
		state := filepath.Join(dir, "coordination.state")
		h := newHost(t, state, liveOwner(t))
		_, err := h.Reserve(ctxT(t), "gpu", []string{"GPU-a"}, 1, false)
		require.NoError(t, err)
		require.NoError(t, os.Chmod(state, 0o600))
		// The other user's launcher: this test binary as the reserve helper.
		bin := filepath.Join(filepath.Dir(dir), "coord.test")
		copyFile(t, os.Args[0], bin, 0o755)
		cmd := exec.Command("setpriv", "--reuid", strconv.Itoa(otherUID), "--regid", strconv.Itoa(otherUID), "--clear-groups", bin, "-test.run=^$")
		cmd.Env = append(os.Environ(), "XRES_COORD_HELPER=reserve", "XRES_COORD_STATE="+state, "XRES_COORD_AMOUNT=1", "XRES_COORD_CANDIDATES=GPU-a,GPU-b")
		cmd.Stdin = strings.NewReader("")
		out, err := cmd.Output()
		require.NoError(t, err)
		require.True(t, strings.HasPrefix(string(out), "ERR "), "the other user was granted a device: %s", out)
		require.Contains(t, string(out), state)
		require.Contains(t, string(out), "permission denied")
	})
	t.Run("lock held", func(t *testing.T) {
		dir := sharedFolder(t, 0o777|os.ModeSticky)
		state := filepath.Join(dir, "coordination.state")
		h := newHost(t, state, liveOwner(t))
		require.NoError(t, h.Check(ctxT(t))) // creates the lock file (0644)
		for _, lock := range []string{state + ".lock", dir} {
			cmd := exec.Command("setpriv", "--reuid", strconv.Itoa(otherUID), "--regid", strconv.Itoa(otherUID), "--clear-groups",
				"flock", "-x", lock, "-c", "echo held; exec sleep 600")
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // flock's child holds the lock too
			stdout, err := cmd.StdoutPipe()
			require.NoError(t, err)
			require.NoError(t, cmd.Start())
			line, err := bufio.NewReader(stdout).ReadString('\n')
			require.NoError(t, err)
			require.Equal(t, "held\n", line)
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond) // the launcher's deadline, short here
			_, err = h.Reserve(ctx, "gpu", []string{"GPU-a"}, 1, false)
			cancel()
			require.ErrorIs(t, err, ErrLockTimeout)
			require.ErrorContains(t, err, lock)
			require.ErrorContains(t, err, fmt.Sprintf("uid %d", otherUID), "the holder is named")
			require.NoError(t, syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL))
			_ = cmd.Wait()
			_, err = h.Reserve(ctxT(t), "gpu", []string{"GPU-a"}, 1, false)
			require.NoError(t, err, "free again once the holder ends")
			require.NoError(t, h.Release(ctxT(t), "gpu"))
		}
	})
}

func copyFile(t *testing.T, from, to string, mode os.FileMode) {
	t.Helper()
	in, err := os.Open(from)
	require.NoError(t, err)
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	require.NoError(t, err)
	_, err = io.Copy(out, in)
	require.NoError(t, errors.Join(err, out.Close()))
}

// A state file an earlier xres wrote 0666 is made private to its owner
// when read (an upgraded host keeps working), and not trusted while every
// user may write it.
func TestWorldWritableStateMadePrivate(t *testing.T) {
	state := filepath.Join(t.TempDir(), "coordination.state")
	holder := liveOwner(t)
	writeEntries(t, state, Entry{Resource: "gpu", Key: "GPU-a", Owner: holder, Since: time.Now().UTC().Truncate(time.Second)})
	require.NoError(t, os.Chmod(state, 0o666))
	h := newHost(t, state, liveOwner(t))
	_, err := h.Reserve(ctxT(t), "gpu", []string{"GPU-a"}, 1, false)
	require.ErrorIs(t, err, ErrNoDevicesLeft, "the held GPU stays held")
	fi, err := os.Stat(state)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o644), fi.Mode().Perm())
}

// A coordination folder that is a symbolic link of root's (or this
// user's), e.g. /var/tmp/xres → /data/xres, is used: only links of other
// users are refused.
func TestFolderLinkOfOurs(t *testing.T) {
	real := t.TempDir()
	link := filepath.Join(t.TempDir(), "xres")
	require.NoError(t, os.Symlink(real, link))
	h := newHost(t, filepath.Join(link, "coordination.state"), liveOwner(t))
	_, err := h.Reserve(ctxT(t), "gpu", []string{"GPU-a"}, 1, false)
	require.NoError(t, err)
	require.FileExists(t, filepath.Join(real, "coordination.state"))
	if os.Geteuid() != 0 {
		return
	}
	other := filepath.Join(t.TempDir(), "xres")
	require.NoError(t, os.Symlink(real, other))
	require.NoError(t, os.Lchown(other, otherUID, otherUID))
	h = newHost(t, filepath.Join(other, "coordination.state"), liveOwner(t))
	_, err = h.Reserve(ctxT(t), "gpu", []string{"GPU-b"}, 1, false)
	require.ErrorIs(t, err, ErrUnsafeFolder)
	require.ErrorContains(t, err, fmt.Sprintf("symbolic link owned by uid %d", otherUID))
}

// The README's group folder (install -d -m 2770 -g <group>): launchers of
// two users of the group share one state, and never one device.
func TestGroupFolderShared(t *testing.T) {
	needRoot(t)
	dir := sharedFolder(t, 0o770|os.ModeSetgid)
	require.NoError(t, os.Chown(dir, 0, otherUID))
	state := filepath.Join(dir, "coordination.state")
	h := newHost(t, state, liveOwner(t))
	_, err := h.Reserve(ctxT(t), "gpu", []string{"GPU-a"}, 1, false)
	require.NoError(t, err)
	fi, err := os.Stat(state)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o664), fi.Mode().Perm(), "group-writable in a group folder")

	bin := filepath.Join(filepath.Dir(dir), "coord.test")
	copyFile(t, os.Args[0], bin, 0o755)
	cmd := exec.Command("setpriv", "--reuid", strconv.Itoa(otherUID), "--regid", strconv.Itoa(otherUID), "--clear-groups", bin, "-test.run=^$")
	cmd.Env = append(os.Environ(), "XRES_COORD_HELPER=reserve", "XRES_COORD_STATE="+state, "XRES_COORD_AMOUNT=1", "XRES_COORD_CANDIDATES=GPU-a,GPU-b")
	cmd.Stdin = strings.NewReader("")
	out, err := cmd.Output()
	require.NoError(t, err, "%s", out)
	require.Equal(t, "OK GPU-b\n", string(out), "the group member gets the other GPU")
}
