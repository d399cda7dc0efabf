package amcli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/xres/xres/conf"
	"github.com/xres/xres/resources"
	"github.com/xres/xres/yarn"
	"github.com/xres/xres/yarn/amplan"
)

type problemJSON struct {
	Key      string `json:"key,omitempty"`
	Origin   string `json:"origin,omitempty"`
	Severity string `json:"severity"`
	Message  string `json:"message"`
	Fix      string `json:"fix,omitempty"`
	// Groups are the worker groups whose view of the configuration has the
	// problem; empty when every group's view has it (or there are none).
	Groups []string `json:"groups,omitempty"`
}

type specJSON struct {
	Name          string            `json:"name"`
	Amount        int64             `json:"amount"`
	YarnKey       string            `json:"yarn-config-key,omitempty"`
	KubernetesKey string            `json:"kubernetes-config-key,omitempty"`
	Factory       string            `json:"driver-factory,omitempty"`
	Params        map[string]string `json:"params,omitempty"`
	// Origins: every key behind the resource, its value and where it was
	// set (file:line, -D, a Spark key and its place).
	Origins []resources.ValueOrigin `json:"origins,omitempty"`
}

// clusterCheck is the profile checked against a live cluster.
type clusterCheck struct {
	Checked       bool           `json:"checked"`
	Skipped       string         `json:"skipped,omitempty"` // why not checked
	ResourceTypes []string       `json:"resource-types,omitempty"`
	LargestNode   *yarn.Resource `json:"largest-node,omitempty"` // per resource, the most any running NodeManager has
	Error         string         `json:"error,omitempty"`
}

// resourcesReport is what am resources prints. Without
// xres.worker-groups, Resources and Plan are the application's; with it,
// each group has its own in Groups (and Resources is empty, Plan unset).
type resourcesReport struct {
	Config    string        `json:"config"`
	Resources []specJSON    `json:"resources"`
	Plan      *amplan.Plan  `json:"plan,omitempty"`
	Groups    []groupJSON   `json:"groups,omitempty"`
	Warnings  []problemJSON `json:"warnings"`
	Errors    []problemJSON `json:"errors"`
	Cluster   clusterCheck  `json:"cluster"`

	NodeModes []nodeModeJSON `json:"node-modes,omitempty"` // nmmode.go

	workersFrom string // what the plan's base worker count comes from (text only)
	grouped     bool   // xres.worker-groups is set (text only)
}

// groupJSON is one worker group of xres.worker-groups as planned: Plan is
// unset when the group's configuration has errors (listed in the report's
// errors, labelled with the group).
type groupJSON struct {
	Name      string       `json:"name"`
	Command   []string     `json:"command,omitempty"` // xres.worker-group.<group>.command; unset: the command after --
	Plan      *amplan.Plan `json:"plan,omitempty"`
	Resources []specJSON   `json:"resources"`

	commandText string // the command as configured (text only)
	workersFrom string
}

// cmdResources: am resources [--conf FILE] [-D k=v]… [--workers N] [--strict] [--json]
func cmdResources(ctx context.Context, args []string, e *env) error {
	fs := flag.NewFlagSet("resources", flag.ContinueOnError)
	var c common
	c.register(fs, true)
	workers := fs.Int("workers", 0, "number of workers, at least 1 (default: from parallelism.default)")
	asJSON := fs.Bool("json", false, "print JSON")
	strict := fs.Bool("strict", false, "turn configuration warnings into errors")
	offline := fs.Bool("offline", false, "do not check against the cluster even when HADOOP_CONF_DIR is set")
	pos, rest, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 || len(rest) > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, append(pos, rest...)[0])
	}
	if err := checkWorkers(fs, *workers); err != nil {
		return err
	}
	if err := c.apply(e); err != nil {
		return err
	}
	cfg, err := c.load(e)
	if err != nil {
		return err
	}
	rep := buildResourcesReport(cfg, *workers, *strict, e.getenv)
	rep.Cluster = checkCluster(ctx, e, rep, *offline, clusterLogin(cfg))
	rep.NodeModes = nodeModes(ctx, e, rep, *offline)
	if rep.Cluster.Error != "" {
		rep.Errors = append(rep.Errors, problemJSON{Severity: string(resources.SeverityError), Message: rep.Cluster.Error})
	}
	if *asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return fmt.Errorf("write report: %w", err)
		}
	} else {
		printResources(e.stdout, rep)
		printNodeModes(e.stdout, rep.NodeModes)
	}
	if len(rep.Errors) > 0 {
		return configError{fmt.Errorf("%d configuration error(s), listed above", len(rep.Errors))}
	}
	return nil
}

func buildResourcesReport(cfg *conf.Config, workers int, strict bool, getenv func(string) string) resourcesReport {
	rep := resourcesReport{Config: cfg.Path(), Resources: []specJSON{}, Warnings: []problemJSON{}, Errors: []problemJSON{}}
	names, namesErr := cfg.WorkerGroupNames()
	grouped := namesErr != nil || names != nil
	rep.grouped = grouped
	var list []problemJSON
	index := map[string]int{}
	// add records p, once: a problem several groups' views share is listed
	// once with each of those groups, and one reported both as a warning
	// (Lint) and as an error (Parse in strict mode) once, as an error.
	add := func(group string, p problemJSON) {
		id := p.Key + "\x00" + p.Origin + "\x00" + p.Message
		if i, ok := index[id]; ok {
			if group != "" && !slices.Contains(list[i].Groups, group) {
				list[i].Groups = append(list[i].Groups, group)
			}
			if p.Severity == string(resources.SeverityError) {
				list[i].Severity = p.Severity
			}
			return
		}
		index[id] = len(list)
		if group != "" {
			p.Groups = []string{group}
		}
		list = append(list, p)
	}
	quiet := logrus.New()
	quiet.SetOutput(io.Discard)
	parseOpts := resources.ParseOptions{Side: resources.SideYarn, Strict: strict, Log: quiet}
	for _, p := range groupKeyProblems(cfg, names, namesErr) {
		add("", p)
	}
	if !grouped {
		for _, p := range resources.Lint(cfg) {
			add("", problemOf(p, p.Severity))
		}
		specs, err := resources.Parse(cfg, parseOpts)
		addParseError(func(p problemJSON) { add("", p) }, err, nil)
		if err == nil {
			for _, p := range launcherProblems(cfg, specs, getenv) {
				add("", problemOf(p, p.Severity))
			}
		}
		rep.Resources = specsJSON(cfg, "", specs)
		plan, err := amplan.PlanWorkers(cfg, specs, workers)
		if err != nil {
			addPlanError(func(p problemJSON) { add("", p) }, err)
		} else {
			rep.Plan = &plan
			for _, w := range plan.Warnings {
				add("", problemJSON{Severity: string(resources.SeverityWarning), Message: w})
			}
		}
		rep.workersFrom = "ceil(parallelism.default / taskmanager.numberOfTaskSlots)"
		if workers > 0 {
			rep.workersFrom = "--workers"
		}
	} else {
		// The application as the AM plans it: what is wrong with the
		// groups as a whole (the names, --workers). Each group's own
		// problems come from planning it alone below, so that they are
		// told apart and the other groups are still planned.
		_, err := amplan.PlanGroups(cfg, workers, func(v *conf.Config) ([]resources.Spec, error) { return resources.Parse(v, parseOpts) })
		for _, e := range splitJoined(err) {
			if e != nil && !slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(e.Error(), groupPrefix(n)) }) {
				addPlanError(func(p problemJSON) { add("", p) }, e)
			}
		}
		listed := map[string]bool{} // the resources some group lists
		for _, name := range names {
			for _, r := range listedResources(cfg.Group(name)) {
				listed[r] = true
			}
		}
		for _, name := range names {
			rep.Groups = append(rep.Groups, planGroupAlone(cfg, name, parseOpts, getenv, listed, func(p problemJSON) { add(name, p) }))
		}
	}
	// What the AM's settings load refuses beyond the resources and the
	// plan (amplan.Load: heartbeats, fault bounds, the AM container, token
	// renewal), and rest.bind-port as the AM binds by it: am resources
	// refuses what the AM would (issue 41).
	planned := !slices.ContainsFunc(list, func(p problemJSON) bool { return p.Severity == string(resources.SeverityError) })
	for _, p := range settingsProblems(cfg, workers, parseOpts, planned) {
		add("", p)
	}
	for _, p := range list {
		if len(names) > 1 && len(p.Groups) == len(names) {
			p.Groups = nil // every group's: the shared keys
		}
		if p.Severity == string(resources.SeverityError) {
			rep.Errors = append(rep.Errors, p)
		} else {
			rep.Warnings = append(rep.Warnings, p)
		}
	}
	if strict {
		for _, w := range rep.Warnings {
			w.Severity = string(resources.SeverityError)
			rep.Errors = append(rep.Errors, w)
		}
		rep.Warnings = []problemJSON{}
	}
	return rep
}

// settingsProblems are the AM's settings errors: rest.bind-port checked
// as the AM's tracking server reads it (conf.ParsePorts), and, when the
// resources and the plan have no error (planned; else amplan.Load would only
// repeat theirs), the first error of amplan.Load, the AM's own settings load,
// which am submit runs too.
func settingsProblems(cfg *conf.Config, workers int, opts resources.ParseOptions, planned bool) []problemJSON {
	var out []problemJSON
	if spec, ok := cfg.Get(conf.RestBindPort.Key); ok {
		if _, err := conf.ParsePorts(spec); err != nil {
			out = append(out, problemJSON{Key: conf.RestBindPort.Key, Origin: cfg.Origin(conf.RestBindPort.Key),
				Severity: string(resources.SeverityError), Message: err.Error()})
		}
	}
	if planned {
		if _, err := amplan.Load(cfg, workers, func(v *conf.Config) ([]resources.Spec, error) { return resources.Parse(v, opts) }); err != nil {
			addPlanError(func(p problemJSON) { out = append(out, p) }, err)
		}
	}
	return out
}

// groupPrefix is how amplan.PlanGroups starts a group's error.
func groupPrefix(name string) string { return "worker group " + name + ": " }

// planGroupAlone plans worker group name alone (am.PlanGroup), so that
// its problems are its own (what its launchers would refuse among them:
// launcherProblems): each goes to add, and the group is listed
// with its resources and, when it has no errors, its plan and command. listed are the resources any group lists: the shared
// keys of a resource another group lists are no problem of this one.
func planGroupAlone(cfg *conf.Config, name string, opts resources.ParseOptions, getenv func(string) string, listed map[string]bool, add func(problemJSON)) groupJSON {
	view := cfg.Group(name)
	own := listedResources(view)
	for _, p := range resources.Lint(view) {
		p = groupProblemKey(cfg, name, p)
		if r, ok := resourceOfKey(p.Key); ok && !slices.Contains(own, r) && listed[r] {
			continue // external-resource.<r>.*, shared with the groups that list r
		}
		add(problemOf(p, p.Severity))
	}
	var specs []resources.Spec
	var parseErr error
	planned, err := amplan.PlanGroup(cfg, name, func(v *conf.Config) ([]resources.Spec, error) {
		specs, parseErr = resources.Parse(v, opts)
		if parseErr == nil {
			for _, p := range launcherProblems(v, specs, getenv) {
				add(problemOf(p, p.Severity))
			}
		}
		return specs, parseErr
	})
	g := groupJSON{Name: name, Resources: specsJSON(view, name, specs)}
	g.workersFrom = "ceil(parallelism.default / taskmanager.numberOfTaskSlots)"
	if k := conf.WorkerGroupWorkers.For(name).Key; hasKey(cfg, k) {
		g.workersFrom = k
	}
	switch {
	case parseErr != nil:
		addParseError(add, parseErr, func(p resources.Problem) resources.Problem { return groupProblemKey(cfg, name, p) })
	case err != nil:
		for _, e := range splitJoined(err) {
			addPlanError(add, e)
		}
	default:
		p := planned.Plan
		g.Plan = &p
		if planned.Command != nil {
			// Shown, not run: the secrets of its flags hidden.
			g.Command = conf.RedactArgList(planned.Command)
			key := conf.WorkerGroupCommand.For(name).Key
			text, _ := cfg.Get(key)
			g.commandText = conf.RedactValue(key, text)
		}
		for _, w := range p.Warnings {
			add(problemJSON{Severity: string(resources.SeverityWarning), Message: w})
		}
	}
	return g
}

// listedResources reads external-resources (nil when unset, none or
// malformed: Lint reports it).
func listedResources(cfg *conf.Config) []string {
	raw, _ := cfg.Get(resources.KeyList)
	if raw == resources.None {
		return nil
	}
	names, _ := conf.SplitList(raw)
	return names
}

// resourceOfKey is r of a plain external-resource.<r>.<suffix> key.
func resourceOfKey(key string) (string, bool) {
	rest, ok := strings.CutPrefix(key, resources.KeyPrefix)
	if !ok {
		return "", false
	}
	r, _, ok := strings.Cut(rest, ".")
	return r, ok
}

func hasKey(cfg *conf.Config, key string) bool {
	_, set := cfg.Get(key)
	return set
}

// groupKeyProblems warns of xres.worker-group.<group>.* keys that name no
// group of xres.worker-groups (a misspelt group, or the list unset):
// nothing reads them. A bad list itself is reported by amplan.PlanGroups.
func groupKeyProblems(cfg *conf.Config, names []string, namesErr error) []problemJSON {
	if namesErr != nil {
		return nil
	}
	var out []problemJSON
	for _, k := range cfg.Keys() {
		rest, ok := strings.CutPrefix(k, conf.GroupPrefix)
		if !ok {
			continue
		}
		name, _, _ := strings.Cut(rest, ".")
		if slices.Contains(names, name) {
			continue
		}
		p := problemJSON{Key: k, Origin: cfg.Origin(k), Severity: string(resources.SeverityWarning)}
		if names == nil {
			p.Message = fmt.Sprintf("%s is not set, so there is no worker group %s; the key is ignored", conf.WorkerGroups.Key, name)
			p.Fix = fmt.Sprintf("set %s: %s, or remove the key", conf.WorkerGroups.Key, name)
		} else {
			p.Message = fmt.Sprintf("%s lists no group %s (it lists %s); the key is ignored", conf.WorkerGroups.Key, name, strings.Join(names, ", "))
		}
		out = append(out, p)
	}
	return out
}

// groupProblemKey names, in a problem of group name's view, the key as the
// user wrote it: xres.worker-group.<name>.<key> when the value came from
// there.
func groupProblemKey(cfg *conf.Config, name string, p resources.Problem) resources.Problem {
	if gk := conf.GroupKey(name, p.Key); p.Key != "" && hasKey(cfg, gk) && cfg.Origin(gk) == p.Origin {
		p.Key = gk
	}
	return p
}

func problemOf(p resources.Problem, sev resources.Severity) problemJSON {
	return problemJSON{Key: p.Key, Origin: p.Origin, Severity: string(sev), Message: p.Message, Fix: p.Fix}
}

// addParseError adds resources.Parse's problems (fix, when not nil,
// rewrites each first).
func addParseError(add func(problemJSON), err error, fix func(resources.Problem) resources.Problem) {
	var ce *resources.ConfigError
	switch {
	case errors.As(err, &ce):
		for _, p := range ce.Problems {
			if fix != nil {
				p = fix(p)
			}
			// In strict mode every warning is refused: report it as an error.
			add(problemOf(p, resources.SeverityError))
		}
	case err != nil:
		add(problemJSON{Severity: string(resources.SeverityError), Message: err.Error()})
	}
}

// addPlanError adds each of a plan's errors.
func addPlanError(add func(problemJSON), err error) {
	for _, e := range splitJoined(err) {
		add(problemJSON{Severity: string(resources.SeverityError), Message: strings.TrimPrefix(e.Error(), amplan.ErrBadConfig.Error()+": ")})
	}
}

// specsJSON lists specs with where their values come from; in group
// name's view (name != ""), a value set for the group is shown under the
// key it was set as (xres.worker-group.<name>.…).
func specsJSON(view *conf.Config, name string, specs []resources.Spec) []specJSON {
	out := []specJSON{}
	for _, s := range specs {
		origins := resources.Origins(view, s.Name)
		for i, o := range origins {
			if gk := conf.GroupKey(name, o.Key); name != "" && hasKey(view, gk) && view.Origin(gk) == o.Origin {
				origins[i].Key = gk
			}
		}
		out = append(out, specJSON{Name: s.Name, Amount: s.Amount, YarnKey: s.YarnKey,
			KubernetesKey: s.K8sKey, Factory: s.Factory, Params: shownParams(s), Origins: origins})
	}
	return out
}

// shownParams are s's params as am resources shows them: no secret
// (conf.RedactValue of each param's whole key).
func shownParams(s resources.Spec) map[string]string {
	if s.Params == nil {
		return nil
	}
	out := make(map[string]string, len(s.Params))
	for k, v := range s.Params {
		out[k] = conf.RedactValue(conf.ExternalResourceParam.For(s.Name, k).Key, v)
	}
	return out
}

// splitJoined undoes one errors.Join so that each problem is listed alone
// (errors wrapping several causes with %w are kept whole).
func splitJoined(err error) []error {
	if err == nil {
		return nil
	}
	j, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return []error{err}
	}
	parts := j.Unwrap()
	msgs := make([]string, len(parts))
	for i, p := range parts {
		msgs[i] = p.Error()
	}
	if strings.Join(msgs, "\n") != err.Error() {
		return []error{err}
	}
	return parts
}

func printResources(w io.Writer, rep resourcesReport) {
	cfgName := rep.Config
	if cfgName == "" {
		cfgName = "none (Flink defaults)"
	}
	fmt.Fprintf(w, "configuration: %s\n", cfgName)
	switch {
	case !rep.grouped:
		printSpecs(w, "", rep.Resources)
		if p := rep.Plan; p != nil {
			printPlan(w, "", p, rep.workersFrom)
		}
	case len(rep.Groups) == 0:
		fmt.Fprintf(w, "worker groups (%s): not read (see errors)\n", conf.WorkerGroups.Key)
	default:
		names := make([]string, len(rep.Groups))
		for i, g := range rep.Groups {
			names[i] = g.Name
		}
		fmt.Fprintf(w, "worker groups (%s): %s\n", conf.WorkerGroups.Key, strings.Join(names, ", "))
	}
	for _, g := range rep.Groups {
		fmt.Fprintf(w, "worker group %s:\n", g.Name)
		if g.Command != nil {
			fmt.Fprintf(w, "  command: %s (%s)\n", g.commandText, conf.WorkerGroupCommand.For(g.Name).Key)
		}
		printSpecs(w, "  ", g.Resources)
		if g.Plan != nil {
			printPlan(w, "  ", g.Plan, g.workersFrom)
		} else {
			fmt.Fprintln(w, "  workers: not planned (see errors)")
		}
	}
	for _, sec := range []struct {
		title string
		list  []problemJSON
	}{{"warnings", rep.Warnings}, {"errors", rep.Errors}} {
		if len(sec.list) == 0 {
			continue
		}
		fmt.Fprintf(w, "%s:\n", sec.title)
		for _, p := range sec.list {
			fmt.Fprintf(w, "  - %s\n", problemText(p))
		}
	}
	switch c := rep.Cluster; {
	case !c.Checked:
		fmt.Fprintf(w, "cluster check: skipped (%s)\n", c.Skipped)
	case c.Error != "":
		fmt.Fprintln(w, "cluster check: FAILED (see errors)")
	default:
		fmt.Fprintf(w, "cluster check: ok (resource types %s; largest NodeManager %s)\n",
			strings.Join(c.ResourceTypes, ", "), c.LargestNode)
	}
}

// printSpecs writes the external resources and where their values come
// from, each line after indent.
func printSpecs(w io.Writer, indent string, specs []specJSON) {
	if len(specs) == 0 {
		fmt.Fprintf(w, "%sexternal resources: none\n", indent)
		return
	}
	fmt.Fprintf(w, "%sexternal resources:\n", indent)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, s := range specs {
		yk := s.YarnKey
		if yk == "" {
			yk = "(not asked from YARN)"
		}
		f := s.Factory
		if f == "" {
			f = "(no driver: workers get no device infos)"
		}
		fmt.Fprintf(tw, "%s  %s\tamount %d\tyarn.config-key %s\tdriver %s\n", indent, s.Name, s.Amount, yk, f)
	}
	tw.Flush()
	for _, s := range specs {
		if len(s.Origins) == 0 {
			continue
		}
		fmt.Fprintf(w, "%swhere %s's values come from:\n", indent, s.Name)
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		for _, o := range s.Origins {
			fmt.Fprintf(tw, "%s  %s\t%s = %s\n", indent, o.Origin, o.Key, o.Value)
		}
		tw.Flush()
	}
}

// printPlan writes a worker plan: the count and where it comes from (how),
// the reactive minimum, slots, failures tolerated and the container
// profile, each line after indent.
func printPlan(w io.Writer, indent string, p *amplan.Plan, how string) {
	fmt.Fprintf(w, "%sworkers: %d (%d from %s)\n", indent, p.Workers, p.BaseWorkers, how)
	if p.Spares > 0 {
		fmt.Fprintf(w, "%sstandby spares: %d (%s): each holds a container and its devices, runs no command until a worker fails, then takes its rank\n",
			indent, p.Spares, conf.RedundantWorkers.Key)
	}
	if p.Reactive {
		fmt.Fprintf(w, "%sscheduler-mode: reactive: runs once %d of the %d workers run (%s), takes the others as YARN grants them\n",
			indent, p.MinWorkers, p.Workers, conf.ReactiveMinWorkers.Key)
	}
	fmt.Fprintf(w, "%sslots per worker: %d\n", indent, p.SlotsPerWorker)
	fmt.Fprintf(w, "%sfailed containers tolerated: %d (yarn.maximum-failed-containers)\n", indent, p.MaxFailedContainers)
	fmt.Fprintf(w, "%sYARN container profile per worker: %s\n", indent, p.Profile)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "%s  memory-mb\t%d\n%s  vcores\t%d\n", indent, p.Profile.MemoryMB, indent, p.Profile.VCores)
	for _, k := range slices.Sorted(maps.Keys(p.Profile.Extra)) {
		fmt.Fprintf(tw, "%s  %s\t%d\n", indent, k, p.Profile.Extra[k])
	}
	tw.Flush()
}

// clusterLogin is the Kerberos login am submit uses, from the same keys
// (security.kerberos.login.keytab and .principal, krb5-conf.path): the
// cluster check logs in as the submission will.
func clusterLogin(cfg *conf.Config) *login {
	l := &login{}
	l.Keytab, _ = cfg.String(conf.KerberosLoginKeytab)
	l.Principal, _ = cfg.String(conf.KerberosLoginPrincipal)
	l.Krb5Conf, _ = cfg.String(conf.KerberosKrb5Conf)
	return l
}

// checkCluster checks the profile against the cluster of $HADOOP_CONF_DIR:
// every key must be a resource type, and fit the largest running
// NodeManager (the YARN counterpart of a Kubernetes cluster without the
// device plugin).
func checkCluster(ctx context.Context, e *env, rep resourcesReport, offline bool, lg *login) clusterCheck {
	type profile struct {
		group string
		plan  *amplan.Plan
		specs []specJSON
	}
	var profiles []profile
	if rep.Plan != nil {
		profiles = append(profiles, profile{plan: rep.Plan, specs: rep.Resources})
	}
	for _, g := range rep.Groups {
		if g.Plan != nil {
			profiles = append(profiles, profile{group: g.Name, plan: g.Plan, specs: g.Resources})
		}
	}
	switch {
	case offline:
		return clusterCheck{Skipped: "--offline"}
	case len(profiles) == 0:
		return clusterCheck{Skipped: "no valid profile"}
	case e.getenv("HADOOP_CONF_DIR") == "" && e.getenv("YARN_CONF_DIR") == "":
		return clusterCheck{Skipped: "no cluster: HADOOP_CONF_DIR is not set"}
	case e.deps.rm == nil:
		return clusterCheck{Skipped: "the YARN client is not wired"}
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	rm, _, closeRM, err := e.deps.rm(cctx, e.getenv, e.log, lg)
	if err != nil {
		return clusterCheck{Checked: true, Error: fmt.Sprintf("cluster check: %v", err)}
	}
	defer closeRM()
	types, err := rm.ResourceTypes(cctx)
	if err != nil {
		return clusterCheck{Checked: true, Error: fmt.Sprintf("cluster check: get resource types: %v", err)}
	}
	nodes, err := rm.Nodes(cctx, "RUNNING")
	if err != nil {
		return clusterCheck{Checked: true, Error: fmt.Sprintf("cluster check: list nodes: %v", err)}
	}
	out := clusterCheck{Checked: true, ResourceTypes: typeNames(types)}
	limits := amplan.ClusterLimits{Types: types, MaxName: "the largest NodeManager"}
	largest := yarn.Resource{Extra: map[string]int64{}}
	for _, n := range nodes {
		for k, v := range resourceMap(n.Capability) {
			switch k {
			case "memory-mb":
				largest.MemoryMB = max(largest.MemoryMB, v)
			case "vcores":
				largest.VCores = max(largest.VCores, v)
			default:
				largest.Extra[k] = max(largest.Extra[k], v)
			}
		}
	}
	out.LargestNode = &largest
	limits.Max = largest
	if len(nodes) == 0 {
		out.Error = "cluster check: no running NodeManager"
		return out
	}
	var errs []string
	for _, p := range profiles {
		owners := map[string]string{}
		for _, s := range p.specs {
			if s.YarnKey != "" {
				owners[s.YarnKey] = s.Name
			}
		}
		if err := amplan.CheckProfile(p.plan.Profile, limits, owners); err != nil {
			if p.group != "" {
				errs = append(errs, groupPrefix(p.group)+err.Error())
			} else {
				errs = append(errs, err.Error())
			}
		}
	}
	out.Error = strings.Join(errs, "; ")
	return out
}

func problemText(p problemJSON) string {
	text := resources.Problem{Key: p.Key, Origin: p.Origin, Message: p.Message, Fix: p.Fix}.String()
	switch len(p.Groups) {
	case 0:
		return text
	case 1:
		return groupPrefix(p.Groups[0]) + text
	}
	return "worker groups " + strings.Join(p.Groups, ", ") + ": " + text
}
