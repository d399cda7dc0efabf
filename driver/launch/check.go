package launch

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/xres/xres/conf"
	"github.com/xres/xres/driver"
	"github.com/xres/xres/driver/coord"
	"github.com/xres/xres/resources"
)

// Finding is one problem `container-launcher check` reports: a
// configuration problem (resources.Lint and friends) or a host problem
// (the driver cannot discover here, coordination cannot work).
type Finding struct {
	resources.Problem
	// Host marks a problem of this host rather than of the configuration.
	Host bool
}

// String renders "error   key (origin): message (fix: …)".
func (f Finding) String() string {
	return fmt.Sprintf("%-7s %s", f.Severity, f.Problem.String())
}

// Trial is what a trial discovery in check found for one resource: the
// devices a launcher would get now, holding nothing.
type Trial struct {
	Resource string
	Amount   int64
	Devices  []resources.Info
	// Node is the host's mode under YARN, for drivers that read the
	// NodeManager's assignment.
	Node *driver.NodeAssignment
}

// String renders "gpu: a launcher would get 2 device(s): 0, 1".
func (t Trial) String() string {
	return fmt.Sprintf("%s: a launcher would get %d device(s): %s", t.Resource, len(t.Devices), describeDevices(t.Devices))
}

// checkTimeout bounds each resource's trial discovery in check.
const checkTimeout = 10 * time.Second

// Check reports every pitfall that applies to cfg on this host: the
// configuration lint, then per enabled resource the driver factory, the
// driver's params (script missing or not executable…), a trial discovery of
// the configured amount in a dry run (script exit code and stderr, too few
// or repeated devices, no GPU source…; its devices are returned as a Trial)
// and host coordination (off, directory not writable, state file corrupt).
//
// only (comma-separated names, "" for all) limits the per-resource checks,
// like --resources.
func (l *Launcher) Check(ctx context.Context, cfg *conf.Config, only string) ([]Finding, []Trial) {
	var out []Finding
	var trials []Trial
	seen := map[string]bool{}
	add := func(f Finding) {
		k := f.Problem.String()
		if seen[k] {
			return
		}
		seen[k] = true
		out = append(out, f)
	}
	// Factories are checked per selected resource, against this registry.
	for _, p := range resources.LintWith(cfg, resources.LintOptions{SkipFactories: true}) {
		add(Finding{Problem: p})
	}
	// What every launch refuses besides the resources (CheckConfig).
	if _, err := discoveryTimeout(cfg); err != nil {
		// The message names the key and where it was set.
		add(Finding{Problem: resources.Problem{Severity: resources.SeverityError, Message: err.Error(),
			Fix: "set " + conf.DiscoveryTimeout.Key + " to a duration such as 10 s"}})
	}
	if _, err := rescaleSettings(cfg); err != nil {
		add(Finding{Problem: resources.Problem{Severity: resources.SeverityError, Message: err.Error(),
			Fix: "set " + conf.RescaleSignal.Key + " to HUP, USR1, USR2 or WINCH (or leave it unset), " + conf.RescaleInterval.Key + " to a positive duration"}})
	}
	specs, err := resources.Parse(cfg, resources.ParseOptions{Side: resources.SideWorker})
	if err != nil {
		var ce *resources.ConfigError
		if errors.As(err, &ce) {
			for _, p := range ce.Problems {
				add(Finding{Problem: p})
			}
		} else {
			add(Finding{Problem: resources.Problem{Severity: resources.SeverityError, Message: err.Error()}})
		}
	}
	specs, err = selectSpecs(specs, only)
	if err != nil {
		add(Finding{Problem: resources.Problem{Key: resources.KeyList, Origin: "--resources", Severity: resources.SeverityError,
			Message: err.Error(), Fix: "name only resources listed in " + resources.KeyList}})
	}
	dry := *l
	dry.DryRun = true
	for _, spec := range specs {
		fs, trial := dry.checkSpec(ctx, cfg, spec)
		for _, f := range fs {
			add(f)
		}
		if trial != nil {
			trials = append(trials, *trial)
		}
	}
	return out, trials
}

func (l *Launcher) checkSpec(ctx context.Context, cfg *conf.Config, spec resources.Spec) ([]Finding, *Trial) {
	if strings.TrimSpace(spec.Factory) == "" {
		return nil, nil // Lint reports it
	}
	factoryKey := resources.Key(spec.Name, resources.SuffixFactory)
	var out []Finding
	cfgErr := func(key, msg, fix string) {
		out = append(out, Finding{Problem: resources.Problem{Key: key, Origin: cfg.Origin(key), Severity: resources.SeverityError, Message: msg, Fix: fix}})
	}
	hostProblem := func(sev resources.Severity, key, msg, fix string) {
		out = append(out, Finding{Host: true, Problem: resources.Problem{Key: key, Origin: cfg.Origin(key), Severity: sev, Message: msg, Fix: fix}})
	}
	// report adds a driver's diagnosed error under its param's key.
	report := func(dg driver.Diagnosis, msg string) {
		key := factoryKey
		if dg.Param != "" {
			key = driver.ParamKey(spec.Name, dg.Param)
		}
		if dg.Host {
			hostProblem(resources.SeverityError, key, msg, dg.Fix)
		} else {
			cfgErr(key, msg, dg.Fix)
		}
	}

	d, f, canonical, err := l.driver(spec)
	switch {
	case errors.Is(err, driver.ErrUnknownFactory):
		known, root := l.knownFactories()
		o := resources.LintOptions{Known: known, PluginRoot: root}
		if p := resources.FactoryProblem(cfg, spec.Name, o); p != nil {
			out = append(out, Finding{Problem: *p})
		} else {
			cfgErr(factoryKey, err.Error(), "use a registered factory")
		}
		return out, nil
	case err != nil:
		if dg, ok := l.diagnoseNew(err); ok {
			report(dg, err.Error())
		} else {
			cfgErr(factoryKey, err.Error(), "fix the resource's param.* keys named in the message")
		}
		return out, nil
	}

	// A trial discovery of the configured amount, holding nothing.
	dctx, cancel := context.WithTimeout(ctx, checkTimeout)
	infos, derr := d.Discover(dctx, spec.Amount)
	cancel()
	if rel, ok := d.(driver.Releaser); ok {
		_ = rel.Release(ctx)
	}
	co := l.coordinationFor(spec, f, canonical)
	if derr != nil {
		report(l.diagnoseDiscover(derr, spec.Amount, co.Script != ""),
			fmt.Sprintf("trial discovery of %d device(s) failed: %s", spec.Amount, derr))
	}
	var trial *Trial
	na := l.nodeAssignment(ctx, spec)
	if derr == nil {
		trial = &Trial{Resource: spec.Name, Amount: spec.Amount, Devices: infos, Node: na}
	} else if na != nil {
		trial = &Trial{Resource: spec.Name, Amount: spec.Amount, Node: na}
	}

	switch co.Mode {
	case driver.CoordOff:
		key := driver.ParamKey(spec.Name, coord.ParamEnabled)
		if co.Script != "" {
			key = driver.ParamKey(spec.Name, coord.ParamScriptArgs)
		}
		out = append(out, Finding{Problem: resources.Problem{Key: key, Origin: cfg.Origin(key), Severity: resources.SeverityWarning,
			Message: "host coordination is off: several workers on one host will take the same devices unless YARN isolates them (cgroups)",
			Fix:     "remove " + driver.ParamKey(spec.Name, coord.ParamEnabled) + ": false (or add --enable-coordination-mode to the script args), unless YARN's GPU isolation is on"}})
	case driver.CoordXres:
		h, err := coord.OpenState(co.StateFile, nil)
		if err == nil {
			cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			err = h.Check(cctx)
			cancel()
		}
		if err != nil {
			key := driver.ParamKey(spec.Name, coord.ParamFile)
			fix := "make the directory of " + co.StateFile + " writable by every user that runs workers, or set " + key + " to a file in one that is"
			switch {
			case errors.Is(err, coord.ErrUnsafeFolder), errors.Is(err, coord.ErrUnsafeFile):
				fix = "as the message says (README: Hosts shared by several Unix users)"
			case errors.Is(err, coord.ErrCorruptState):
				fix = "if " + key + " names another program's file, fix " + key + "; else stop the workers on this host, then remove " + co.StateFile
			}
			hostProblem(resources.SeverityError, key, "host coordination cannot work: "+err.Error(), fix)
		}
	}
	return out, trial
}

// runCheck is `container-launcher check`.
func runCheck(ctx context.Context, args []string, env Env) int {
	fs := flag.NewFlagSet("container-launcher check", flag.ContinueOnError)
	var c common
	c.register(fs)
	if _, err := parse(fs, args, checkUsageText, env.Stdout); err != nil {
		return fail(env.Stderr, err)
	}
	if fs.NArg() > 0 {
		return fail(env.Stderr, classifyf(ErrUsage, "check takes no arguments, got %q", fs.Args()))
	}
	log, err := newLogger(env.Stderr, c.logLevel, "warn", env.Getenv)
	if err != nil {
		return fail(env.Stderr, err)
	}
	// Check's own findings are the output; the drivers' logs would repeat them.
	if c.logLevel == "" && env.Getenv(EnvLogLevel) == "" {
		log.SetOutput(io.Discard)
	}
	base, err := loadBase(c.config(env, log))
	var cfg *conf.Config
	if err == nil {
		cfg, err = forGroup(base, env.Getenv(conf.EnvWorkerGroup))
	}
	if err != nil {
		fmt.Fprintf(env.Stdout, "%-7s %s (fix: correct the file or the -D argument named)\n", resources.SeverityError, err)
		return ExitConfig
	}
	if cfg.Path() != "" {
		fmt.Fprintf(env.Stdout, "checking %s\n", cfg.Path())
	} else {
		fmt.Fprintln(env.Stdout, "checking: no configuration file found (--conf or $FLINK_CONF_DIR); -D overrides only")
	}
	l := &Launcher{Registry: env.Registry, Log: log, Getenv: env.Getenv}
	findings, trials := l.Check(ctx, cfg, c.resources)
	findings = dropOtherGroupsResources(findings, base, cfg)
	for _, t := range trials {
		if t.Devices != nil {
			fmt.Fprintf(env.Stdout, "%-7s %s\n", "ok", t)
		}
		if t.Node != nil {
			fmt.Fprintf(env.Stdout, "%-7s %s: ", "node", t.Resource)
			writeNodeAssignment(env.Stdout, "", t.Node)
		}
	}
	code := ExitOK
	errs, warns := 0, 0
	for _, f := range findings {
		fmt.Fprintln(env.Stdout, f.String())
		if f.Severity != resources.SeverityError {
			warns++
			continue
		}
		errs++
		switch {
		case !f.Host:
			code = ExitConfig
		case code == ExitOK:
			code = ExitDiscovery
		}
	}
	if c.strict && code == ExitOK && warns > 0 {
		code = ExitConfig
	}
	switch {
	case len(findings) == 0:
		fmt.Fprintln(env.Stdout, "no problems found")
	default:
		fmt.Fprintf(env.Stdout, "%d error(s), %d warning(s)\n", errs, warns)
	}
	return code
}

// dropOtherGroupsResources drops, from the findings of worker group
// view's check, the external-resource.<r>.* keys reported as set for a
// resource view does not list when another worker group of base lists r:
// they are that group's (am resources does the same). Without worker
// groups it returns findings as they are.
func dropOtherGroupsResources(findings []Finding, base, view *conf.Config) []Finding {
	names, err := base.WorkerGroupNames()
	if err != nil || len(names) == 0 {
		return findings
	}
	own := map[string]bool{}
	for _, r := range listedIn(view) {
		own[r] = true
	}
	others := map[string]bool{}
	for _, n := range names {
		for _, r := range listedIn(base.Group(n)) {
			others[r] = !own[r]
		}
	}
	out := findings[:0:0]
	for _, f := range findings {
		rest, ok := strings.CutPrefix(f.Key, resources.KeyPrefix)
		r, _, _ := strings.Cut(rest, ".")
		if ok && !f.Host && others[r] && strings.HasPrefix(f.Message, "keys are set for "+resources.KeyPrefix+r+".*") {
			continue
		}
		out = append(out, f)
	}
	return out
}

// listedIn reads external-resources (nil when unset, none or malformed).
func listedIn(cfg *conf.Config) []string {
	names, _ := resources.Names(cfg)
	return names
}
