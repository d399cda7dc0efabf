// Package launch is the logic of container-launcher: for every configured
// external resource it builds the driver, discovers (and, under host
// coordination, reserves) the devices, tells the worker what it got (an info
// file and environment variables), runs the worker as a supervised child
// with signals forwarded, passes its exit code on and always releases the
// devices. With --per-device it runs one worker per device instead, each
// told only its own device and pinned to the CPUs local to it, and stops
// or restarts them when one fails (perdevice.go). It also holds the probe
// and check subcommands.
//
// cmd/container-launcher only wires os.Args, the environment, signals and
// the driver registry into Main.
package launch

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/xres/xres/conf"
	"github.com/xres/xres/driver"
	"github.com/xres/xres/driver/coord"
	"github.com/xres/xres/resources"
	"github.com/xres/xres/resources/params"
)

// Registry finds driver factories by the name configured in
// external-resource.<name>.driver-factory.class. *driver.Registry
// implements it.
type Registry interface {
	Lookup(name string) (driver.Factory, error)
	Canonical(name string) (string, bool)
}

var _ Registry = (*driver.Registry)(nil)

// Launcher discovers and releases the devices of a set of resources.
type Launcher struct {
	Registry Registry
	Log      logrus.FieldLogger
	// Getenv is handed to the drivers; nil means os.Getenv.
	Getenv func(string) string
	// DryRun discovers without reserving (probe).
	DryRun bool
	// DiscoverTimeout bounds each resource's discovery (0: 2 minutes).
	DiscoverTimeout time.Duration
	// DriverTimeout is the drivers' limit for one discovery step (script,
	// nvidia-smi, plugin) where a resource's params set none:
	// xres.discovery.timeout (driver.Options.Timeout; 0: the drivers' 10 s).
	DriverTimeout time.Duration
	// Rescale is xres.rescale.*: the worker counts file and signal (run).
	Rescale Rescale
	// MetricsInterval is xres.metrics.interval: the worker's GPUs are
	// sampled while it runs (sampler.go); 0: not.
	MetricsInterval time.Duration
	// ReleaseTimeout bounds the release of every resource (0: 30 seconds).
	ReleaseTimeout time.Duration
	// Holder, when not 0, is the process the devices are reserved for
	// (driver.Options.Holder): the discovery bridge's caller.
	Holder int
	// ready, when set, is waited for before anything is reserved: Main's
	// signal subscription, made meanwhile. A ReserveGated driver waits for
	// it itself, once it has listed and chosen its devices; others before
	// their Discover.
	ready func()
}

// Reservation is what Acquire got: the grants, in spec order, and what to
// release when the worker ends.
type Reservation struct {
	Grants   []Grant
	held     []held
	log      logrus.FieldLogger
	timeout  time.Duration
	released bool
	// stateFiles are the host coordination files the grants are recorded
	// in (xres coordination only).
	stateFiles []string
}

type held struct {
	name string
	rel  driver.Releaser
}

func (l *Launcher) log() logrus.FieldLogger { return driver.LoggerOrDiscard(l.Log) }

// Driver builds the driver of spec: the factory looked up in the registry,
// given the spec's params. A spec without a factory returns (nil, "", nil):
// Flink requests such a resource but tells the worker nothing. An unknown
// factory or params it rejects (CheckSpecs) are a configuration error; a
// factory that fails beyond that (a discovery script or plugin missing on
// this host) a discovery failure of this host.
func (l *Launcher) Driver(spec resources.Spec) (driver.Driver, string, error) {
	d, _, canonical, err := l.driver(spec)
	return d, canonical, err
}

// factory looks spec's factory up: (nil, "", nil) without one; canonical
// is the registry's primary name ("" where it has none).
func (l *Launcher) factory(spec resources.Spec) (driver.Factory, string, error) {
	if strings.TrimSpace(spec.Factory) == "" {
		return nil, "", nil
	}
	key := resources.Key(spec.Name, resources.SuffixFactory)
	if l.Registry == nil {
		return nil, "", classifyf(ErrConfig, "%s: %q: %w (no registry)", key, spec.Factory, driver.ErrUnknownFactory)
	}
	f, err := l.Registry.Lookup(spec.Factory)
	if err != nil {
		return nil, "", classifyf(ErrConfig, "%s: %w", key, err)
	}
	canonical, _ := l.Registry.Canonical(spec.Factory)
	return f, canonical, nil
}

// checkedFactory is factory, then the factory's check of spec's params
// (driver.ParamChecker): what every launcher refuses before it touches the
// host, and what CheckSpecs reports.
func (l *Launcher) checkedFactory(spec resources.Spec) (driver.Factory, string, error) {
	f, canonical, err := l.factory(spec)
	if err != nil || f == nil {
		return nil, "", err
	}
	if pc, ok := f.(driver.ParamChecker); ok {
		if err := pc.CheckParams(spec.Name, copyParams(spec.Params)); err != nil {
			return nil, "", classify(ErrConfig, createError(spec, err))
		}
	}
	if _, err := driver.NUMAMemoryParam.Choice(spec.Name, spec.Params); err != nil {
		return nil, "", classify(ErrConfig, createError(spec, err))
	}
	return f, canonical, nil
}

// createError is how the launcher words a factory's refusal.
func createError(spec resources.Spec, err error) error { return params.CreateError(spec, err) }

func copyParams(p map[string]string) map[string]string {
	out := make(map[string]string, len(p))
	for k, v := range p {
		out[k] = v
	}
	return out
}

// CheckSpecs runs on specs the checks every launcher runs before it
// touches the host: each resource's driver factory looked up in r, and its
// params checked by the factory (driver.ParamChecker). Each error is the
// one a launcher exits ExitConfig (211) with for that resource, word for
// word. am resources and am submit, which link no driver, run the same
// checks of the built-in drivers through resources/params.CheckLauncher.
func CheckSpecs(specs []resources.Spec, r Registry) []error {
	l := &Launcher{Registry: r}
	var errs []error
	for _, spec := range specs {
		if _, _, err := l.checkedFactory(spec); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// CheckConfig is what every launcher refuses in cfg (the view of its
// worker group) and its enabled specs before it touches the host:
// xres.discovery.timeout, xres.rescale.*, xres.metrics.interval, then CheckSpecs. Each error is
// a configuration error (ExitConfig), worded as the launcher words it.
func CheckConfig(cfg *conf.Config, specs []resources.Spec, r Registry) []error {
	var errs []error
	if _, err := discoveryTimeout(cfg); err != nil {
		errs = append(errs, err)
	}
	if _, err := rescaleSettings(cfg); err != nil {
		errs = append(errs, classify(ErrConfig, err))
	}
	if _, err := metricsInterval(cfg); err != nil {
		errs = append(errs, classify(ErrConfig, err))
	}
	return append(errs, CheckSpecs(specs, r)...)
}

// driver is Driver with the factory it was built by.
func (l *Launcher) driver(spec resources.Spec) (driver.Driver, driver.Factory, string, error) {
	f, canonical, err := l.checkedFactory(spec)
	if err != nil || f == nil {
		return nil, nil, "", err
	}
	d, err := f.NewDriver(driver.Options{
		Resource: spec.Name,
		Params:   copyParams(spec.Params),
		Log:      l.log().WithField("resource", spec.Name),
		Getenv:   l.Getenv,
		DryRun:   l.DryRun,
		Timeout:  l.DriverTimeout,
		Holder:   l.Holder,
		YarnKey:  spec.YarnKey,
	})
	if err != nil {
		// The params passed CheckSpecs: what the driver still refuses is
		// either this host's (the registry's DiagnoseNew: a script or plugin not
		// installed here) or, for a factory without a ParamChecker, its
		// params.
		kind := ErrConfig
		if dg, ok := l.diagnoseNew(err); ok && dg.Host {
			kind = ErrDiscovery
		}
		return nil, f, canonical, classify(kind, createError(spec, err))
	}
	if d == nil {
		return nil, f, canonical, classifyf(ErrConfig, "create driver %s for resource %s: factory returned no driver", spec.Factory, spec.Name)
	}
	return d, f, canonical, nil
}

// Acquire discovers the devices of every spec in order. On any failure it
// releases what earlier specs got before returning, so nothing stays
// half-reserved. A spec without a driver factory is skipped with a warning
// (Flink's behaviour: the worker sees no infos for it).
func (l *Launcher) Acquire(ctx context.Context, specs []resources.Spec) (*Reservation, error) {
	r := &Reservation{log: l.log(), timeout: l.ReleaseTimeout}
	for _, spec := range specs {
		log := l.log().WithField("resource", spec.Name)
		if err := ctx.Err(); err != nil {
			return nil, r.abort(fmt.Errorf("discover %s: %w", spec.Name, err))
		}
		d, f, canonical, err := l.driver(spec)
		if err != nil {
			return nil, r.abort(err)
		}
		if d == nil {
			log.Warnf("no driver factory configured (external-resource.%s.driver-factory.class): the worker gets no device infos for it", spec.Name)
			continue
		}
		// Register the releaser before Discover: a driver that reserved part
		// of its devices and then failed must free them too.
		if rel, ok := d.(driver.Releaser); ok {
			r.held = append(r.held, held{name: spec.Name, rel: rel})
		}
		timeout := l.DiscoverTimeout
		if timeout <= 0 {
			timeout = 2 * time.Minute
		}
		dctx, cancel := context.WithTimeout(ctx, timeout)
		if l.ready != nil {
			if driver.CallsBeforeReserve(d) {
				dctx = driver.WithBeforeReserve(dctx, l.ready) // waited for once listed and chosen
			} else {
				l.ready()
			}
		}
		start := time.Now()
		infos, err := d.Discover(dctx, spec.Amount)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return nil, r.abort(fmt.Errorf("discover %s: %w", spec.Name, ctx.Err()))
			}
			return nil, r.abort(classifyf(ErrDiscovery, "discover %s (amount %d, driver %s): %w", spec.Name, spec.Amount, spec.Factory, err))
		}
		if int64(len(infos)) != spec.Amount {
			log.WithField("amount", spec.Amount).WithField("got", len(infos)).
				Warn("driver returned a different number of devices than the amount")
		}
		r.Grants = append(r.Grants, Grant{Spec: spec, Vendor: driver.VendorOf(f, spec.Params, vendorFinder(l.Registry)), Devices: infos})
		if c := l.coordinationFor(spec, f, canonical); c.Mode == driver.CoordXres && !slices.Contains(r.stateFiles, c.StateFile) {
			r.stateFiles = append(r.stateFiles, c.StateFile)
		}
		log.WithFields(logrus.Fields{
			"devices":  describeDevices(infos),
			"duration": time.Since(start).Round(time.Microsecond).String(),
			"dry_run":  l.DryRun,
		}).Info("devices discovered")
	}
	return r, nil
}

// HoldGroup records in the host coordination that the worker process
// group g holds the reservation too, so that its devices stay held while
// any of its processes lives, even once the launcher is gone.
func (r *Reservation) HoldGroup(ctx context.Context, g coord.Group) error {
	var errs []error
	for _, f := range r.stateFiles {
		h, err := coord.OpenState(f, r.log)
		if err == nil {
			err = h.HoldGroup(ctx, g)
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// abort releases everything and returns err (with any release error joined).
func (r *Reservation) abort(err error) error {
	ctx, cancel := context.WithTimeout(context.Background(), r.releaseTimeout())
	defer cancel()
	if rerr := r.Release(ctx); rerr != nil {
		return errors.Join(err, rerr)
	}
	return err
}

func (r *Reservation) releaseTimeout() time.Duration {
	if r.timeout <= 0 {
		return 30 * time.Second
	}
	return r.timeout
}

// Release frees every device the reservation holds, in reverse order,
// trying all of them even when one fails. Calling it again does nothing.
func (r *Reservation) Release(ctx context.Context) error {
	if r == nil || r.released {
		return nil
	}
	r.released = true
	var errs []error
	for i := len(r.held) - 1; i >= 0; i-- {
		h := r.held[i]
		if err := h.rel.Release(ctx); err != nil {
			// Named once: the built-in drivers name the resource already.
			if !strings.HasPrefix(err.Error(), "release "+h.name+":") {
				err = fmt.Errorf("release %s: %w", h.name, err)
			}
			r.log.WithField("resource", h.name).WithError(err).Error("release devices")
			errs = append(errs, err)
			continue
		}
		r.log.WithField("resource", h.name).Debug("devices released")
	}
	return errors.Join(errs...)
}

// Infos maps each granted resource name to its devices, the shape of the
// info file.
func (r *Reservation) Infos() map[string][]resources.Info { return infosOf(r.Grants) }

// infosOf maps each grant's resource name to its devices.
func infosOf(grants []Grant) map[string][]resources.Info {
	out := make(map[string][]resources.Info, len(grants))
	for _, g := range grants {
		out[g.Spec.Name] = g.Devices
	}
	return out
}

// ParamVendor is the driver param (external-resource.<name>.param.…) that
// names the vendor of a resource's devices, for plugins and scripts that
// stand for a vendor's devices: a vendor some registered driver reports
// (driver.VendorReporter), or none.
const ParamVendor = driver.ParamVisibleDevicesVendor

// vendorFinder is r's, where it finds vendors (driver.VendorFinder).
func vendorFinder(r Registry) driver.VendorFinder {
	if f, ok := r.(driver.VendorFinder); ok {
		return f
	}
	return nil
}

func describeDevices(infos []resources.Info) string {
	parts := make([]string, 0, len(infos))
	for _, in := range infos {
		if id := driver.VisibleID(in); id != "" {
			parts = append(parts, id)
			continue
		}
		parts = append(parts, fmt.Sprint(in))
	}
	return strings.Join(parts, ",")
}
