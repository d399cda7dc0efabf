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
	"github.com/xres/xres/yarn/am"
)

type problemJSON struct {
	Key      string `json:"key,omitempty"`
	Origin   string `json:"origin,omitempty"`
	Severity string `json:"severity"`
	Message  string `json:"message"`
	Fix      string `json:"fix,omitempty"`
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
	Checked       bool         `json:"checked"`
	Skipped       string       `json:"skipped,omitempty"` // why not checked
	ResourceTypes []string     `json:"resource-types,omitempty"`
	LargestNode   *am.Resource `json:"largest-node,omitempty"` // per resource, the most any running NodeManager has
	Error         string       `json:"error,omitempty"`
}

type resourcesReport struct {
	Config    string        `json:"config"`
	Resources []specJSON    `json:"resources"`
	Plan      *am.Plan      `json:"plan,omitempty"`
	Warnings  []problemJSON `json:"warnings"`
	Errors    []problemJSON `json:"errors"`
	Cluster   clusterCheck  `json:"cluster"`
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
	rep := buildResourcesReport(cfg, *workers, *strict)
	rep.Cluster = checkCluster(ctx, e, rep, *offline)
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
	}
	if len(rep.Errors) > 0 {
		return configError{fmt.Errorf("%d configuration error(s), listed above", len(rep.Errors))}
	}
	return nil
}

func buildResourcesReport(cfg *conf.Config, workers int, strict bool) resourcesReport {
	rep := resourcesReport{Config: cfg.Path(), Resources: []specJSON{}, Warnings: []problemJSON{}, Errors: []problemJSON{}}
	seen := map[string]bool{}
	add := func(p problemJSON) {
		id := p.Severity + "\x00" + p.Key + "\x00" + p.Message
		if seen[id] {
			return
		}
		seen[id] = true
		if p.Severity == string(resources.SeverityError) {
			rep.Errors = append(rep.Errors, p)
		} else {
			rep.Warnings = append(rep.Warnings, p)
		}
	}
	for _, p := range resources.Lint(cfg) {
		add(problemJSON{Key: p.Key, Origin: p.Origin, Severity: string(p.Severity), Message: p.Message, Fix: p.Fix})
	}
	quiet := logrus.New()
	quiet.SetOutput(io.Discard)
	specs, err := resources.Parse(cfg, resources.ParseOptions{Side: resources.SideYarn, Strict: strict, Log: quiet})
	var ce *resources.ConfigError
	switch {
	case errors.As(err, &ce):
		for _, p := range ce.Problems {
			// In strict mode every warning is refused: report it as an error.
			add(problemJSON{Key: p.Key, Origin: p.Origin, Severity: string(resources.SeverityError), Message: p.Message, Fix: p.Fix})
		}
	case err != nil:
		add(problemJSON{Severity: string(resources.SeverityError), Message: err.Error()})
	}
	for _, s := range specs {
		rep.Resources = append(rep.Resources, specJSON{Name: s.Name, Amount: s.Amount, YarnKey: s.YarnKey,
			KubernetesKey: s.K8sKey, Factory: s.Factory, Params: s.Params, Origins: resources.Origins(cfg, s.Name)})
	}
	plan, err := am.PlanWorkers(cfg, specs, workers)
	if err != nil {
		for _, e := range splitJoined(err) {
			add(problemJSON{Severity: string(resources.SeverityError), Message: strings.TrimPrefix(e.Error(), am.ErrBadConfig.Error()+": ")})
		}
	} else {
		rep.Plan = &plan
		for _, w := range plan.Warnings {
			add(problemJSON{Severity: string(resources.SeverityWarning), Message: w})
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

// splitJoined undoes one errors.Join so that each problem is listed alone
// (errors wrapping several causes with %w are kept whole).
func splitJoined(err error) []error {
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
	if len(rep.Resources) == 0 {
		fmt.Fprintln(w, "external resources: none")
	} else {
		fmt.Fprintln(w, "external resources:")
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		for _, s := range rep.Resources {
			yk := s.YarnKey
			if yk == "" {
				yk = "(not asked from YARN)"
			}
			f := s.Factory
			if f == "" {
				f = "(no driver: workers get no device infos)"
			}
			fmt.Fprintf(tw, "  %s\tamount %d\tyarn.config-key %s\tdriver %s\n", s.Name, s.Amount, yk, f)
		}
		tw.Flush()
		for _, s := range rep.Resources {
			if len(s.Origins) == 0 {
				continue
			}
			fmt.Fprintf(w, "where %s's values come from:\n", s.Name)
			tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			for _, o := range s.Origins {
				fmt.Fprintf(tw, "  %s\t%s = %s\n", o.Origin, o.Key, o.Value)
			}
			tw.Flush()
		}
	}
	if p := rep.Plan; p != nil {
		how := "ceil(parallelism.default / taskmanager.numberOfTaskSlots)"
		fmt.Fprintf(w, "workers: %d (%d from %s + %d spares)\n", p.Workers, p.BaseWorkers, how, p.Spares)
		fmt.Fprintf(w, "slots per worker: %d\n", p.SlotsPerWorker)
		fmt.Fprintf(w, "failed containers tolerated: %d (yarn.maximum-failed-containers)\n", p.MaxFailedContainers)
		fmt.Fprintf(w, "YARN container profile per worker: %s\n", p.Profile)
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintf(tw, "  memory-mb\t%d\n  vcores\t%d\n", p.Profile.MemoryMB, p.Profile.VCores)
		for _, k := range slices.Sorted(maps.Keys(p.Profile.Extra)) {
			fmt.Fprintf(tw, "  %s\t%d\n", k, p.Profile.Extra[k])
		}
		tw.Flush()
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

// checkCluster checks the profile against the cluster of $HADOOP_CONF_DIR:
// every key must be a resource type, and fit the largest running
// NodeManager (the YARN counterpart of a Kubernetes cluster without the
// device plugin).
func checkCluster(ctx context.Context, e *env, rep resourcesReport, offline bool) clusterCheck {
	switch {
	case offline:
		return clusterCheck{Skipped: "--offline"}
	case rep.Plan == nil:
		return clusterCheck{Skipped: "no valid profile"}
	case e.getenv("HADOOP_CONF_DIR") == "" && e.getenv("YARN_CONF_DIR") == "":
		return clusterCheck{Skipped: "no cluster: HADOOP_CONF_DIR is not set"}
	case e.deps.rm == nil:
		return clusterCheck{Skipped: "the YARN client is not wired"}
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	rm, _, closeRM, err := e.deps.rm(cctx, e.getenv, e.log, nil)
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
	limits := am.ClusterLimits{Types: types, MaxName: "the largest NodeManager"}
	largest := am.Resource{Extra: map[string]int64{}}
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
	owners := map[string]string{}
	for _, s := range rep.Resources {
		if s.YarnKey != "" {
			owners[s.YarnKey] = s.Name
		}
	}
	if len(nodes) == 0 {
		out.Error = "cluster check: no running NodeManager"
	} else if err := am.CheckProfile(rep.Plan.Profile, limits, owners); err != nil {
		out.Error = err.Error()
	}
	return out
}

func problemText(p problemJSON) string {
	return resources.Problem{Key: p.Key, Origin: p.Origin, Message: p.Message, Fix: p.Fix}.String()
}
