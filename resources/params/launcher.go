package params

import (
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/xres/xres/conf"
	"github.com/xres/xres/resources"
)

// CheckLauncher is what every container-launcher refuses in cfg (the view
// of its worker group) and its enabled specs before it touches its host,
// each error worded as the launcher words it (its exit 211):
// xres.discovery.timeout, xres.rescale.*, then each resource's params as
// its built-in driver checks them (Check). A factory that is not built in
// (a device plugin's bare name, a typo) is left out: only a launcher's
// registry can tell, and resources.Lint reports it. am resources and am
// submit run it, so that nothing is staged that every launcher refuses.
func CheckLauncher(cfg *conf.Config, specs []resources.Spec) []error {
	var errs []error
	if _, err := cfg.Duration(conf.DiscoveryTimeout); err != nil {
		errs = append(errs, err)
	}
	if _, err := ReadRescale(cfg); err != nil {
		errs = append(errs, err)
	}
	for _, spec := range specs {
		if strings.TrimSpace(spec.Factory) == "" {
			continue
		}
		p := make(map[string]string, len(spec.Params))
		for k, v := range spec.Params {
			p[k] = v
		}
		if known, err := Check(spec.Factory, spec.Name, p); known && err != nil {
			errs = append(errs, CreateError(spec, err))
		} else if _, err := NUMAMemory.Choice(spec.Name, p); err != nil {
			errs = append(errs, CreateError(spec, err))
		}
	}
	return errs
}

// CreateError is how the launcher words a driver factory's refusal of a
// resource.
func CreateError(spec resources.Spec, err error) error {
	return fmt.Errorf("create driver %s for resource %s: %w", spec.Factory, spec.Name, err)
}

// Check checks the params of a resource whose driver-factory.class is
// factory as that built-in driver's CheckParams does (a name or alias of
// the catalog, or plugin:<dir>). known is false for any other factory.
func Check(factory, resource string, params map[string]string) (known bool, err error) {
	if dir, ok := strings.CutPrefix(factory, resources.PluginPrefix); ok {
		return true, CheckPlugin(resource, params, true, strings.TrimSpace(dir))
	}
	name, ok := resources.CanonicalFactory(factory)
	if !ok {
		return false, nil
	}
	check, ok := checks[name]
	if !ok {
		return false, nil
	}
	return true, check(resource, params)
}

// checks are the built-in drivers' checks by primary factory name
// (TestChecksCoverCatalog holds them to the catalog).
var checks = map[string]func(resource string, params map[string]string) error{
	factoryGPU:    CheckGPU,
	factoryPCI:    CheckPCI,
	factoryAMDGPU: CheckAMD,
	factoryPlugin: func(resource string, params map[string]string) error {
		return CheckPlugin(resource, params, false, "")
	},
}

// Rescale is xres.rescale.* as every launcher reads them.
type Rescale struct {
	Signal   syscall.Signal // 0: none, the file alone
	Interval time.Duration  // 0: DefaultRescaleInterval
	// Watch: the counts are read while the worker runs (scheduler-mode:
	// reactive, or a Signal); false: once, before it starts.
	Watch bool
}

// rescaleSignals are the signals xres.rescale.signal may name: those a
// worker traps to be told something, never one that stops it.
var rescaleSignals = map[string]syscall.Signal{
	"HUP": syscall.SIGHUP, "USR1": syscall.SIGUSR1, "USR2": syscall.SIGUSR2, "WINCH": syscall.SIGWINCH,
}

// ReadRescale reads xres.rescale.signal and xres.rescale.interval.
func ReadRescale(cfg *conf.Config) (Rescale, error) {
	var r Rescale
	interval, err := cfg.Duration(conf.RescaleInterval)
	if err != nil {
		return r, err
	}
	if interval <= 0 {
		return r, fmt.Errorf("%s: %s is not a positive duration", conf.RescaleInterval.Key, interval)
	}
	r.Interval = interval
	mode, _ := cfg.Get(conf.SchedulerMode.Key)
	r.Watch = strings.EqualFold(strings.TrimSpace(mode), "reactive")
	name, err := cfg.String(conf.RescaleSignal)
	if err != nil || strings.TrimSpace(name) == "" {
		return r, err
	}
	r.Signal, err = ParseRescaleSignal(name)
	if err != nil {
		return r, fmt.Errorf("%s: %w", conf.RescaleSignal.Key, err)
	}
	r.Watch = true
	return r, nil
}

// ParseRescaleSignal reads HUP, SIGHUP, sighup or a number.
func ParseRescaleSignal(name string) (syscall.Signal, error) {
	s := strings.ToUpper(strings.TrimSpace(name))
	if sig, ok := rescaleSignals[strings.TrimPrefix(s, "SIG")]; ok {
		return sig, nil
	}
	if n, err := strconv.Atoi(s); err == nil {
		for _, sig := range rescaleSignals {
			if int(sig) == n {
				return sig, nil
			}
		}
	}
	return 0, fmt.Errorf("%q is not HUP, USR1, USR2, WINCH or one of their numbers (%d, %d, %d, %d)",
		name, syscall.SIGHUP, syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGWINCH)
}
