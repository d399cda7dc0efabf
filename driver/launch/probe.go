package launch

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/xres/xres/driver"
	"github.com/xres/xres/driver/coord"
	"github.com/xres/xres/resources"
)

// ProbeReport is what `container-launcher probe --json` prints: per
// configured resource, what a launcher would get now, and who holds what.
type ProbeReport struct {
	Resources []ProbeResource `json:"resources"`
	// Error is set when the configuration itself could not be read.
	Error string `json:"error,omitempty"`
	// ExitCode is the probe's exit code: 0, or the code a launcher would
	// exit with for the first failing resource.
	ExitCode int `json:"exit_code"`
}

// ProbeResource is one resource in a ProbeReport.
type ProbeResource struct {
	Name         string                 `json:"name"`
	Amount       int64                  `json:"amount"`
	YarnKey      string                 `json:"yarn_key,omitempty"`
	Factory      string                 `json:"factory,omitempty"` // as configured
	Driver       string                 `json:"driver,omitempty"`  // the registry's primary name
	Vendor       string                 `json:"vendor,omitempty"`
	Devices      []resources.Properties `json:"devices"` // what a launcher would get now
	Env          map[string]string      `json:"env,omitempty"`
	Coordination ProbeCoordination      `json:"coordination"`
	// Node is the host's mode under YARN (counted, plugin, isolated,
	// Docker) and what the launcher does there, for drivers that read
	// the NodeManager's assignment.
	Node *driver.NodeAssignment `json:"node,omitempty"`
	// NUMA is where the devices sit (mempolicy.go); nil when the host
	// does not tell.
	NUMA     *ProbeNUMA `json:"numa,omitempty"`
	Error    string     `json:"error,omitempty"`
	ExitCode int        `json:"exit_code"` // the launcher's code for this resource
}

// ProbeCoordination is a resource's host coordination and its holders.
type ProbeCoordination struct {
	Mode      string        `json:"mode"` // xres, script (Flink's), off, "" (unknown: a plugin)
	StateFile string        `json:"state_file,omitempty"`
	Holders   []ProbeHolder `json:"holders"`
	// Quarantined: devices granted to no one (probequarantine.go).
	Quarantined []ProbeQuarantine `json:"quarantined,omitempty"`
	Error       string            `json:"error,omitempty"`
}

// ProbeHolder is one recorded reservation of the resource.
type ProbeHolder struct {
	Device  string    `json:"device"`
	PID     int       `json:"pid"`
	Alive   bool      `json:"alive"`
	Program string    `json:"program,omitempty"`
	Parent  string    `json:"parent,omitempty"` // the whole device a partition (MIG instance) belongs to
	Since   time.Time `json:"since"`
}

// Probe discovers every spec in a dry run (nothing is reserved) and reads
// the coordination state. It never fails as a whole: each resource carries
// its own error.
func (l *Launcher) Probe(ctx context.Context, specs []resources.Spec) ProbeReport {
	dry := *l
	dry.DryRun = true
	rep := ProbeReport{Resources: []ProbeResource{}}
	for _, spec := range specs {
		pr := ProbeResource{Name: spec.Name, Amount: spec.Amount, YarnKey: spec.YarnKey, Factory: spec.Factory,
			Devices: []resources.Properties{}, Coordination: ProbeCoordination{Holders: []ProbeHolder{}}}
		canonical := ""
		if dry.Registry != nil && spec.Factory != "" {
			canonical, _ = dry.Registry.Canonical(spec.Factory)
		}
		pr.Driver = canonical
		pr.Node = dry.nodeAssignment(ctx, spec)
		res, err := dry.Acquire(ctx, []resources.Spec{spec})
		switch {
		case err != nil:
			pr.Error = err.Error()
			pr.ExitCode = ExitCode(err)
		case len(res.Grants) == 0:
			pr.Error = "no driver factory configured (" + resources.Key(spec.Name, resources.SuffixFactory) + "): the worker would get no device infos"
		default:
			g := res.Grants[0]
			pr.Vendor = g.VendorName()
			pr.Devices = resources.PropertiesOf(g.Devices)
			pr.NUMA = probeNUMA(g)
			pr.Env = grantEnv(res.Grants, "")
			delete(pr.Env, EnvResources)
		}
		if res != nil {
			_ = res.Release(ctx) // a dry run holds nothing; a plugin that reserved anyway is undone
		}
		c := dry.coordinationOf(spec)
		pr.Coordination.Mode, pr.Coordination.StateFile = c.Mode, c.StateFile
		var holders []ProbeHolder
		var herr error
		switch c.Mode {
		case driver.CoordXres:
			holders, herr = readHolders(c.StateFile, spec.Name)
			if herr == nil {
				pr.Coordination.Quarantined, herr = readQuarantined(c.StateFile, spec.Name)
			}
			if c.FlinkFile != "" && herr == nil {
				// The GPUs Flink's script holds beside them.
				var fh []ProbeHolder
				fh, herr = readFlinkHolders(c.FlinkFile)
				holders = append(holders, fh...)
			}
		case driver.CoordScript:
			holders, herr = readFlinkHolders(c.StateFile)
		}
		if herr != nil {
			pr.Coordination.Error = herr.Error()
		}
		pr.Coordination.Holders = append(pr.Coordination.Holders, holders...)
		if rep.ExitCode == 0 && pr.ExitCode != 0 {
			rep.ExitCode = pr.ExitCode
		}
		rep.Resources = append(rep.Resources, pr)
	}
	return rep
}

func (l *Launcher) getenv() func(string) string {
	if l.Getenv == nil {
		return os.Getenv
	}
	return l.Getenv
}

// readHolders lists the reservations of resource in a state file; a file
// that does not exist holds nothing.
func readHolders(stateFile, resource string) ([]ProbeHolder, error) {
	if _, err := os.Stat(stateFile); os.IsNotExist(err) {
		return nil, nil
	}
	h, err := coord.OpenState(stateFile, nil)
	if err != nil {
		return nil, err
	}
	all, err := h.Holders()
	if err != nil {
		return nil, err
	}
	var out []ProbeHolder
	for _, e := range all {
		if e.Resource != resource || e.Quarantine != nil {
			continue
		}
		out = append(out, ProbeHolder{Device: e.Key, PID: e.PID, Alive: e.Alive, Program: e.Program, Parent: e.Parent, Since: e.Since})
	}
	return out, nil
}

// readFlinkHolders lists the entries of a Flink coordination file: one
// "<index> <owner pid>" line per GPU held. Liveness is by pid alone, as
// Flink's script judges it.
func readFlinkHolders(file string) ([]ProbeHolder, error) {
	lines, err := coord.ReadFlinkFile(file)
	if err != nil {
		return nil, err
	}
	return flinkHolders(lines, pidAlive), nil
}

// parseFlinkHolders reads the lines of a Flink coordination file named
// file, with alive judging each owner.
func parseFlinkHolders(file string, data []byte, alive func(int) bool) ([]ProbeHolder, error) {
	lines, err := coord.ParseFlinkFile(file, data)
	if err != nil {
		return nil, err
	}
	return flinkHolders(lines, alive), nil
}

func flinkHolders(lines []coord.FlinkLine, alive func(int) bool) []ProbeHolder {
	if len(lines) == 0 {
		return nil
	}
	out := make([]ProbeHolder, len(lines))
	for i, l := range lines {
		out[i] = ProbeHolder{Device: l.Index, PID: l.PID, Alive: alive(l.PID)}
	}
	return out
}

func pidAlive(pid int) bool {
	_, err := os.Stat(fmt.Sprintf("/proc/%d", pid))
	return err == nil
}

// runProbe is `container-launcher probe`.
func runProbe(ctx context.Context, args []string, env Env) int {
	fs := flag.NewFlagSet("container-launcher probe", flag.ContinueOnError)
	var c common
	c.register(fs)
	asJSON := fs.Bool("json", false, "print JSON")
	clear := fs.String("clear", "", "end the quarantine of this device (its key: a GPU's uuid)")
	if _, err := parse(fs, args, probeUsageText, env.Stdout); err != nil {
		return fail(env.Stderr, err)
	}
	if fs.NArg() > 0 {
		return fail(env.Stderr, classifyf(ErrUsage, "probe takes no arguments, got %q", fs.Args()))
	}
	log, err := newLogger(env.Stderr, c.logLevel, "warn", env.Getenv)
	if err != nil {
		return fail(env.Stderr, err)
	}
	var rep ProbeReport
	loaded, err := env.Load(c.config(env, log))
	var specs []resources.Spec
	if err == nil {
		specs, err = selectSpecs(loaded.Specs, c.resources)
	}
	if err != nil {
		rep = ProbeReport{Resources: []ProbeResource{}, Error: err.Error(), ExitCode: ExitCode(err)}
	} else {
		l := &Launcher{Registry: env.Registry, Log: log, Getenv: env.Getenv, DiscoverTimeout: 30 * time.Second,
			DriverTimeout: loaded.DiscoveryTimeout}
		if *clear != "" {
			if err := l.clearQuarantine(ctx, specs, *clear, env.Stdout); err != nil {
				return fail(env.Stderr, err)
			}
			return ExitOK
		}
		rep = l.Probe(ctx, specs)
	}
	if *asJSON {
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return fail(env.Stderr, fmt.Errorf("write probe report: %w", err))
		}
	} else {
		w := bufio.NewWriter(env.Stdout) // one write, not one per cell
		writeProbeText(w, rep)
		if err := w.Flush(); err != nil {
			return fail(env.Stderr, fmt.Errorf("write probe report: %w", err))
		}
	}
	return rep.ExitCode
}

// writeProbeText prints the human form of a probe report.
func writeProbeText(w io.Writer, rep ProbeReport) {
	if rep.Error != "" {
		fmt.Fprintf(w, "configuration: %s\n", rep.Error)
		return
	}
	if len(rep.Resources) == 0 {
		fmt.Fprintln(w, "no external resources configured (external-resources is unset, empty or none)")
		return
	}
	for i, r := range rep.Resources {
		if i > 0 {
			fmt.Fprintln(w)
		}
		driverName := r.Factory
		if r.Driver != "" && r.Driver != r.Factory {
			driverName += " (" + r.Driver + ")"
		}
		if driverName == "" {
			driverName = "none"
		}
		fmt.Fprintf(w, "%s: amount %d, driver %s", r.Name, r.Amount, driverName)
		if r.YarnKey != "" {
			fmt.Fprintf(w, ", yarn %s", r.YarnKey)
		}
		fmt.Fprintln(w)
		if r.Error != "" {
			fmt.Fprintf(w, "  error (exit %d): %s\n", r.ExitCode, r.Error)
		}
		if len(r.Devices) > 0 {
			fmt.Fprintln(w, "  would get:")
			tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
			keys := propertyKeys(r.Devices)
			fmt.Fprintf(tw, "    %s\n", strings.ToUpper(strings.Join(keys, "\t")))
			for _, d := range r.Devices {
				vals := make([]string, len(keys))
				for j, k := range keys {
					vals[j] = d[k]
				}
				fmt.Fprintf(tw, "    %s\n", strings.Join(vals, "\t"))
			}
			_ = tw.Flush()
		}
		if len(r.Env) > 0 {
			for _, k := range sortedKeys(r.Env) {
				if strings.HasPrefix(k, EnvResourcePfx) && !strings.HasSuffix(k, "_INDEX") && !strings.HasSuffix(k, "_AMOUNT") {
					continue // the device table shows them
				}
				fmt.Fprintf(w, "  env %s=%s\n", k, r.Env[k])
			}
		}
		writeNodeAssignment(w, "  ", r.Node)
		writeProbeNUMA(w, "  ", r.NUMA, r.Node)
		co := r.Coordination
		switch co.Mode {
		case driver.CoordXres:
			fmt.Fprintf(w, "  coordination: on, state file %s, %d held\n", co.StateFile, len(co.Holders))
		case driver.CoordScript:
			fmt.Fprintf(w, "  coordination: by the discovery script, file %s\n", co.StateFile)
		case driver.CoordOff:
			fmt.Fprintln(w, "  coordination: OFF: every worker on this host gets the same first devices")
		default:
			fmt.Fprintln(w, "  coordination: up to the driver")
		}
		if co.Error != "" {
			fmt.Fprintf(w, "  coordination error: %s\n", co.Error)
		}
		for _, h := range co.Holders {
			state := "alive"
			if !h.Alive {
				state = "dead, reclaimable"
			}
			cmd := ""
			if h.Program != "" {
				cmd = " " + h.Program
			}
			since := ""
			if !h.Since.IsZero() {
				since = " since " + h.Since.Format(time.RFC3339)
			}
			fmt.Fprintf(w, "    %s held by pid %d (%s)%s%s\n", h.Device, h.PID, state, since, cmd)
		}
		writeQuarantined(w, co.Quarantined)
	}
}

func propertyKeys(devs []resources.Properties) []string {
	seen := map[string]bool{}
	var keys []string
	for _, d := range devs {
		for k := range d {
			if !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		// index first, then the rest alphabetically
		if (keys[i] == "index") != (keys[j] == "index") {
			return keys[i] == "index"
		}
		return keys[i] < keys[j]
	})
	return keys
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
