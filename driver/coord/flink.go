package coord

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
)

// Flink's GPU coordination file, for hosts where launchers running Flink's
// discovery script (script mode) and built-in launchers share GPUs. Flink's
// script keeps one "<index> <owner pid>" line per GPU it handed out and
// flocks the file itself while it chooses. A Host with a Flink file honours
// those lines (a GPU whose line names a running pid is held) and writes its
// own grants there too, as lines of the same format, so that Flink's script
// sees them; its release removes exactly its lines. The pid on its lines is
// a holder process that lives as long as the reservation, worker's helpers
// included (flinkholder.go), not the launcher. Its own state never goes
// into that file: the two formats live in two files.

// FlinkLine is one line of Flink's coordination file: GPU Index was handed
// to PID (the process that ran Flink's script).
type FlinkLine struct {
	Index string
	PID   int
}

// flinkFile is Flink's coordination file, open and flocked (or, for a dry
// run, only read).
type flinkFile struct {
	path  string
	f     *os.File // nil when only read
	lines []FlinkLine
}

// openFlink locks Flink's file as Flink's script does (an exclusive flock on
// the file itself, created when missing) and reads it.
func (h *Host) openFlink(ctx context.Context) (*flinkFile, error) {
	f, err := h.lockPath(ctx, "Flink coordination file", h.flink, os.O_RDWR|os.O_CREATE)
	if err != nil {
		return nil, err
	}
	b, err := readAllBounded(f, maxFlinkSize)
	if err != nil {
		unlock(f)
		return nil, fmt.Errorf("read Flink coordination file %s: %w", h.flink, err)
	}
	lines, err := ParseFlinkFile(h.flink, b)
	if err != nil {
		unlock(f)
		return nil, err
	}
	return &flinkFile{path: h.flink, f: f, lines: lines}, nil
}

// readFlink reads Flink's file without its lock (dry runs hold nothing).
func (h *Host) readFlink() (*flinkFile, error) {
	lines, err := ReadFlinkFile(h.flink)
	if err != nil {
		return nil, err
	}
	return &flinkFile{path: h.flink, lines: lines}, nil
}

// ReadFlinkFile reads Flink's coordination file at path without its lock,
// as ParseFlinkFile parses it; a file that does not exist holds nothing.
// Like every host state file it is opened without following a symbolic
// link, and only a regular file is read.
func ReadFlinkFile(path string) ([]FlinkLine, error) {
	f, err := openRegular("Flink coordination file", path, os.O_RDONLY, 0)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		if errors.Is(err, ErrUnsafeFile) {
			return nil, err
		}
		return nil, fmt.Errorf("read Flink coordination file %s: %w", path, err)
	}
	defer f.Close()
	b, err := readAllBounded(f, maxFlinkSize)
	if err != nil {
		return nil, fmt.Errorf("read Flink coordination file %s: %w", path, err)
	}
	return ParseFlinkFile(path, b)
}

// maxFlinkSize bounds what is read of Flink's file (a line per GPU).
const maxFlinkSize = 1 << 20

func (ff *flinkFile) close() {
	if ff != nil && ff.f != nil {
		unlock(ff.f)
	}
}

// ParseFlinkFile reads the "<index> <pid>" lines of Flink's coordination
// file path; anything else is an error wrapping ErrCorruptState and naming
// the file and line (an xres state file there was written by an earlier
// xres in built-in mode), never quoting it (the file may be anybody's: a
// typo, a link planted to a secret), and such a file is never written.
func ParseFlinkFile(path string, b []byte) ([]FlinkLine, error) {
	if bytes.HasPrefix(b, []byte(stateMagic)) {
		return nil, fmt.Errorf("%w: %s is an xres state file, not Flink's coordination file (written by an earlier xres that kept its state in Flink's --coordination-file): "+
			"stop the workers on this host, then remove it", ErrCorruptState, path)
	}
	var out []FlinkLine
	for n, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		pid, err := 0, error(nil)
		if len(f) == 2 {
			pid, err = strconv.Atoi(f[1])
		}
		if len(f) != 2 || err != nil || pid <= 0 || !decimal(f[0]) {
			return nil, fmt.Errorf("%w: %s:%d is not a line of Flink's coordination file (want \"<index> <pid>\", got %d fields): "+
				"xres never writes over a file that is not Flink's; if --coordination-file names another file by mistake, fix it, "+
				"else stop the workers on this host and remove the file", ErrCorruptState, path, n+1, len(f))
		}
		out = append(out, FlinkLine{Index: f[0], PID: pid})
	}
	return out, nil
}

// decimal says whether s is a GPU index as Flink's script writes it.
func decimal(s string) bool {
	if s == "" || len(s) > 9 {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// held maps the indices of live lines to their pids. A line is live while
// its pid runs, as Flink's script judges (a zombie still shows in ps).
func (ff *flinkFile) held(p procFS) map[string]int {
	if ff == nil {
		return nil
	}
	out := map[string]int{}
	for _, l := range ff.lines {
		if _, err := os.Stat(fmt.Sprintf("%s/%d", p.root, l.PID)); err == nil {
			out[l.Index] = l.PID
		}
	}
	return out
}

// rewrite replaces the file's content in place (the inode, and so
// everybody's flock, stays): it drops the lines drop says to (nil: none)
// and the lines of the indices in add (a dead owner's, or the index would
// not have been chosen), then appends add for pid. It returns how many
// lines it dropped for each pid.
func (ff *flinkFile) rewrite(add []string, pid int, drop func(FlinkLine) bool) (map[int]int, error) {
	var b strings.Builder
	dropped := map[int]int{}
	for _, l := range ff.lines {
		if drop != nil && drop(l) || slices.Contains(add, l.Index) {
			dropped[l.PID]++
			continue
		}
		fmt.Fprintf(&b, "%s %d\n", l.Index, l.PID)
	}
	for _, idx := range add {
		fmt.Fprintf(&b, "%s %d\n", idx, pid)
	}
	if err := ff.f.Truncate(0); err != nil {
		return nil, fmt.Errorf("write Flink coordination file %s: %w", ff.path, err)
	}
	if _, err := ff.f.WriteAt([]byte(b.String()), 0); err != nil {
		return nil, fmt.Errorf("write Flink coordination file %s: %w", ff.path, err)
	}
	return dropped, nil
}
