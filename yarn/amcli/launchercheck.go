package amcli

import (
	"fmt"

	"github.com/xres/xres/conf"
	"github.com/xres/xres/resources"
	"github.com/xres/xres/resources/params"
)

// launcherRefusalFix is the fix of a problem every launcher refuses.
var launcherRefusalFix = fmt.Sprintf("correct the key named in the message: every container-launcher refuses this configuration (exit %d)",
	resources.LauncherExitConfig)

// launcherProblems runs on a view of the configuration (one worker
// group's, or the application's) and its specs the checks every
// container-launcher runs before it touches its host (params.CheckLauncher:
// xres.discovery.timeout, xres.rescale.*, each built-in driver's check of
// its params, the very functions the drivers run), and words each refusal
// as the launcher does. am links no driver code. A factory that is not
// built in is left to resources.Lint, which knows that a device plugin may
// be installed on the worker hosts and not here.
// The environment (its second argument) is no longer read: a plugin
// installed here tells nothing about the worker hosts.
func launcherProblems(view *conf.Config, specs []resources.Spec, _ func(string) string) []resources.Problem {
	var out []resources.Problem
	for _, e := range params.CheckLauncher(view, specs) {
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
