package driver

import (
	"context"
	"fmt"
	"strings"

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

// CoordinatedOptions configures NewCoordinated.
type CoordinatedOptions struct {
	// Reserver reserves the chosen devices host-wide. Nil switches
	// coordination off: every caller gets the first amount devices, like
	// Flink's non-coordination mode.
	Reserver Reserver
	// DryRun computes the choice without recording anything (probe).
	DryRun bool
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
}

var (
	_ Driver   = (*Coordinated)(nil)
	_ Releaser = (*Coordinated)(nil)
)

// NewCoordinated returns the Driver for resource that selects among the
// devices enum lists.
func NewCoordinated(resource string, enum Enumerator, opts CoordinatedOptions) *Coordinated {
	log := opts.Log
	if log == nil {
		log = discardLogger()
	}
	return &Coordinated{
		resource: resource,
		enum:     enum,
		opts:     opts,
		log:      log.WithField("resource", resource),
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
	for _, d := range devices {
		if d.Key == "" {
			return nil, fmt.Errorf("discover %s: device %v has an empty key", c.resource, d.Info)
		}
		if _, dup := byKey[d.Key]; dup {
			return nil, fmt.Errorf("discover %s: device key %q listed twice", c.resource, d.Key)
		}
		byKey[d.Key] = d
		keys = append(keys, d.Key)
	}
	if int64(len(keys)) < amount {
		return nil, fmt.Errorf("discover %s: %w: %d requested but the host has %d (%s)",
			c.resource, ErrNotEnoughDevices, amount, len(keys), describeKeys(keys))
	}
	var chosen []string
	if c.opts.Reserver == nil {
		chosen = keys[:amount]
	} else {
		chosen, err = c.opts.Reserver.Reserve(ctx, c.resource, keys, int(amount), c.opts.DryRun)
		if err != nil {
			return nil, fmt.Errorf("discover %s: %w", c.resource, err)
		}
	}
	infos := make([]resources.Info, 0, len(chosen))
	for _, k := range chosen {
		d, ok := byKey[k]
		if !ok {
			return nil, fmt.Errorf("discover %s: reserver returned unknown device key %q", c.resource, k)
		}
		p := make(resources.Properties, len(d.Info))
		for pk, pv := range d.Info {
			p[pk] = pv
		}
		infos = append(infos, p)
	}
	c.log.WithFields(logrus.Fields{
		"devices":      strings.Join(chosen, ","),
		"coordination": c.opts.Reserver != nil,
		"dry_run":      c.opts.DryRun,
	}).Debug("devices selected")
	return infos, nil
}

// Release implements Releaser: it frees what this process reserved for the
// resource. Without coordination, or in a dry run, there is nothing to free.
func (c *Coordinated) Release(ctx context.Context) error {
	if c.opts.Reserver == nil || c.opts.DryRun {
		return nil
	}
	if err := c.opts.Reserver.Release(ctx, c.resource); err != nil {
		return fmt.Errorf("release %s: %w", c.resource, err)
	}
	return nil
}

func describeKeys(keys []string) string {
	if len(keys) == 0 {
		return "none found"
	}
	return strings.Join(keys, ", ")
}
