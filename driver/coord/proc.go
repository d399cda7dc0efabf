package coord

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/xres/xres/conf/localfile"
)

// Owner identifies a process host-wide, robustly against pid reuse: the pid
// plus the process start time (field 22 of /proc/<pid>/stat, clock ticks
// after boot), the boot id and the pid namespace it was recorded in.
type Owner struct {
	PID   int    `json:"pid"`
	Start uint64 `json:"start"`
	Boot  string `json:"boot,omitempty"`
	PIDNS string `json:"pidns,omitempty"`
}

// String renders the owner for messages, e.g. "pid 4711 (start 8812345)".
func (o Owner) String() string {
	return fmt.Sprintf("pid %d (start %d)", o.PID, o.Start)
}

// same reports whether o and p are the same process.
func (o Owner) same(p Owner) bool {
	return o.PID == p.PID && o.Start == p.Start && o.Boot == p.Boot
}

// procFS reads process facts from a /proc tree; root is "/proc" outside tests.
type procFS struct{ root string }

var defaultProc = procFS{root: "/proc"}

// Self returns the Owner that describes the calling process (read once:
// a process keeps its pid, start time, boot and pid namespace).
func Self() (Owner, error) { return self() }

var self = sync.OnceValues(func() (Owner, error) { return defaultProc.owner(os.Getpid()) })

// ProcessOwner returns the Owner of a running process.
func ProcessOwner(pid int) (Owner, error) { return defaultProc.owner(pid) }

func (p procFS) owner(pid int) (Owner, error) {
	st, err := p.stat(pid)
	if err != nil {
		return Owner{}, fmt.Errorf("identify process %d: %w", pid, err)
	}
	o := Owner{PID: pid, Start: st.start, Boot: p.bootID()}
	if ns, err := os.Readlink(fmt.Sprintf("%s/%d/ns/pid", p.root, pid)); err == nil {
		o.PIDNS = ns
	}
	return o, nil
}

func (p procFS) bootID() string {
	if p.root == defaultProc.root {
		return hostBootID()
	}
	return readBootID(p.root)
}

// hostBootID is this boot's id, read once.
var hostBootID = sync.OnceValue(func() string { return readBootID(defaultProc.root) })

func readBootID(root string) string {
	b, err := localfile.ReadFile(root + "/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// bootTime is when the system booted (btime in /proc/stat).
func (p procFS) bootTime() (time.Time, bool) {
	b, err := localfile.ReadFile(p.root + "/stat")
	if err != nil {
		return time.Time{}, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "btime "); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return time.Unix(n, 0), err == nil
		}
	}
	return time.Time{}, false
}

type procStat struct {
	state byte
	ppid  int
	pgrp  int
	start uint64
}

// stat reads /proc/<pid>/stat.
func (p procFS) stat(pid int) (procStat, error) {
	b, err := localfile.ReadFile(fmt.Sprintf("%s/%d/stat", p.root, pid))
	if err != nil {
		return procStat{}, err
	}
	return parseStat(b)
}

// parseStat extracts the state (field 3) and start time (field 22) from the
// text of /proc/<pid>/stat. The command name (field 2) is in parentheses and
// may itself contain spaces and parentheses, so fields are counted from the
// last ')'.
func parseStat(b []byte) (procStat, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, errors.New("parse /proc stat: no command name")
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state); field 22 is f[19].
	if len(f) < 20 {
		return procStat{}, fmt.Errorf("parse /proc stat: %d fields after the command name, want at least 20", len(f))
	}
	start, err := strconv.ParseUint(f[19], 10, 64)
	if err != nil {
		return procStat{}, fmt.Errorf("parse /proc stat: start time %q: %w", f[19], err)
	}
	if len(f[0]) != 1 {
		return procStat{}, fmt.Errorf("parse /proc stat: state %q", f[0])
	}
	ppid, err := strconv.Atoi(f[1]) // field 4
	if err != nil {
		return procStat{}, fmt.Errorf("parse /proc stat: parent %q: %w", f[1], err)
	}
	pgrp, err := strconv.Atoi(f[2]) // field 5
	if err != nil {
		return procStat{}, fmt.Errorf("parse /proc stat: process group %q: %w", f[2], err)
	}
	return procStat{state: f[0][0], ppid: ppid, pgrp: pgrp, start: start}, nil
}

// liveness is the verdict on a recorded holder.
type liveness int

const (
	dead    liveness = iota // proven gone: the device may be reclaimed
	alive                   // running with the same start time
	unknown                 // cannot be proven dead: treated as holding
)

// check decides whether the recorded owner o still runs, as seen from the
// process self. Only proof of death frees a device: a different boot, a pid
// that no longer exists, the same pid with another start time (reused), or
// a zombie. A holder in another pid namespace, or one /proc hides from us
// while kill(pid, 0) still finds it, cannot be proven dead.
func (p procFS) check(o, self Owner) liveness {
	if o.Boot != "" && self.Boot != "" && o.Boot != self.Boot {
		return dead // recorded before the last reboot
	}
	if o.PID <= 0 || o.PID > pidMaxLimit {
		return dead // no kernel has such a pid, in any namespace
	}
	if o.PIDNS != "" && self.PIDNS != "" && o.PIDNS != self.PIDNS {
		return unknown
	}
	if o.PID > p.pidMax() {
		return dead // above this kernel's pid_max: never a process
	}
	st, err := p.stat(o.PID)
	switch {
	case err == nil:
		if st.start != o.Start || st.state == 'Z' || st.state == 'X' {
			return dead
		}
		return alive
	case errors.Is(err, os.ErrNotExist):
		if p.root != defaultProc.root {
			return dead // a fake /proc tree in tests: absence is proof
		}
		if kerr := syscall.Kill(o.PID, 0); errors.Is(kerr, syscall.ESRCH) {
			return dead
		}
		return unknown
	default:
		return unknown
	}
}

// pidMaxLimit is the kernel's PID_MAX_LIMIT on 64-bit systems (4M): no pid
// namespace has a pid above it.
const pidMaxLimit = 1 << 22

// pidMax is /proc/sys/kernel/pid_max (pidMaxLimit where unreadable).
func (p procFS) pidMax() int {
	if p.root == defaultProc.root {
		return hostPidMax()
	}
	return readPidMax(p.root)
}

// hostPidMax is this host's pid_max, read once.
var hostPidMax = sync.OnceValue(func() int { return readPidMax(defaultProc.root) })

func readPidMax(root string) int {
	b, err := localfile.ReadFile(root + "/sys/kernel/pid_max")
	if err != nil {
		return pidMaxLimit
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || n <= 0 || n > pidMaxLimit {
		return pidMaxLimit
	}
	return n
}

// program is the holder's program name (argv[0] without its folder), for
// messages naming who holds a device. Never its arguments: they may carry
// secrets.
func (p procFS) program(pid int) string {
	b, err := localfile.ReadFile(fmt.Sprintf("%s/%d/cmdline", p.root, pid))
	if err != nil || len(b) == 0 {
		return ""
	}
	argv0, _, _ := strings.Cut(string(b), "\x00")
	return filepath.Base(argv0)
}

// Group is a worker's process group: its id and its leader's start time
// (the worker's), which tells the group from a later one reusing the id.
type Group struct {
	PGID  int    `json:"pgid"`
	Start uint64 `json:"start"`
}

// GroupOf returns the Group led by the running process pid.
func GroupOf(pid int) (Group, error) {
	st, err := defaultProc.stat(pid)
	if err != nil {
		return Group{}, fmt.Errorf("identify process group of %d: %w", pid, err)
	}
	return Group{PGID: st.pgrp, Start: st.start}, nil
}

// members lists the live processes of g (not zombies): those whose process
// group is g.PGID and that started no earlier than its leader. A leader pid
// that now runs with another start time means the id was reused after the
// group ended (the kernel reuses no pid while a group of that id has a
// member): then none.
func (p procFS) members(g Group) []int {
	if st, err := p.stat(g.PGID); err == nil && st.start != g.Start {
		return nil
	}
	dir, err := localfile.OpenFile(p.root, os.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		return nil
	}
	defer dir.Close()
	names, _ := dir.Readdirnames(-1)
	var out []int
	for _, n := range names {
		pid, err := strconv.Atoi(n)
		if err != nil || pid <= 0 {
			continue
		}
		st, err := p.stat(pid)
		if err != nil || st.pgrp != g.PGID || st.start < g.Start || st.state == 'Z' || st.state == 'X' {
			continue
		}
		out = append(out, pid)
	}
	sort.Ints(out)
	return out
}

// holding decides whether entry e is still held, as seen from self: its
// owner cannot be proven dead, or its worker's group still has a live
// member (returned, for messages).
func (p procFS) holding(e Entry, self Owner) (liveness, []int) {
	if e.Quarantine != nil {
		return alive, nil // held by the quarantine, whoever recorded it
	}
	l := p.check(e.Owner, self)
	if l != dead || e.Group == nil {
		return l, nil
	}
	if e.Boot != "" && self.Boot != "" && e.Boot != self.Boot {
		return dead, nil
	}
	if e.PIDNS != "" && self.PIDNS != "" && e.PIDNS != self.PIDNS {
		return unknown, nil
	}
	if m := p.members(*e.Group); len(m) > 0 {
		return alive, m
	}
	return dead, nil
}

// isWrapper reports whether prog is one of the programs that stand between
// an engine and the script it runs without being the engine: shells (a
// wrapper script) and the commands that exec the next one (env, nice,
// timeout, …). A switch, not a map literal, which the package's
// initialisation would build in every launcher.
func isWrapper(prog string) bool {
	switch prog {
	case "busybox", "env", "nice", "ionice", "nohup", "timeout", "stdbuf", "setsid", "chrt", "taskset", "flock":
		return true
	}
	return isShell(prog)
}

// ErrNoCaller: the caller to reserve for is init (the script was orphaned
// or run by init), which would hold the devices until the next boot.
var ErrNoCaller = errors.New("no caller process to reserve for")

// isShell reports whether prog is one of the wrappers that are shells: one
// is passed over only while it runs a script (interactiveShell).
func isShell(prog string) bool {
	switch prog {
	case "sh", "bash", "dash", "ash", "zsh", "ksh", "mksh":
		return true
	}
	return false
}

// Caller returns the pid of the process that the calling process works
// for: its parent, or the nearest ancestor that is not a shell running a
// script or an exec wrapper (see wrappers), so that a wrapper script in
// between does not become the holder. Init is never a caller, and neither
// is whatever runs an interactive shell (a terminal, sshd, tmux: it would
// hold the devices as long as it runs): a bridge run by hand from a shell
// gets ErrNoCaller, and --holder-pid names the holder instead.
func Caller() (int, error) { return defaultProc.caller(os.Getppid()) }

func (p procFS) caller(pid int) (int, error) {
	for pid > 1 {
		prog := strings.TrimPrefix(p.program(pid), "-") // a login shell's argv[0] is "-bash"
		if !isWrapper(prog) {
			return pid, nil
		}
		if isShell(prog) && p.interactiveShell(pid) {
			return 0, fmt.Errorf("%w: run from an interactive shell (pid %d, %s), whose parent (a terminal, sshd) would hold the devices as long as it runs; "+
				"the bridge is an engine's discovery script: run by hand, pass --holder-pid (e.g. --holder-pid $$ for this shell), or use `container-launcher probe` to see what would be granted", ErrNoCaller, pid, prog)
		}
		st, err := p.stat(pid)
		if err != nil {
			return 0, fmt.Errorf("find the caller: %w", err)
		}
		pid = st.ppid
	}
	return 0, fmt.Errorf("%w: the nearest process above the wrappers is pid 1 (init), which would hold the devices until the next boot", ErrNoCaller)
}

// interactiveShell says whether the shell pid reads its commands from a
// terminal: no -c and no script operand in its arguments, and its stdin a
// terminal (or unreadable: then it is taken for one). `sh script`,
// `sh -c …` and `sh < script` run scripts.
func (p procFS) interactiveShell(pid int) bool {
	b, err := localfile.ReadFile(fmt.Sprintf("%s/%d/cmdline", p.root, pid))
	if err != nil {
		return false
	}
	args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
	if len(args) > 0 {
		args = args[1:]
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return i+1 >= len(args) && p.stdinTTY(pid)
		case a == "-o" || a == "+o" || a == "-O" || a == "+O" || a == "--rcfile" || a == "--init-file":
			i++ // takes a value
		case strings.HasPrefix(a, "--"):
		case strings.HasPrefix(a, "-") || strings.HasPrefix(a, "+"):
			if strings.ContainsRune(a[1:], 'c') {
				return false // -c: a command string
			}
		default:
			return false // a script file
		}
	}
	return p.stdinTTY(pid)
}

// stdinTTY says whether pid's stdin is a terminal (true when unreadable).
func (p procFS) stdinTTY(pid int) bool {
	t, err := os.Readlink(fmt.Sprintf("%s/%d/fd/0", p.root, pid))
	if err != nil {
		return true
	}
	return strings.HasPrefix(t, "/dev/pts/") || strings.HasPrefix(t, "/dev/tty") || t == "/dev/console"
}

// ErrBadHolder: a holder pid the bridge refuses to reserve for.
var ErrBadHolder = errors.New("refused holder")

// CheckHolder refuses to reserve for pid unless it is a running process
// of the caller's own (real) user other than init: devices reserved for
// init (pid 1) would stay held until the next boot, and for another
// user's process as long as that runs, without that user asking.
func CheckHolder(pid int) error { return defaultProc.checkHolder(pid, os.Getuid()) }

func (p procFS) checkHolder(pid, uid int) error {
	if pid <= 1 {
		return fmt.Errorf("%w: pid %d: init (or no process) would hold the devices until the next boot; name the engine process that uses them", ErrBadHolder, pid)
	}
	if pid > p.pidMax() {
		return fmt.Errorf("%w: pid %d is above the kernel's pid_max (%d)", ErrBadHolder, pid, p.pidMax())
	}
	owner, ok := procUID(p, pid)
	if !ok {
		return fmt.Errorf("%w: pid %d is not a running process", ErrBadHolder, pid)
	}
	if owner != uid {
		return fmt.Errorf("%w: pid %d runs as uid %d, not as this user (uid %d): reserve only for a process of your own", ErrBadHolder, pid, owner, uid)
	}
	return nil
}
