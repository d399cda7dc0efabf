package coord

import (
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"

	"github.com/sirupsen/logrus"
)

// The pid on this process's lines in Flink's coordination file.
//
// Flink's script judges a line by its pid alone (`ps -p`): a line is held
// while that process runs. A reservation of ours lasts longer than the
// launcher that made it: while any process of the worker's group lives
// (HoldGroup) it stays held, also after the launcher was SIGKILLed (its
// worker then dies of its parent-death signal, but the worker's forked
// helpers live on). A line naming the launcher would free the GPU for
// Flink's script at that moment. So the lines name a holder: a small
// process the launcher starts (/bin/sh running holderScript, in a process
// group of its own, so that signals to the launcher's or the worker's
// group do not reach it), told on its stdin the process group of every
// worker. It lives while the launcher does (its stdin stays open), then,
// once the launcher is gone, while any of those groups has a live process
// (zombies do not count), and then exits within a second. That is the
// time xres's own state holds the reservation. The launcher never reaps
// it while its lines stand, so even a holder killed by hand stays a
// zombie that `ps -p` still shows while the launcher lives.
//
// Limits: a process that leaves the worker's group (setsid, setpgid) is
// not counted, as in xres's own state; a holder killed by hand after its
// launcher died frees the GPU for Flink's script while xres's state still
// holds it; the holder, once ended, counts for Flink's ps until its new
// parent (init) reaps it; where /bin/sh cannot be started the lines name
// the launcher, as before (logged).

// holderScript is the holder's program. Until its stdin closes (the
// launcher exited, or let it go) it collects worker process groups, one
// "<pgid> <leader start time>" a line; then, once a second, it looks for
// a live process of one of them as xres's own state does (procFS.members):
// not a zombie, in the group, started no earlier than its leader; and
// exits when there is none. kill -0 first spares the scan of /proc when
// no process at all is left in the groups.
const holderScript = `gs=
while read -r g st; do case $g:$st in *[!0-9:]*|:*|*:) ;; *) gs="$gs $g:$st" ;; esac; done
while :; do
	any=
	for p in $gs; do kill -s 0 -- "-${p%:*}" 2>/dev/null && { any=1; break; }; done
	[ -n "$any" ] || exit 0
	live=
	for f in /proc/[0-9]*/stat; do
		{ read -r s <"$f"; } 2>/dev/null || continue
		set -- ${s##*) }
		case $1 in Z|X) continue ;; esac
		for p in $gs; do
			if [ "$3" = "${p%:*}" ] && [ "${20}" -ge "${p#*:}" ]; then live=1; break 2; fi
		done
	done
	[ -n "$live" ] || exit 0
	sleep 1
done`

// holderName is the holder's $0, what `ps -f` shows after the script.
const holderName = "xres-flink-holder"

// flinkHolder is one running holder.
type flinkHolder struct {
	cmd *exec.Cmd
	in  *os.File // the write end of its stdin
}

// startFlinkHolder starts a holder. Its stdin is a pipe whose write end
// only this process holds (close-on-exec: workers do not inherit it).
func startFlinkHolder() (*flinkHolder, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("start the holder of Flink lines: %w", err)
	}
	cmd := exec.Command("/bin/sh", "-c", holderScript, holderName)
	cmd.Stdin = r
	cmd.Dir = "/"
	// Only PATH (for sleep): the launcher's environment may carry secrets.
	cmd.Env = []string{"PATH=" + os.Getenv("PATH") + string(os.PathListSeparator) + "/usr/bin:/bin"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = cmd.Start()
	_ = r.Close()
	if err != nil {
		_ = w.Close()
		return nil, fmt.Errorf("start the holder of Flink lines: %w", err)
	}
	return &flinkHolder{cmd: cmd, in: w}, nil
}

func (fh *flinkHolder) pid() int { return fh.cmd.Process.Pid }

// tell adds the worker process group g to what the holder waits for.
func (fh *flinkHolder) tell(g Group) error {
	_, err := fmt.Fprintf(fh.in, "%d %d\n", g.PGID, g.Start)
	return err
}

// letGo closes the holder's stdin, as the launcher's exit does: it ends
// once the groups it was told end.
func (fh *flinkHolder) letGo() { _ = fh.in.Close() }

// stop ends the holder now and reaps it.
func (fh *flinkHolder) stop() {
	fh.letGo()
	_ = fh.cmd.Process.Kill()
	_ = fh.cmd.Wait()
}

// holders is this process's holder, shared by every Host of the process:
// refs counts the lines in Flink files that name it plus the reservations
// under way that may write some; at zero it is stopped.
var holders struct {
	mu     sync.Mutex
	h      *flinkHolder
	refs   int
	warned bool
}

// acquireFlinkHolder returns the pid for new lines in Flink's file written
// for owner, with a reference the caller gives back with
// releaseFlinkHolder(pid, 1) (ok true); for an owner that is not this process,
// or where no holder can be started (logged once), it returns owner's pid
// and ok false.
func acquireFlinkHolder(owner Owner, log logrus.FieldLogger) (pid int, ok bool) {
	if me, err := Self(); err != nil || !owner.same(me) {
		return owner.PID, false
	}
	holders.mu.Lock()
	defer holders.mu.Unlock()
	if holders.h == nil {
		fh, err := startFlinkHolder()
		if err != nil {
			if !holders.warned {
				holders.warned = true
				log.WithError(err).Warn("Flink's coordination file names the launcher instead: should the launcher be killed while its worker's helpers run, Flink's script may grant their GPUs again")
			}
			return owner.PID, false
		}
		holders.h = fh
	}
	holders.refs++
	return holders.h.pid(), true
}

// holdFlinkLines counts n more lines naming the holder pid.
func holdFlinkLines(pid, n int) {
	holders.mu.Lock()
	defer holders.mu.Unlock()
	if holders.h != nil && holders.h.pid() == pid {
		holders.refs += n
	}
}

// releaseFlinkHolder gives back n references to the holder pid (lines
// removed, or a reservation done); the last stops it.
func releaseFlinkHolder(pid, n int) {
	holders.mu.Lock()
	defer holders.mu.Unlock()
	if holders.h == nil || holders.h.pid() != pid || n <= 0 {
		return
	}
	holders.refs -= n
	if holders.refs <= 0 {
		holders.h.stop()
		holders.h, holders.refs = nil, 0
	}
}

// tellFlinkHolder tells this process's holder, if one runs, that the
// worker process group g holds its reservations too.
func tellFlinkHolder(g Group) error {
	holders.mu.Lock()
	defer holders.mu.Unlock()
	if holders.h == nil {
		return nil
	}
	if err := holders.h.tell(g); err != nil {
		return fmt.Errorf("tell the holder of Flink lines (pid %d) about process group %d: %w", holders.h.pid(), g.PGID, err)
	}
	return nil
}

// FlinkHolder is the pid this process's lines in Flink's coordination
// file name while it has some (0 when none): a holder process that lives
// as long as the reservations (see above).
func FlinkHolder() int {
	holders.mu.Lock()
	defer holders.mu.Unlock()
	if holders.h == nil {
		return 0
	}
	return holders.h.pid()
}
