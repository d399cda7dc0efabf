package launch

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/xres/xres/driver"
	"github.com/xres/xres/driver/coord"
	"github.com/xres/xres/driver/launch/launchcmd"
	"github.com/xres/xres/resources"
	"github.com/xres/xres/resources/spark"
)

// The discovery bridge: container-launcher as the discovery script of an
// engine that keeps its own ApplicationMaster (Spark on YARN, Flink's
// YARN deployment). The engine's GPU plugin runs it in the executor or
// TaskManager JVM; it discovers as a launch does, reserves the devices
// host-wide for that JVM (the nearest ancestor that is not a shell or an
// exec wrapper, coord.Caller), prints them in the engine's protocol and
// exits. The reservation lasts until the JVM ends and is then reclaimed
// as any dead holder's.
//
//	Flink: script <amount> [--enable-coordination-mode] [--coordination-file F] …
//	       → one line of comma-separated indices
//	Spark: script (no arguments; the amount from --amount,
//	       $XRES_DISCOVERY_AMOUNT, the configured amount, else 1)
//	       → {"name":"gpu","addresses":["0"]}
//
// Started under a name xres-<resource>-discovery (a link, or Spark's
// --files launcher#xres-gpu-discovery), the launcher is the bridge for
// that resource with the engine's arguments as they come (BridgeArgs).

// discoverCommand is the bridge's subcommand.
const discoverCommand = launchcmd.DiscoverName

// The engines' protocols (the GPU driver's discovery-script.protocol values).
const (
	protocolFlink = "flink"
	protocolSpark = "spark"
)

// EnvDiscoveryAmount is the bridge's amount under Spark's protocol, which
// passes none (spark.executorEnv.XRES_DISCOVERY_AMOUNT).
const EnvDiscoveryAmount = "XRES_DISCOVERY_AMOUNT"

// flinkScriptLimit is how long the bridge gives itself under Flink's
// protocol: Flink kills a discovery script after 10 s, and a bridge killed
// after it reserved would leave its devices held by a TaskManager that was
// never told of them.
const flinkScriptLimit = 9 * time.Second

const (
	discoverSynopsis = `  container-launcher discover [flags] [--amount N] [<amount> [Flink's args…]]
        the discovery bridge: reserve devices for the calling engine process
        (Spark executor, Flink TaskManager) and print them in its protocol
`
	discoverFlagsText = `  --amount N           devices to reserve under Spark's protocol (default
                       $` + EnvDiscoveryAmount + `, else the configured amount,
                       else 1); Flink passes its own as the first argument
  --protocol P         flink, spark or auto (default: flink when an amount is
                       given as an argument, else spark)
  --holder-pid PID     reserve for this process, one of this user's, not
                       init (default: the caller, the nearest ancestor that
                       is not a shell running a script or an exec wrapper;
                       refused when run from an interactive shell)
  (started as xres-<resource>-discovery, it is the bridge for <resource>)
`
	discoverUsageText = "usage:\n" + discoverSynopsis + "\nflags:\n" + commonFlagsText + discoverFlagsText + "\n" + exitCodesText
)

// BridgeArgs is how cmd/container-launcher runs a launcher started under
// a discovery script's name, xres-<resource>-discovery (also with .sh):
// the discover subcommand for that resource (launchcmd.BridgeArgs).
func BridgeArgs(argv0 string, args []string) ([]string, bool) {
	return launchcmd.BridgeArgs(argv0, args)
}

// runDiscover is the discovery bridge.
func runDiscover(ctx context.Context, args []string, env Env) int {
	fs := flag.NewFlagSet("container-launcher discover", flag.ContinueOnError)
	var c common
	c.register(fs)
	amount := fs.Int("amount", 0, "devices to reserve under Spark's protocol")
	protocol := fs.String("protocol", "auto", "flink, spark or auto")
	holderPID := fs.Int("holder-pid", 0, "reserve for this process")
	if _, err := parse(fs, args, discoverUsageText, env.Stdout); err != nil {
		return failDiscover(env, err)
	}
	log, err := newLogger(env.Stderr, c.logLevel, "warn", env.Getenv)
	if err != nil {
		return failDiscover(env, err)
	}
	req, err := bridgeRequest(*protocol, *amount, fs.Args(), env.Getenv)
	if err != nil {
		return failDiscover(env, err)
	}
	if req.amount == 0 {
		return ExitOK // Flink's script: amount 0 prints nothing
	}
	bd, _ := env.Registry.(bridgeDriver)
	name := strings.TrimSpace(c.resources)
	if name == "" && bd != nil {
		name = bd.BridgeResource()
	}
	if name == "" {
		return failDiscover(env, classifyf(ErrUsage, "--resources: name the resource the bridge serves"))
	} else if strings.Contains(name, ",") {
		return failDiscover(env, classifyf(ErrUsage, "--resources: the bridge serves one resource, got %q", name))
	}
	cfg := c.config(env, log)
	loaded, err := env.Load(cfg)
	def, hasDef := bridgeDefault(bd, name)
	if err == nil && hasDef && !slices.ContainsFunc(loaded.Specs, func(s resources.Spec) bool { return s.Name == name }) {
		// Spark's executors have no Flink configuration: a gpu of the GPU
		// driver's defaults, with the -D params given.
		cfg.Dynamic = append([]string{resources.KeyList + "=" + name, resources.Key(name, resources.SuffixAmount) + "=1",
			resources.Key(name, resources.SuffixFactory) + "=" + def}, cfg.Dynamic...)
		loaded, err = env.Load(cfg)
	}
	if err != nil {
		return failDiscover(env, err)
	}
	spec, err := bridgeSpec(loaded.Specs, name, req, bd)
	if err != nil {
		return failDiscover(env, err)
	}
	holder := *holderPID
	if holder == 0 {
		if holder, err = coord.Caller(); err != nil {
			return failDiscover(env, classify(ErrUsage, err))
		}
	}
	if err := coord.CheckHolder(holder); err != nil {
		if *holderPID != 0 {
			err = fmt.Errorf("--holder-pid: %w", err)
		}
		return failDiscover(env, classify(ErrUsage, err))
	}
	l := &Launcher{Registry: env.Registry, Log: log, Getenv: env.Getenv, DriverTimeout: loaded.DiscoveryTimeout, Holder: holder}
	if req.protocol == protocolFlink {
		l.DiscoverTimeout = flinkScriptLimit
	}
	r, err := l.Acquire(ctx, []resources.Spec{spec})
	if err != nil {
		return failDiscover(env, err)
	}
	// No release: the devices are the caller's until it ends.
	var out []byte
	addresses := spark.SparkAddresses(r.Grants[0].Devices, false)
	if req.protocol == protocolSpark {
		out, _ = json.Marshal(spark.SparkResourceInformation{Name: name, Addresses: addresses})
	} else {
		out = []byte(strings.Join(addresses, ","))
	}
	if _, err := fmt.Fprintf(env.Stdout, "%s\n", out); err != nil {
		return failDiscover(env, fmt.Errorf("print the devices: %w", err))
	}
	log.WithField("holder_pid", holder).WithField("devices", strings.Join(addresses, ",")).Info("devices reserved for the caller")
	return ExitOK
}

// failDiscover is fail with the bridge's usage for usage errors.
func failDiscover(env Env, err error) int { return failUsage(env.Stderr, err, discoverUsageText) }

// bridgeReq is what the engine asked for.
type bridgeReq struct {
	protocol  string   // protocolFlink or protocolSpark
	amount    int      // devices to reserve; 0 only under Flink's (prints nothing); -1: not given (Spark's)
	flinkArgs []string // Flink's discovery-script.args after the amount
}

// bridgeRequest reads the engine's call: under Flink's protocol the first
// argument is the amount and the rest are discovery-script.args (Flink
// passes the word "null" when they are unset); under Spark's there are no
// arguments.
func bridgeRequest(protocol string, amount int, args []string, getenv func(string) string) (bridgeReq, error) {
	switch protocol {
	case "auto":
		protocol = protocolSpark
		if len(args) > 0 {
			protocol = protocolFlink
		}
	case protocolFlink, protocolSpark:
	default:
		return bridgeReq{}, classifyf(ErrUsage, "--protocol %q: flink, spark or auto", protocol)
	}
	if protocol == protocolFlink {
		if len(args) == 0 {
			return bridgeReq{}, classifyf(ErrUsage, "Flink's protocol: the amount is the first argument (script <amount> [args…])")
		}
		n, err := strconv.Atoi(args[0])
		if err != nil || n < 0 {
			return bridgeReq{}, classifyf(ErrUsage, "Flink's protocol: the amount %q is not a whole number >= 0", args[0])
		}
		var rest []string
		for _, a := range args[1:] {
			if a != "null" {
				rest = append(rest, a)
			}
		}
		return bridgeReq{protocol: protocol, amount: n, flinkArgs: rest}, nil
	}
	if len(args) > 0 {
		return bridgeReq{}, classifyf(ErrUsage, "Spark's protocol takes no arguments, got %q (the amount is --amount or $%s)", args, EnvDiscoveryAmount)
	}
	src := "--amount"
	if amount == 0 {
		v := strings.TrimSpace(getenv(EnvDiscoveryAmount))
		if v == "" {
			return bridgeReq{protocol: protocol, amount: -1}, nil // bridgeSpec decides
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			n = -1
		}
		amount, src = n, "$"+EnvDiscoveryAmount
	}
	if amount <= 0 {
		return bridgeReq{}, classifyf(ErrUsage, "%s: the amount must be a whole number > 0", src)
	}
	return bridgeReq{protocol: protocol, amount: amount}, nil
}

// bridgeSpec is the spec the bridge discovers: the configured resource
// name (the GPU driver with defaults for gpu when none is configured),
// with the amount asked (under Spark's protocol without one: the
// configured amount, else 1) and discovery built in: discovery-script.* are
// dropped (the script is the bridge itself), and Flink's arguments are
// its discovery-script.args, so that its coordination file is honoured.
func bridgeSpec(specs []resources.Spec, name string, req bridgeReq, bd bridgeDriver) (resources.Spec, error) {
	i := slices.IndexFunc(specs, func(s resources.Spec) bool { return s.Name == name })
	if i < 0 {
		only := "no resource has a default driver"
		if bd != nil {
			only = "only " + bd.BridgeResource() + " has a default driver"
		}
		return resources.Spec{}, classifyf(ErrConfig, "resource %s is not configured (external-resources); %s", name, only)
	}
	spec := specs[i]
	if strings.TrimSpace(spec.Factory) == "" {
		def, ok := bridgeDefault(bd, name)
		if !ok {
			return spec, classifyf(ErrConfig, "%s is not set: the bridge has no driver to discover %s with",
				resources.Key(name, resources.SuffixFactory), name)
		}
		spec.Factory = def
	}
	if req.amount > 0 {
		spec.Amount = int64(req.amount)
	} // else the configured external-resource.<name>.amount (1 where none is configured)
	params := copyParams(spec.Params)
	if bd != nil {
		for _, k := range bd.BridgeDropParams() {
			delete(params, k)
		}
	}
	if len(req.flinkArgs) > 0 {
		params[coord.ParamScriptArgs] = strings.Join(req.flinkArgs, " ")
	}
	spec.Params = params
	s, err := coord.ParseParams(name, params)
	if err != nil {
		return spec, classify(ErrConfig, err)
	}
	if !s.Enabled {
		return spec, classifyf(ErrConfig, "%s is false: the bridge exists to reserve devices host-wide; without it every caller would get the first devices",
			driver.ParamKey(name, coord.ParamEnabled))
	}
	return spec, nil
}

// bridgeDefault is the registry's default factory for resource, where it
// has one.
func bridgeDefault(bd bridgeDriver, resource string) (string, bool) {
	if bd == nil {
		return "", false
	}
	return bd.BridgeDefault(resource)
}
