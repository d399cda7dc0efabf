package driver

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/sirupsen/logrus"

	"github.com/xres/xres/resources"
)

// Reserver records host-wide which process holds which device of a
// resource. driver/coord's Host implements it.
type Reserver interface {
	// Reserve picks amount keys among candidates (given in preference order)
	// that no live process holds, records them for the calling owner unless
	// dryRun, and returns them. Too few free keys fail with an error that
	// matches ErrNotEnoughDevices and names the holders.
	Reserve(ctx context.Context, resource string, candidates []string, amount int, dryRun bool) ([]string, error)
	// Release frees exactly what the owner holds for resource.
	Release(ctx context.Context, resource string) error
}

// Candidate is a device offered to a PartitionReserver: its key and, for a
// partition (a MIG instance), the key of the physical device it is part of.
type Candidate struct {
	Key    string
	Parent string // "" for a whole device
	Index  string // the device's "index" info, which Flink's coordination file names
}

// PartitionReserver is a Reserver that knows which candidates are
// partitions of a physical device (Device.Parent), so that a whole device
// and a partition of it are never held at once. Coordinated uses it when
// its Reserver implements it; a plain Reserver sees the keys alone and
// treats every key as a device of its own.
type PartitionReserver interface {
	Reserver
	// ReserveCandidates is Reserve with each candidate's parent: a
	// candidate is free only when neither its key nor (for a partition) its
	// parent is held, nor (for a whole device) any partition of it. Too few
	// free candidates fail with an error that matches ErrNotEnoughDevices
	// and names the holders, of the parents and partitions too.
	ReserveCandidates(ctx context.Context, resource string, candidates []Candidate, amount int, dryRun bool) ([]string, error)
}

// Placement chooses which of the free devices an ask gets (issue 45:
// GPUs by their links). Coordinated asks the driver's Placer for one before
// it takes the host's lock (where slow work, such as reading the
// topology, belongs); the reserver calls Pick under the lock with the
// candidates that are free, in preference order.
type Placement interface {
	// Pick returns amount of free (len(free) >= amount). It must not
	// block: it runs under the host's lock.
	Pick(free []Candidate, amount int) []Candidate
	// Describe returns the info keys added to each granted device's infos
	// (the choice and its cost) and logged; nil for none.
	Describe(chosen []string) map[string]string
}

// Placer gives Coordinated the Placement for an ask of amount among
// devices; a nil Placement (and nil error) means the first free ones.
type Placer interface {
	Placement(ctx context.Context, devices []Device, amount int) (Placement, error)
}

// PlacingReserver is a PartitionReserver that lets a Placement choose
// among the free candidates, under its lock.
type PlacingReserver interface {
	PartitionReserver
	ReservePlaced(ctx context.Context, resource string, candidates []Candidate, amount int, dryRun bool, p Placement) ([]string, error)
}

// CoordinatedOptions configures NewCoordinated.
type CoordinatedOptions struct {
	// Reserver reserves the chosen devices host-wide. Nil switches
	// coordination off: every caller gets the first amount devices, like
	// Flink's non-coordination mode.
	Reserver Reserver
	// DryRun computes the choice without recording anything (probe).
	DryRun bool
	// Placer, when set, chooses among the free devices (a Reserver that
	// is no PlacingReserver, or no Reserver, leaves the first ones).
	Placer Placer
	// Return: how quarantined devices return (a HealthSyncer Reserver).
	Return QuarantineReturn
	Log    logrus.FieldLogger
}

// Coordinated is the shared selection layer of the built-in drivers: it
// enumerates the host's devices, picks amount of them that no other live
// process holds, records them and reports their infos. It is a Driver and a
// Releaser.
type Coordinated struct {
	resource string
	enum     Enumerator
	opts     CoordinatedOptions
	log      logrus.FieldLogger

	mu        sync.Mutex
	unhealthy []UnhealthyDevice // of the last Discover
	// mayHold: a Reserve of this driver may have recorded devices (it
	// succeeded, or failed without saying ErrNothingReserved), so Release
	// has something to free.
	mayHold bool
}

// ErrNothingReserved is matched by the error of a Reserver's Reserve that
// recorded nothing (the state file unreadable, too few free devices…):
// a driver whose every Reserve failed so has nothing to release.
var ErrNothingReserved = errors.New("nothing reserved")

// NothingReserved marks err as a failed Reserve that recorded nothing
// (ErrNothingReserved), keeping its message.
func NothingReserved(err error) error {
	if err == nil {
		return nil
	}
	return nothingReserved{err}
}

type nothingReserved struct{ err error }

func (n nothingReserved) Error() string   { return n.err.Error() }
func (n nothingReserved) Unwrap() []error { return []error{n.err, ErrNothingReserved} }

var (
	_ Driver         = (*Coordinated)(nil)
	_ Releaser       = (*Coordinated)(nil)
	_ HealthReporter = (*Coordinated)(nil)
)

// NewCoordinated returns the Driver for resource that selects among the
// devices enum lists.
func NewCoordinated(resource string, enum Enumerator, opts CoordinatedOptions) *Coordinated {
	return &Coordinated{
		resource: resource,
		enum:     enum,
		opts:     opts,
		log:      LoggerOrDiscard(opts.Log).WithField("resource", resource),
	}
}

// Discover implements Driver.
func (c *Coordinated) Discover(ctx context.Context, amount int64) ([]resources.Info, error) {
	if amount <= 0 {
		return nil, fmt.Errorf("discover %s: amount must be positive, got %d", c.resource, amount)
	}
	devices, err := c.enum.Enumerate(ctx)
	if err != nil {
		return nil, fmt.Errorf("discover %s: %w", c.resource, err)
	}
	byKey := make(map[string]Device, len(devices))
	keys := make([]string, 0, len(devices))
	var cands []Candidate // keys with their parents
	var sick []UnhealthyDevice
	for _, d := range devices {
		if d.Key == "" {
			return nil, fmt.Errorf("discover %s: device %v has an empty key", c.resource, d.Info)
		}
		if _, dup := byKey[d.Key]; dup {
			return nil, fmt.Errorf("discover %s: device key %q listed twice", c.resource, d.Key)
		}
		byKey[d.Key] = d
		if d.Unhealthy != "" {
			sick = append(sick, UnhealthyDevice{Key: d.Key, Info: d.Info.Clone(), Reason: d.Unhealthy})
			continue
		}
		keys = append(keys, d.Key)
		cands = append(cands, Candidate{Key: d.Key, Parent: d.Parent, Index: d.Info["index"]})
	}
	c.mu.Lock()
	c.unhealthy = sick
	c.mu.Unlock()
	for _, u := range sick {
		c.log.WithFields(logrus.Fields{
			"device": u.Key, "index": u.Info["index"], "reason": u.Reason,
		}).Warn("unhealthy device left out")
	}
	if int64(len(keys)) < amount {
		c.syncHealth(ctx, devices) // healthsync.go
		if len(sick) > 0 {
			return nil, fmt.Errorf("discover %s: %w: %d requested but the host has %d healthy (%s); unhealthy: %s",
				c.resource, ErrNotEnoughDevices, amount, len(keys), describeKeys(keys), c.describeUnhealthy(sick))
		}
		return nil, fmt.Errorf("discover %s: %w: %d requested but the host has %d (%s)",
			c.resource, ErrNotEnoughDevices, amount, len(keys), describeKeys(keys))
	}
	chosen := keys[:amount]
	var placement Placement
	if c.opts.Placer != nil {
		if placement, err = c.opts.Placer.Placement(ctx, devices, int(amount)); err != nil {
			return nil, fmt.Errorf("discover %s: %w", c.resource, err)
		}
	}
	if r := c.opts.Reserver; r != nil {
		reserve := func() ([]string, error) {
			if pl, ok := r.(PlacingReserver); ok && placement != nil {
				return pl.ReservePlaced(ctx, c.resource, cands, int(amount), c.opts.DryRun, placement)
			}
			if pr, ok := r.(PartitionReserver); ok {
				return pr.ReserveCandidates(ctx, c.resource, cands, int(amount), c.opts.DryRun)
			}
			return r.Reserve(ctx, c.resource, keys, int(amount), c.opts.DryRun)
		}
		if _, ok := r.(WriteGated); !ok {
			BeforeReserve(ctx)
		}
		chosen, err = reserve()
		// The quarantine after the reservation, from the state it read (no
		// read of its own); one that returns a device lets a reservation
		// that lacked it try again (healthsync.go).
		if back := c.syncHealth(ctx, devices); len(back) > 0 && errors.Is(err, ErrNotEnoughDevices) {
			chosen, err = reserve()
		}
		if !c.opts.DryRun && (err == nil || !errors.Is(err, ErrNothingReserved)) {
			c.mu.Lock()
			c.mayHold = true
			c.mu.Unlock()
		}
		if err != nil {
			if len(sick) > 0 {
				return nil, fmt.Errorf("discover %s: %w; unhealthy: %s", c.resource, err, c.describeUnhealthy(sick))
			}
			return nil, fmt.Errorf("discover %s: %w", c.resource, err)
		}
	}
	var placed map[string]string
	if placement != nil {
		if c.opts.Reserver == nil {
			chosen = keysOfCandidates(placement.Pick(cands, int(amount)))
		}
		if placed = placement.Describe(chosen); len(placed) > 0 {
			fields := logrus.Fields{"devices": strings.Join(chosen, ",")}
			for k, v := range placed {
				fields[k] = v
			}
			c.log.WithFields(fields).Info("devices placed")
		}
	}
	infos := make([]resources.Info, 0, len(chosen))
	for _, k := range chosen {
		d, ok := byKey[k]
		if !ok {
			return nil, fmt.Errorf("discover %s: reserver returned unknown device key %q", c.resource, k)
		}
		info := d.Info.Clone()
		for k, v := range placed {
			info[k] = v
		}
		infos = append(infos, info)
	}
	c.log.WithFields(logrus.Fields{
		"devices":      strings.Join(chosen, ","),
		"coordination": c.opts.Reserver != nil,
		"dry_run":      c.opts.DryRun,
	}).Debug("devices selected")
	return infos, nil
}

// Release implements Releaser: it frees what this process reserved for the
// resource. Without coordination, in a dry run, or when no Reserve of this
// driver recorded anything (none ran, or each failed with
// ErrNothingReserved), there is nothing to free and the state is not
// touched.
func (c *Coordinated) Release(ctx context.Context) error {
	c.mu.Lock()
	held := c.mayHold
	c.mu.Unlock()
	if c.opts.Reserver == nil || c.opts.DryRun || !held {
		return nil
	}
	if err := c.opts.Reserver.Release(ctx, c.resource); err != nil {
		return fmt.Errorf("release %s: %w", c.resource, err)
	}
	return nil
}

// Unhealthy implements HealthReporter: the devices the last Discover left
// out as unhealthy, and why.
func (c *Coordinated) Unhealthy() []UnhealthyDevice {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]UnhealthyDevice, len(c.unhealthy))
	for i, u := range c.unhealthy {
		out[i] = UnhealthyDevice{Key: u.Key, Info: u.Info.Clone(), Reason: u.Reason}
	}
	return out
}

// describeUnhealthy names each device the way an operator finds it:
// "gpu 3 (GPU-…): retired pages pending", or "gpu GPU-…: …" without index.
func (c *Coordinated) describeUnhealthy(sick []UnhealthyDevice) string {
	parts := make([]string, len(sick))
	for i, u := range sick {
		if ix := u.Info["index"]; ix != "" && ix != u.Key {
			parts[i] = fmt.Sprintf("%s %s (%s): %s", c.resource, ix, u.Key, u.Reason)
		} else {
			parts[i] = fmt.Sprintf("%s %s: %s", c.resource, u.Key, u.Reason)
		}
	}
	return strings.Join(parts, "; ")
}

func describeKeys(keys []string) string {
	if len(keys) == 0 {
		return "none found"
	}
	return strings.Join(keys, ", ")
}

func keysOfCandidates(cs []Candidate) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Key
	}
	return out
}
