// Package coord reserves devices host-wide so that workers sharing a host
// (YARN containers without GPU isolation, standalone TaskManagers) never get
// the same device: one state file per host, in a coordination folder.
//
// Mutual exclusion is an flock on the coordination folder itself, not on a
// file in it: any file in the folder may be deleted or replaced at any
// moment (a tmp cleaner, an operator tidying up) and two writers still
// never hold the lock at once, because a deleted or replaced lock file
// gives a waiter a new inode to lock while the holder still holds the old
// one, whereas the folder stays the same inode while it holds the state
// file. A waiter that locked a folder that was then replaced locks the new
// one. Inside the folder's lock the lock file (<state>.lock) is flock'ed
// too, which keeps excluding launchers of earlier versions (they lock only
// that file). Removing the state file (or the whole folder) is an operator
// reset: running holders keep their devices and their workers, but the
// host no longer knows about them, so their devices can be granted again
// until they end; their releases then find nothing of theirs.
//
// The state file is rewritten while the lock is held, whole or not at all
// whatever happens to the writer: while it fits in a page, in place with
// one write at offset 0, padded so that it never shrinks (a few
// microseconds; readers without the lock check the checksum and read again
// under the lock); past a page, written unnamed (O_TMPFILE where the
// system has it, so a cleaner cannot remove it half-written), named and
// renamed over the state file; a temp file removed before its rename is
// written again. It is not fsync'ed: entries
// carry the boot id, so no holder outlives a crash, and a file torn by one
// (last written before the current boot) is read as empty instead of
// blocking the host. Each entry names the resource, the device
// key and the holder: pid, process start time, boot id and pid namespace.
// Device keys are host-wide (a GPU UUID, a PCI address): a device held under
// one resource name is held for every other name too, so two jobs that call
// the same GPUs "gpu" and "gpus" still never share one.
// A partition of a device (a MIG instance of a GPU) is recorded with its
// parent's key: while a partition is held its whole device is not free, and
// while the whole device is held none of its partitions is; two partitions
// of one device never conflict. So one resource handing out whole GPUs and
// another handing out MIG instances can share a host.
// A device is free when no entry holds it or its holder is proven dead (a
// pid that is gone, reused with another start time, a zombie, or recorded
// before the last reboot). A holder that cannot be proven dead (another pid
// namespace, hidden by /proc) keeps its device.
//
// A state file that is not a complete file of ours (truncated, garbage, a
// Flink coordination file) is never read as "nothing is held": every
// reservation and release fails with ErrCorruptState, naming the file and
// how to fix it, until an operator removes it.
//
// The host state may be shared with other Unix users (safefile.go): no
// path is followed through a symbolic link, only regular files are used, a
// file that is not ours is never written over, the folder must be safe,
// and in a folder every user may write only files of root's or ours are
// trusted.
package coord

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/xres/xres/conf/localfile"
	"github.com/xres/xres/driver"
	"github.com/xres/xres/resources/params"
)

// DefaultStateFile is the host's state file when none is configured.
const DefaultStateFile = params.DefaultStateFile

// DefaultLockTimeout bounds the wait for the lock when the context has no
// deadline.
const DefaultLockTimeout = 30 * time.Second

// Sentinel errors.
var (
	// ErrNoDevicesLeft: every candidate beyond those granted is held by a
	// live process. It matches driver.ErrNotEnoughDevices too.
	ErrNoDevicesLeft = fmt.Errorf("%w: no free devices left on the host", driver.ErrNotEnoughDevices)
	// ErrCorruptState: the state file cannot be trusted; nothing is granted.
	ErrCorruptState = errors.New("coordination state file is corrupt")
	// ErrLockTimeout: the lock was not acquired before the deadline.
	ErrLockTimeout = errors.New("timed out waiting for the coordination lock")
	// ErrSameFile: the state file and Flink's coordination file are one.
	ErrSameFile = errors.New("state file and Flink coordination file are the same")
)

// Options configures a Host.
type Options struct {
	// StateFile is the state file path; the lock is StateFile + ".lock".
	// Empty means DefaultStateFile.
	StateFile string
	// Owner is the process reservations are recorded for. The zero value
	// means the calling process (Self).
	Owner Owner
	// LockTimeout bounds the wait for the lock when the context has no
	// deadline; 0 means DefaultLockTimeout.
	LockTimeout time.Duration
	// FlinkFile, when set, is Flink's GPU coordination file on this host:
	// GPUs it records for running pids are held, and grants are written
	// there too, in Flink's format (see flink.go). It must not be StateFile.
	FlinkFile string
	Log       logrus.FieldLogger
}

// OpenState opens the host coordination state in stateFile (its lock
// beside it) for the calling process: the one way the launcher records a
// worker's process group, check tests the state and probe lists its
// holders. Drivers open it through Settings.Reserver, which also honours
// Flink's file.
func OpenState(stateFile string, log logrus.FieldLogger) (*Host, error) {
	return New(Options{StateFile: stateFile, Log: log})
}

// Host is the host-wide reservation table. It implements
// driver.PartitionReserver (and so driver.Reserver).
type Host struct {
	state   string
	lock    string
	flink   string
	owner   Owner
	timeout time.Duration
	proc    procFS
	log     logrus.FieldLogger
	now     func() time.Time
	// seenQ: the quarantines of the last read that found a state file
	// (nil: none read yet), for SyncHealth (quarantine.go).
	seenQ atomic.Pointer[[]Entry]
}

var _ driver.PartitionReserver = (*Host)(nil)

// New returns the Host for opts. It does no file I/O; a missing or
// unwritable directory is reported by the first Reserve or by Check.
func New(opts Options) (*Host, error) {
	h := &Host{
		state:   opts.StateFile,
		owner:   opts.Owner,
		timeout: opts.LockTimeout,
		proc:    defaultProc,
		log:     driver.LoggerOrDiscard(opts.Log),
		now:     time.Now,
	}
	if h.state == "" {
		h.state = DefaultStateFile
	}
	if !filepath.IsAbs(h.state) {
		return nil, fmt.Errorf("coordination file: %w", errRelative(h.state))
	}
	h.state = filepath.Clean(h.state)
	var err error
	h.lock = h.state + ".lock"
	if opts.FlinkFile != "" {
		if h.flink, err = filepath.Abs(opts.FlinkFile); err != nil {
			return nil, fmt.Errorf("Flink coordination file %q: %w", opts.FlinkFile, err)
		}
		if h.flink == h.state {
			return nil, fmt.Errorf("coordination file %s: %w: it is Flink's coordination file too; xres keeps its own state in a file of its own", h.state, ErrSameFile)
		}
	}
	if h.timeout <= 0 {
		h.timeout = DefaultLockTimeout
	}
	if h.owner.PID == 0 {
		self, err := Self()
		if err != nil {
			return nil, fmt.Errorf("coordination needs /proc: %w", err)
		}
		h.owner = self
	}
	return h, nil
}

// StateFile returns the absolute state file path.
func (h *Host) StateFile() string { return h.state }

// Owner returns the process this Host records reservations for.
func (h *Host) Owner() Owner { return h.owner }

// Reserve implements driver.Reserver: ReserveCandidates with candidates
// that are whole devices.
func (h *Host) Reserve(ctx context.Context, resource string, candidates []string, amount int, dryRun bool) ([]string, error) {
	cs := make([]driver.Candidate, len(candidates))
	for i, k := range candidates {
		cs[i] = driver.Candidate{Key: k}
	}
	return h.ReserveCandidates(ctx, resource, cs, amount, dryRun)
}

// ReserveCandidates implements driver.PartitionReserver. Candidates are
// tried in order; among the free ones the first amount are granted. A
// candidate is free when no live holder has its key, nor, for a partition,
// its parent as a whole device, nor, for a whole device, any partition of
// it. In a dry run the state is read without the lock (under it only
// when that read caught a write half done, readUnlocked) and nothing is
// written.
func (h *Host) ReserveCandidates(ctx context.Context, resource string, candidates []driver.Candidate, amount int, dryRun bool) ([]string, error) {
	return h.ReservePlaced(ctx, resource, candidates, amount, dryRun, nil)
}

// ReservePlaced implements driver.PlacingReserver: ReserveCandidates where
// p (nil: the first free) chooses among the free candidates when they are
// all whole devices; partitions (MIG instances) leave no choice of links,
// so the first free are granted.
func (h *Host) ReservePlaced(ctx context.Context, resource string, candidates []driver.Candidate, amount int, dryRun bool, p driver.Placement) ([]string, error) {
	if amount <= 0 {
		return nil, fmt.Errorf("reserve %s: amount must be positive, got %d", resource, amount)
	}
	if dryRun {
		entries, err := h.readUnlocked(ctx)
		if err != nil {
			return nil, fmt.Errorf("reserve %s: %w", resource, err)
		}
		var ff *flinkFile
		if h.flink != "" {
			if ff, err = h.readFlink(); err != nil {
				return nil, fmt.Errorf("reserve %s: %w", resource, err)
			}
		}
		chosen, _, err := h.choose(resource, candidates, amount, entries, ff.held(h.proc), p)
		if err != nil {
			return nil, fmt.Errorf("reserve %s: %w", resource, err)
		}
		return keysOf(chosen), nil
	}
	// The pid Flink's script is to see on our lines: a holder that lives
	// as long as the reservation (flinkholder.go).
	flinkPID := h.owner.PID
	if h.flink != "" {
		var ok bool
		if flinkPID, ok = acquireFlinkHolder(h.owner, h.log); ok {
			defer releaseFlinkHolder(flinkPID, 1)
		}
	}
	var chosen []driver.Candidate
	wrote := false // the state holds this call's grants
	err := h.locked(ctx, func() error {
		entries, err := h.read()
		if err != nil {
			return err
		}
		var ff *flinkFile
		if h.flink != "" {
			if ff, err = h.openFlink(ctx); err != nil {
				return err
			}
			defer ff.close()
		}
		var keep []Entry
		chosen, keep, err = h.choose(resource, candidates, amount, entries, ff.held(h.proc), p)
		if err != nil {
			return err
		}
		now := h.now().UTC().Truncate(time.Second)
		var indices []string
		for _, c := range chosen {
			e := Entry{Resource: resource, Key: c.Key, Parent: c.Parent, Owner: h.owner, Since: now}
			if ff != nil && c.Index != "" && c.Parent == "" {
				e.Index = c.Index
				indices = append(indices, c.Index)
			}
			keep = append(keep, e)
		}
		// Nothing is held before the launcher can let it go (its signal
		// subscription, driver.WithBeforeReserve): waited for here, with
		// the state read and the choice made, the last moment before the
		// write that holds the devices.
		driver.BeforeReserve(ctx)
		if err := h.write(keep); err != nil {
			return err
		}
		wrote = true
		if len(indices) > 0 {
			if _, err := ff.rewrite(indices, flinkPID, nil); err != nil {
				return err
			}
			holdFlinkLines(flinkPID, len(indices))
		}
		return nil
	})
	if err != nil && !wrote {
		return nil, driver.NothingReserved(fmt.Errorf("reserve %s: %w", resource, err))
	}
	if err != nil {
		return nil, fmt.Errorf("reserve %s: %w", resource, err)
	}
	keys := keysOf(chosen)
	h.log.WithFields(logrus.Fields{"resource": resource, "devices": strings.Join(keys, ","), "state_file": h.state}).Debug("devices reserved")
	return keys, nil
}

func keysOf(cs []driver.Candidate) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Key
	}
	return out
}

// table indexes the live entries (and the candidates granted so far in this
// call) by key and by parent. Keys are host-wide, whatever resource name
// holds them.
type table struct {
	byKey map[string]Entry
	parts map[string][]Entry // partition entries by their parent's key
}

func newTable() *table {
	return &table{byKey: map[string]Entry{}, parts: map[string][]Entry{}}
}

func (t *table) add(e Entry) {
	// A quarantine names the device before its holder does (the reason a
	// request is refused that matters most).
	if old, ok := t.byKey[e.Key]; !ok || e.Quarantine != nil && old.Quarantine == nil {
		t.byKey[e.Key] = e
	}
	if e.Parent != "" {
		t.parts[e.Parent] = append(t.parts[e.Parent], e)
	}
}

// conflict says why c is not free: the entry holding its key, else (for a
// partition) the entry holding its parent whole, else (for a whole device)
// the entries holding partitions of it. All nil: c is free.
func (t *table) conflict(c driver.Candidate) (self, parent *Entry, parts []Entry) {
	if e, ok := t.byKey[c.Key]; ok {
		return &e, nil, nil
	}
	if c.Parent != "" {
		if e, ok := t.byKey[c.Parent]; ok && e.Parent == "" {
			return nil, &e, nil
		}
		return nil, nil, nil
	}
	return nil, nil, t.parts[c.Key]
}

// choose picks amount free candidates. It returns them and the entries
// worth keeping (all but those of proven-dead holders).
// flinkHeld maps the indices Flink's coordination file holds for running
// pids to those pids (nil without a Flink file).
// A Placement p (nil: none) chooses among all the free candidates when
// none is a partition.
func (h *Host) choose(resource string, candidates []driver.Candidate, amount int, entries []Entry, flinkHeld map[string]int, p driver.Placement) ([]driver.Candidate, []Entry, error) {
	if p != nil {
		for _, c := range candidates {
			if c.Parent != "" {
				p = nil
				break
			}
		}
	}
	keep := entries[:0:0]
	held := newTable()
	for _, e := range entries {
		if l, _ := h.proc.holding(e, h.owner); l == dead {
			h.log.WithFields(logrus.Fields{"resource": e.Resource, "device": e.Key, "holder_pid": e.PID}).Debug("reclaiming device of a dead holder")
			continue
		}
		keep = append(keep, e)
		held.add(e)
	}
	// What this call grants counts as held for the later candidates: a
	// whole device and a partition of it are never granted together.
	taken := newTable()
	var chosen []driver.Candidate
	seen := map[string]bool{}
	for _, c := range candidates {
		if len(chosen) == amount && p == nil {
			break
		}
		if seen[c.Key] {
			continue
		}
		seen[c.Key] = true
		if _, byFlink := flinkHeld[c.Index]; byFlink && c.Index != "" && !h.ownsIndex(keep, c.Index) {
			continue
		}
		if free(held, c) && free(taken, c) {
			chosen = append(chosen, c)
			taken.add(Entry{Resource: resource, Key: c.Key, Parent: c.Parent})
		}
	}
	if len(chosen) < amount {
		return nil, nil, h.noneLeft(candidates, amount, len(chosen), held, flinkHeld)
	}
	if p != nil && len(chosen) > amount {
		chosen = placed(p, chosen, amount)
	}
	return chosen, keep, nil
}

// ownsIndex says whether one of the live entries, recorded in Flink's file
// by this Host, is the Flink line for index: such a line is a grant of ours
// that the state file knows, so the state decides.
func (h *Host) ownsIndex(entries []Entry, index string) bool {
	for _, e := range entries {
		if e.Index == index {
			return true
		}
	}
	return false
}

func free(t *table, c driver.Candidate) bool {
	self, parent, parts := t.conflict(c)
	return self == nil && parent == nil && len(parts) == 0
}

// noneLeft names, for every candidate held, who holds it: its own key's
// holder, the holder of its parent (once per parent, with the partitions it
// blocks), or the holders of its partitions.
func (h *Host) noneLeft(candidates []driver.Candidate, amount, nFree int, held *table, flinkHeld map[string]int) error {
	var parts []string
	done := map[string]bool{}
	blocked := 0
	type parentBlock struct {
		at     int // index in parts
		holder Entry
		keys   []string
	}
	byParent := map[string]*parentBlock{}
	var parentOrder []string
	quarantined := false // a candidate is blocked by a quarantine
	for _, c := range candidates {
		if done[c.Key] {
			continue
		}
		self, parent, ps := held.conflict(c)
		if pid, ok := flinkHeld[c.Index]; ok && c.Index != "" && self == nil && parent == nil && len(ps) == 0 {
			done[c.Key] = true
			blocked++
			parts = append(parts, fmt.Sprintf("%s (index %s) held by pid %d per Flink's coordination file %s", c.Key, c.Index, pid, h.flink))
			continue
		}
		if self == nil && parent == nil && len(ps) == 0 {
			continue // free, or only in conflict with another candidate
		}
		done[c.Key] = true
		blocked++
		if self != nil && self.Quarantine != nil || parent != nil && parent.Quarantine != nil {
			quarantined = true
		}
		switch {
		case self != nil:
			parts = append(parts, fmt.Sprintf("%s held by %s", c.Key, h.describe(*self)))
		case parent != nil:
			pb, ok := byParent[c.Parent]
			if !ok {
				pb = &parentBlock{at: len(parts), holder: *parent}
				byParent[c.Parent] = pb
				parentOrder = append(parentOrder, c.Parent)
				parts = append(parts, "")
			}
			pb.keys = append(pb.keys, c.Key)
		default:
			hs := make([]string, len(ps))
			for i, e := range ps {
				hs[i] = fmt.Sprintf("%s held by %s", e.Key, h.describe(e))
			}
			parts = append(parts, fmt.Sprintf("%s is in use through its partitions: %s", c.Key, strings.Join(hs, ", ")))
		}
	}
	for _, p := range parentOrder {
		pb := byParent[p]
		parts[pb.at] = fmt.Sprintf("%s held whole by %s, so its partitions %s are not free",
			p, h.describe(pb.holder), strings.Join(pb.keys, ", "))
	}
	distinct := map[string]bool{}
	for _, c := range candidates {
		distinct[c.Key] = true
	}
	if n := len(distinct) - blocked - nFree; n > 0 {
		parts = append(parts, fmt.Sprintf("%d more overlap devices granted in this request (a device and its partitions count once)", n))
	}
	err := fmt.Errorf("%w: %d requested, %d free of %d (state file %s); %s",
		ErrNoDevicesLeft, amount, nFree, len(distinct), h.state, strings.Join(parts, "; "))
	if quarantined {
		return quarantinedErr{err}
	}
	return err
}

// describe names an entry's holder: "pid 4711 (java) for gpu since …", or
// for a dead owner whose worker's group lives on, those processes.
func (h *Host) describe(e Entry) string {
	if q := e.Quarantine; q != nil {
		return fmt.Sprintf("a quarantine since %s (%s; `container-launcher probe --clear %s` ends it)", e.Since.Format(time.RFC3339), q.Reason, e.Key)
	}
	who := fmt.Sprintf("pid %d", e.PID)
	if _, members := h.proc.holding(e, h.owner); len(members) > 0 {
		ps := make([]string, len(members))
		for i, m := range members {
			ps[i] = strconv.Itoa(m)
			if c := h.proc.program(m); c != "" {
				ps[i] += " (" + c + ")"
			}
		}
		who = fmt.Sprintf("the worker process group %d of dead pid %d, alive: pids %s,", e.Group.PGID, e.PID, strings.Join(ps, ", "))
	} else if e.Owner.same(h.owner) {
		if me, err := Self(); err == nil && !h.owner.same(me) {
			who += " (the caller"
			if c := h.programOf(e.Owner); c != "" {
				who += ", " + c
			}
			who += ", from an earlier call)"
		} else {
			who += " (this process)"
		}
	} else if c := h.programOf(e.Owner); c != "" {
		who += fmt.Sprintf(" (%s)", c)
	}
	return who + " for " + e.Resource + " since " + e.Since.Format(time.RFC3339)
}

// programOf is the holder's program name, or "" when unreadable or when
// the holder was recorded in another pid namespace (its pid names another
// process here).
func (h *Host) programOf(o Owner) string {
	if o.PIDNS != "" && h.owner.PIDNS != "" && o.PIDNS != h.owner.PIDNS {
		return ""
	}
	return h.proc.program(o.PID)
}

// Release implements driver.Reserver: it removes exactly the owner's
// entries for resource (and drops entries of dead holders on the way).
func (h *Host) Release(ctx context.Context, resource string) error {
	return h.release(ctx, func(e Entry) bool { return e.Resource == resource })
}

// ReleaseAll removes every entry of the owner, whatever the resource.
func (h *Host) ReleaseAll(ctx context.Context) error {
	return h.release(ctx, func(Entry) bool { return true })
}

func (h *Host) release(ctx context.Context, match func(Entry) bool) error {
	drop := map[string]bool{} // indices to remove from Flink's file
	err := h.modify(ctx, func(entries []Entry) ([]Entry, bool) {
		keep := entries[:0:0]
		for _, e := range entries {
			if e.Quarantine == nil && e.Owner.same(h.owner) && match(e) {
				if e.Index != "" {
					drop[e.Index] = true
				}
				continue
			}
			if l, _ := h.proc.holding(e, h.owner); l == dead {
				continue
			}
			keep = append(keep, e)
		}
		return keep, len(keep) != len(entries)
	}, func() error {
		if len(drop) == 0 || h.flink == "" {
			return nil
		}
		ff, err := h.openFlink(ctx)
		if err != nil {
			return err
		}
		defer ff.close()
		// Our lines name this process's holder, or (before it, or without
		// one) the owner itself.
		holder := FlinkHolder()
		dropped, err := ff.rewrite(nil, 0, func(l FlinkLine) bool {
			return drop[l.Index] && (l.PID == h.owner.PID || holder != 0 && l.PID == holder)
		})
		if err != nil {
			return err
		}
		releaseFlinkHolder(holder, dropped[holder])
		return nil
	})
	if err != nil {
		return fmt.Errorf("release: %w", err)
	}
	return nil
}

// HoldGroup records that the owner's reservations are held by the worker
// process group g too: while a process of g lives, a reclaiming launcher
// treats them as held even when the owner is dead, and so does Flink's
// script, through the holder its lines in Flink's file name.
func (h *Host) HoldGroup(ctx context.Context, g Group) error {
	// Our lines in Flink's file stay live as long, through their holder.
	var tellErr error
	if me, err := Self(); err == nil && h.owner.same(me) {
		tellErr = tellFlinkHolder(g)
	}
	err := h.modify(ctx, func(entries []Entry) ([]Entry, bool) {
		changed := false
		for i := range entries {
			if entries[i].Quarantine == nil && entries[i].Owner.same(h.owner) {
				gg := g
				entries[i].Group = &gg
				changed = true
			}
		}
		return entries, changed
	}, nil)
	if err = errors.Join(err, tellErr); err != nil {
		return fmt.Errorf("record worker process group %d: %w", g.PGID, err)
	}
	return nil
}

// modify runs fn on the recorded entries under the lock, writes what it
// returns when it says they changed, then runs after (nil: nothing), still
// under the lock. Where no state file exists nothing was ever recorded on
// this host: it does nothing.
func (h *Host) modify(ctx context.Context, fn func([]Entry) ([]Entry, bool), after func() error) error {
	if _, err := os.Stat(h.state); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return h.locked(ctx, func() error {
		entries, err := h.read()
		if err != nil {
			return err
		}
		keep, changed := fn(entries)
		if !changed {
			return nil
		}
		if err := h.write(keep); err != nil {
			return err
		}
		if after != nil {
			return after()
		}
		return nil
	})
}

// Holder is one recorded reservation with its holder's current state.
type Holder struct {
	Entry
	Alive   bool   // false only when the holder is proven dead
	Program string // the holder's program name (no arguments), when readable
	// Members are the live processes of the worker's group that hold the
	// device after its owner died; nil while the owner lives.
	Members []int
}

// Holders lists the recorded reservations, sorted by resource and key,
// without taking the lock.
func (h *Host) Holders() ([]Holder, error) {
	entries, err := h.readUnlocked(context.Background())
	if err != nil {
		return nil, err
	}
	out := make([]Holder, 0, len(entries))
	for _, e := range entries {
		l, members := h.proc.holding(e, h.owner)
		hd := Holder{Entry: e, Alive: l != dead, Members: members}
		if hd.Alive {
			hd.Program = h.programOf(e.Owner)
		}
		out = append(out, hd)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Resource != out[j].Resource {
			return out[i].Resource < out[j].Resource
		}
		return out[i].Key < out[j].Key
	})
	return out, nil
}

// Check verifies that the coordination directory exists (creating it) and
// that the lock can be taken, for configuration checks.
func (h *Host) Check(ctx context.Context) error {
	return h.locked(ctx, func() error {
		_, err := h.read()
		return err
	})
}

// read loads the state file; a missing file is an empty table. The file
// is opened without following a symbolic link, must be a regular file, and,
// in a folder every user may write, owned by root or by this user
// (trustedOwner); anything else blocks every grant with an error naming the
// file (a state that cannot be trusted fails closed).
func (h *Host) read() ([]Entry, error) {
	folder, err := checkFolder(filepath.Dir(h.state))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	f, err := openRegular("coordination state", h.state, os.O_RDONLY, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		if errors.Is(err, ErrUnsafeFile) {
			return nil, fmt.Errorf("%w: %w; nothing is granted while it is there", ErrCorruptState, err)
		}
		return nil, fmt.Errorf("read coordination state %s: %w (nothing is granted while it cannot be read: make it readable by every user that runs workers, or remove it once no worker on this host holds a device)", h.state, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("read coordination state %s: %w", h.state, err)
	}
	if fi.Mode().Perm()&0o002 != 0 {
		// Written 0666 by xres before issue 41: made private to its owner
		// (and group in a group folder) where we may, else refused below.
		if uid, ok := ownerOf(fi); ok && (uid == os.Geteuid() || os.Geteuid() == 0) && f.Chmod(filePerm(filepath.Dir(h.state))) == nil {
			h.log.WithField("state_file", h.state).Info("coordination state file was writable by every user; made 0644")
			if fi, err = f.Stat(); err != nil {
				return nil, fmt.Errorf("read coordination state %s: %w", h.state, err)
			}
		}
	}
	if err := trustedOwner("coordination state", h.state, fi, folder); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCorruptState, err)
	}
	b, err := readAllBounded(f, maxStateSize)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v; nothing is granted while it is unreadable", ErrCorruptState, h.state, err)
	}
	entries, err := decodeState(b)
	if err != nil && looksOurs(b) && h.writtenBeforeBoot(fi) {
		// Torn by a crash (the file is not fsync'ed): every holder it could
		// name died with the last boot. Only a file of ours (or an empty one)
		// is taken for torn: any other file is left alone (an old
		// configuration file named by a typo is never written over).
		h.log.WithError(err).WithField("state_file", h.state).Warn("coordination state file from before the last boot is unreadable; starting empty")
		return nil, nil
	}
	if err != nil && !looksOurs(b) {
		return nil, fmt.Errorf("%w: %s is not an xres state file (%v); xres never writes over a file it did not write, and nothing is granted while it is there: "+
			"if coordination.file names another file by mistake, fix coordination.file; if it is a damaged xres state file, "+
			"stop the workers on this host (or make sure none holds a device), then remove the file", ErrCorruptState, h.state, err)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v; nothing is granted while it is unreadable: "+
			"stop the workers on this host (or make sure none holds a device), then remove the file", ErrCorruptState, h.state, err)
	}
	h.noteQuarantines(entries) // quarantine.go
	return entries, nil
}

// looksOurs says whether b may be a state file of ours torn by a crash:
// empty, all zero bytes (blocks allocated, never written), or beginning
// with (a prefix of) the xres header.
func looksOurs(b []byte) bool {
	if len(b) == 0 {
		return true
	}
	if len(bytes.Trim(b, "\x00")) == 0 {
		return true
	}
	n := min(len(b), len(stateMagic)+1)
	return string(b[:n]) == (stateMagic + " ")[:n]
}

// readUnlocked loads the state file without the lock (dry runs, Holders).
// Writers rewrite it in place under the lock, so such a read may catch a
// write half done: the checksum tells, and the file is read again under
// the lock before it is called corrupt.
func (h *Host) readUnlocked(ctx context.Context) ([]Entry, error) {
	entries, err := h.read()
	if err == nil || !errors.Is(err, ErrCorruptState) {
		return entries, err
	}
	var again []Entry
	if lerr := h.locked(ctx, func() error {
		var rerr error
		again, rerr = h.read()
		return rerr
	}); lerr != nil {
		if errors.Is(lerr, ErrCorruptState) {
			return nil, lerr
		}
		return nil, err // the lock is out of reach: the first verdict stands
	}
	return again, nil
}

// writtenBeforeBoot says whether the state file (fi) was last written
// before this boot.
func (h *Host) writtenBeforeBoot(fi os.FileInfo) bool {
	bt, ok := h.proc.bootTime()
	return ok && fi.ModTime().Before(bt)
}

// write replaces the state file's content: in place while the file is
// small (writeInPlace), else atomically through a temp file and a rename;
// no fsync (see writtenBeforeBoot). A temp file removed before its rename
// (a tmp cleaner) is written again, a few times.
func (h *Host) write(entries []Entry) error {
	if h.writeInPlace(entries) {
		return nil
	}
	b := encodeState(entries)
	for try := 1; ; try++ {
		err := h.writeOnce(b)
		if err == nil || !errors.Is(err, errTempGone) || try == 5 {
			return err
		}
	}
}

// inPlaceMax is the largest state file rewritten in place: one page, which
// a single write at offset 0 changes whole or not at all, however the
// writer dies (the kernel checks for a fatal signal only between pages).
const inPlaceMax = 4096

// writeInPlace rewrites the existing state file with one write at offset
// 0, padded never to shrink (encodeStatePadded), so no truncation is
// needed: a writer killed at any point leaves the old file or the new one,
// never a mix. On ext4 this costs a few microseconds where a new file and
// a rename over the old one cost hundreds (the rename also starts
// write-back of the new file, auto_da_alloc). Readers that take the lock
// cannot see the write half done; lock-free readers (dry runs) check the
// checksum and read again under the lock (readUnlocked). It reports false,
// having changed nothing that matters, when the rename path must write
// instead: no file yet, not a plain file (a symlink is replaced, not
// written through), not writable by us, over a page, or replaced or removed
// while written.
func (h *Host) writeInPlace(entries []Entry) bool {
	f, err := localfile.OpenFile(h.state, os.O_WRONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > inPlaceMax {
		return false
	}
	b := encodeStatePadded(entries, int(fi.Size()))
	if len(b) > inPlaceMax {
		return false
	}
	if n, err := f.WriteAt(b, 0); err != nil || n != len(b) {
		return false // the rename path writes it whole
	}
	return sameFile(f, h.state, false)
}

// errTempGone: the temp file vanished before its rename.
var errTempGone = errors.New("temp file removed before its rename")

func (h *Host) writeOnce(b []byte) error {
	dir := filepath.Dir(h.state)
	base := "." + filepath.Base(h.state) + "."
	// Writers hold the lock, so any temp file here is a crashed writer's
	// (only this path makes temp files).
	if stale, _ := filepath.Glob(filepath.Join(dir, base+"*.tmp")); len(stale) > 0 {
		for _, f := range stale {
			_ = os.Remove(f)
		}
	}
	// Written unnamed where the system allows, named just before the
	// rename: a tmp cleaner has next to no time to remove it.
	tmpName := ""
	tmp, err := openUnnamed(dir)
	if err != nil {
		tmp, err = localfile.CreateTemp(dir, base+"*.tmp")
		if err != nil {
			return fmt.Errorf("write coordination state %s: %w", h.state, err)
		}
		tmpName = tmp.Name()
	}
	ok := false
	defer func() {
		if !ok {
			_ = tmp.Close()
			if tmpName != "" {
				_ = os.Remove(tmpName)
			}
		}
	}()
	if _, err := tmp.Write(b); err != nil {
		return fmt.Errorf("write coordination state %s: %w", h.state, err)
	}
	// Readable by every user's launchers; writable by the group only in a
	// group folder (filePerm): never by every user.
	if err := tmp.Chmod(filePerm(dir)); err != nil {
		return fmt.Errorf("write coordination state %s: %w", h.state, err)
	}
	// No fsync: a crash that tears the file also ends every holder in it
	// (they cannot outlive the boot), and read takes a torn file from
	// before the boot for an empty one.
	if tmpName == "" {
		tmpName = filepath.Join(dir, fmt.Sprintf("%s%d.tmp", base, rand.Uint64()))
		if err := nameUnnamed(tmp, tmpName); err != nil {
			tmpName = ""
			return fmt.Errorf("write coordination state %s: %w", h.state, err)
		}
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write coordination state %s: %w", h.state, err)
	}
	// Replace only a file of ours: read (under the lock) found the state
	// file missing or ours, but a non-regular file (a device, a FIFO) or a
	// folder put there since is never replaced.
	if li, err := os.Lstat(h.state); err == nil && !li.Mode().IsRegular() && li.Mode()&os.ModeSymlink == 0 {
		return fmt.Errorf("%w: coordination state %s is not a regular file (%s): xres never replaces one", ErrUnsafeFile, h.state, localfile.DescribeMode(li.Mode()))
	}
	if err := os.Rename(tmpName, h.state); err != nil {
		if _, statErr := os.Lstat(tmpName); errors.Is(err, os.ErrNotExist) && errors.Is(statErr, os.ErrNotExist) {
			err = fmt.Errorf("%w: %w", errTempGone, err)
		}
		if errors.Is(err, os.ErrPermission) {
			err = fmt.Errorf("%w (the state file belongs to another user, or the folder is sticky: containers of several Unix users share a host's coordination through a group folder, install -d -m 2770 -g <group>, or YARN's GPU isolation)", err)
		}
		return fmt.Errorf("write coordination state %s: %w", h.state, err)
	}
	ok = true
	// The directory is not fsync'ed: losing the rename in a crash only
	// brings back the previous complete file, whose holders the reboot has
	// made dead (boot id).
	return nil
}

// locked runs fn while holding an exclusive flock on the coordination
// folder itself, and, inside it, on the lock file as launchers of earlier
// versions do. The folder's lock is what excludes: files in the folder may
// be deleted or replaced at any moment (a tmp cleaner, an operator) without
// two holders ever running fn at once, since nobody can replace the folder
// we hold without first emptying it of the state file (an operator reset,
// see the package doc). The lock file keeps excluding launchers of earlier
// versions, which lock only it, as long as it is not removed. Each wait
// polls with a short, jittered back-off until ctx ends (or the configured
// lock timeout when ctx has no deadline).
func (h *Host) locked(ctx context.Context, fn func() error) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, h.timeout)
		defer cancel()
	}
	dir := filepath.Dir(h.lock)
	// The folder is checked first and created only when that fails (then
	// checked again), and its mode gives the lock file's: one stat each
	// fewer per change of the state than MkdirAll and filePerm first, three
	// times a launch.
	folder, err := checkFolder(dir)
	if err != nil {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("create coordination directory %s: %w (make it writable by every user that runs workers, or configure another coordination file)", dir, err)
		}
		if folder, err = checkFolder(dir); err != nil {
			return err
		}
	}
	d, err := h.lockPath(ctx, "coordination folder", dir, os.O_RDONLY|syscall.O_DIRECTORY)
	if err != nil {
		return err
	}
	defer unlock(d)
	// flock needs no write access: workers of other users can share a lock
	// file they cannot write.
	f, err := h.lockPathPerm(ctx, "coordination lock", h.lock, os.O_RDONLY|os.O_CREATE, filePermIn(folder.mode))
	if err != nil {
		return err
	}
	defer unlock(f)
	return fn()
}

// lockPath opens path and flocks it exclusively; when what it locked is no
// longer at path (removed or replaced while we waited), it locks again what
// is there now.
// A lock file is opened without following a symbolic link and must be a
// regular file (a planted link never makes a root launcher create its
// target); the folder (O_DIRECTORY) is checked by checkFolder first.
func (h *Host) lockPath(ctx context.Context, what, path string, flag int) (*os.File, error) {
	return h.lockPathPerm(ctx, what, path, flag, 0)
}

// lockPathPerm is lockPath creating a missing file with perm (0: filePerm
// of its folder).
func (h *Host) lockPathPerm(ctx context.Context, what, path string, flag int, perm fs.FileMode) (*os.File, error) {
	for {
		var f *os.File
		var err error
		if flag&syscall.O_DIRECTORY != 0 {
			f, err = localfile.OpenFile(path, flag, 0)
		} else {
			if perm == 0 {
				perm = filePerm(filepath.Dir(path))
			}
			f, err = openRegular(what, path, flag, perm)
		}
		if errors.Is(err, ErrUnsafeFile) {
			return nil, err
		}
		if err != nil {
			return nil, fmt.Errorf("open %s %s: %w (make the directory writable by every user that runs workers, or configure another coordination file)", what, path, err)
		}
		if err := h.flock(ctx, f); err != nil {
			_ = f.Close()
			return nil, err
		}
		if sameFile(f, path, flag&syscall.O_DIRECTORY != 0) {
			return f, nil
		}
		_ = f.Close()
	}
}

func unlock(f *os.File) {
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	_ = f.Close()
}

func (h *Host) flock(ctx context.Context, f *os.File) error {
	wait := 500 * time.Microsecond
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			return fmt.Errorf("lock %s: %w", f.Name(), err)
		}
		d := wait/2 + rand.N(wait)
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			if who := lockHolders(h.proc, f); who != "" {
				return fmt.Errorf("%w %s (held by %s): %w", ErrLockTimeout, f.Name(), who, ctx.Err())
			}
			return fmt.Errorf("%w %s: %w", ErrLockTimeout, f.Name(), ctx.Err())
		case <-t.C:
		}
		if wait < 20*time.Millisecond {
			wait *= 2
		}
	}
}

// sameFile says whether f is what path names now: for a folder
// (follow), what a symbolic link there points to; for a file, the file
// itself (a link put there since is not f).
func sameFile(f *os.File, path string, follow bool) bool {
	fi, err := f.Stat()
	if err != nil {
		return false
	}
	stat := os.Lstat
	if follow {
		stat = os.Stat
	}
	pi, err := stat(path)
	if err != nil {
		return false
	}
	return os.SameFile(fi, pi)
}

// placed is p's pick of amount among free, checked: amount distinct
// candidates of free, else (a Placement's bug) the first free.
func placed(p driver.Placement, free []driver.Candidate, amount int) []driver.Candidate {
	got := p.Pick(append([]driver.Candidate(nil), free...), amount)
	ok := len(got) == amount
	in := make(map[string]bool, len(free))
	for _, c := range free {
		in[c.Key] = true
	}
	for _, c := range got {
		ok = ok && in[c.Key]
		in[c.Key] = false
	}
	if !ok {
		return free[:amount]
	}
	return got
}

// GatesWrite implements driver.WriteGated: ReservePlaced waits for
// driver.BeforeReserve just before it writes.
func (h *Host) GatesWrite() {}
