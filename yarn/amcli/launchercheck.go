package amcli

import (
	"errors"
	"fmt"

	"github.com/xres/xres/conf"
	"github.com/xres/xres/driver"
	"github.com/xres/xres/driver/builtin"
	"github.com/xres/xres/driver/launch"
	"github.com/xres/xres/resources"
)

// launcherRefusalFix is the fix of a problem every launcher refuses.
var launcherRefusalFix = fmt.Sprintf("correct the key named in the message: every container-launcher refuses this configuration (exit %d)",
	resources.LauncherExitConfig)

// launcherProblems runs on a view of the configuration (one worker
// group's, or the application's) and its specs the checks every
// container-launcher runs before it touches its host (launch.CheckConfig:
// xres.discovery.timeout, each resource's driver factory and the driver's
// check of its params), and words each refusal as the launcher does. An
// unknown driver factory is left to resources.Lint, which knows that a
// device plugin may be installed on the worker hosts and not here.
func launcherProblems(view *conf.Config, specs []resources.Spec, getenv func(string) string) []resources.Problem {
	reg, err := builtin.NewRegistry(getenv)
	if err != nil {
		return []resources.Problem{{Severity: resources.SeverityError, Message: err.Error()}}
	}
	var out []resources.Problem
	for _, e := range launch.CheckConfig(view, specs, reg) {
		if errors.Is(e, driver.ErrUnknownFactory) {
			continue
		}
		out = append(out, resources.Problem{Severity: resources.SeverityError, Message: e.Error(), Fix: launcherRefusalFix})
	}
	return out
}

// workerSpecs is how submit and the AM read a view's specs: as the AM asks
// YARN for them (resources.Parse, YARN side), refused when every launcher
// would refuse them (launcherProblems), so that nothing is staged that
// fails every worker with exit 211.
func workerSpecs(opts resources.ParseOptions, getenv func(string) string) func(*conf.Config) ([]resources.Spec, error) {
	return func(v *conf.Config) ([]resources.Spec, error) {
		specs, err := resources.Parse(v, opts)
		if err != nil {
			return nil, err
		}
		if probs := launcherProblems(v, specs, getenv); len(probs) > 0 {
			return nil, &resources.ConfigError{Problems: probs}
		}
		return specs, nil
	}
}
