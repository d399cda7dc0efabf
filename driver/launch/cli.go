package launch

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/xres/xres/conf"
	"github.com/xres/xres/conf/suggest"
	"github.com/xres/xres/driver/coord"
	"github.com/xres/xres/driver/launch/launchcmd"
	"github.com/xres/xres/resources"
	"github.com/xres/xres/resources/contract"
)

// killGrace is how long a worker gets between SIGTERM and SIGKILL when the
// launch is cancelled through its context (library use; the command's
// context is never cancelled, signals are forwarded instead).
const killGrace = 10 * time.Second

// InfoFileName is the info file's name in a YARN container's working
// directory.
const InfoFileName = "external-resources.json"

// Env is everything Main takes from the process: cmd/container-launcher
// fills it from os, tests with fakes.
type Env struct {
	Getenv  func(string) string // nil: os.Getenv
	Environ []string            // the worker's base environment; nil: os.Environ()
	Dir     string              // working directory for the worker and the info file; "": the current one
	Stdin   io.Reader
	Stdout  io.Writer
	Stderr  io.Writer
	// Signals delivers the signals to forward (ForwardedSignals); nil: none.
	Signals <-chan os.Signal
	// Notify, when set, subscribes Signals to ForwardedSignals
	// (signal.Notify) unless that has begun already, and returns what waits
	// for the subscription to be complete. Main calls it once it knows it
	// will launch a worker and waits before it reserves anything:
	// subscribing costs a process about 0.4 ms, which the command spends
	// as its packages initialise (earlysig), and probe, check and
	// --version, which hold nothing, do without (a signal ends them at
	// once).
	Notify func() (wait func())
	// Registry holds the driver factories (filled by cmd/).
	Registry Registry
	// Load reads the configuration; nil: LoadConfig.
	Load Loader
	// Version returns what --version prints (cmd/ reads it from the build
	// info, only when asked: a launch has no use for it).
	Version func() string
	// HTTP posts the device report to $XRES_AM_REPORT_URL; nil: the
	// launcher's own minimal HTTP/1.1 client (postHTTP).
	HTTP PostFunc
	// Get asks the AM's rendezvous ($XRES_RENDEZVOUS_URL); nil: the
	// launcher's own client (getHTTP). RendezvousPoll is how often it asks
	// while the worker waits (0: DefaultRendezvousPoll).
	Get            GetFunc
	RendezvousPoll time.Duration
	// Started is when the launcher started (its report tells the AM, for
	// the worker's timeline); zero: when Main was called.
	Started time.Time
	// Self is the launcher's executable, run as `Self __exec-pinned …` to
	// start a --per-device worker pinned to its CPUs; "": os.Executable().
	Self string
}

func (e *Env) defaults() {
	if e.Started.IsZero() {
		e.Started = time.Now()
	}
	if e.Getenv == nil {
		e.Getenv = os.Getenv
	}
	if e.Environ == nil {
		e.Environ = os.Environ()
	}
	if e.Stdout == nil {
		e.Stdout = io.Discard
	}
	if e.Stderr == nil {
		e.Stderr = io.Discard
	}
	if e.Load == nil {
		e.Load = LoadConfig
	}
	if e.Version == nil {
		e.Version = func() string { return "container-launcher\n" }
	}
	if e.HTTP == nil {
		e.HTTP = postHTTP
	}
	if e.Get == nil {
		e.Get = getHTTP
	}
}

// The usage text, in parts: `container-launcher --help` prints them all,
// `container-launcher check --help` (or `help check`) check's.
const (
	runSynopsis = `  container-launcher [flags] [--] <worker command> [args…]
        discover the configured resources, tell the worker, run it, release
`
	probeSynopsis = `  container-launcher probe [flags] [--json]
        show what would be discovered and who holds what (holds nothing)
  container-launcher probe [flags] --clear DEVICE
        end the quarantine of DEVICE (a GPU's uuid): it is granted again
`
	checkSynopsis = `  container-launcher check [flags]
        report configuration and host problems with a fix for each
`
	versionSynopsis = `  container-launcher --version
        version, commit and the Hadoop versions it was tested against
`
	helpSynopsis = `  container-launcher help [probe|check|discover]
        this text, or one subcommand's (also: <subcommand> --help)
`
	commonFlagsText = `  --conf FILE|DIR      Flink configuration (default: $FLINK_CONF_DIR)
  -D key=value         override a configuration key (repeatable; -Dkey=value too)
  --dynamic-file FILE  overrides from a JSON object of strings ({"key": "value"});
                       -D wins over it (keeps secrets off the command line)
  --resources a,b      only these of the configured resources
  --strict             turn configuration warnings into errors
  --log-level LEVEL    panic…trace (default $XRES_LOG_LEVEL, else info; warn for probe, check)
`
	infoFileText = `  --info-file PATH     where to write the info file (run only)
`
	jsonFlagText = `  --json               print the report as JSON
`
	perDeviceText = `one worker per device (run only):
  --per-device[=NAME]  start one worker per device of resource NAME (default:
                       the first selected resource with a driver); each sees
                       only its device, XRES_DEVICE_RANK and XRES_DEVICE_COUNT
  --on-failure POLICY  stop (default: a failing worker stops all, its exit
                       code is the launcher's) or restart
  --max-restarts N     restarts per device with --on-failure restart (default 3)
  --restart-delay D    pause before a restart (default 1s)
  --pin-cpus=false     do not pin workers to their device's local CPUs
  (defaults from $XRES_PER_DEVICE, $XRES_ON_FAILURE, $XRES_MAX_RESTARTS,
  $XRES_RESTART_DELAY, $XRES_PIN_CPUS)
`
	exitCodesText = `exit codes: worker's own code, or 210 usage, 211 config, 212 discovery,
213 worker could not start, 214 internal, 215 assignment (YARN's GPU
assignment unknown), 216 gpu-failed (a GPU of the worker failed: quarantined)
`
	usageText = "usage:\n" + runSynopsis + probeSynopsis + checkSynopsis + discoverSynopsis + versionSynopsis + helpSynopsis +
		"\nflags:\n" + commonFlagsText + infoFileText + "\n" + perDeviceText + "\n" + exitCodesText
	probeUsageText = "usage:\n" + probeSynopsis + "\nflags:\n" + commonFlagsText + jsonFlagText + "\n" + exitCodesText
	checkUsageText = "usage:\n" + checkSynopsis + "\nflags:\n" + commonFlagsText + "\n" + exitCodesText +
		"(check exits 211 or 212 when a problem it finds applies)\n"
	versionUsageText = "usage:\n" + versionSynopsis + "(also -version, version)\n"
)

// subcommands are the words container-launcher takes first instead of a
// worker command (pinExecCommand, internal, aside), with their help.
var subcommands = []struct{ name, help string }{
	{"probe", probeUsageText},
	{"check", checkUsageText},
	{discoverCommand, discoverUsageText},
	{"help", usageText},
	{"version", versionUsageText},
}

func subcommandNames() []string {
	names := make([]string, len(subcommands))
	for i, c := range subcommands {
		names[i] = c.name
	}
	return names
}

// notASubcommand is the usage error for a worker command whose first word
// is a subcommand's name, or one edit away from one: `container-launcher
// chek` would run chek as the worker (and fail with 213), `container-launcher
// --conf f check` would run check. dashed: the command came after "--",
// which says a worker is meant. nil when the word is no such mistake.
func notASubcommand(word string, dashed bool) error {
	if dashed || strings.ContainsRune(word, '/') {
		return nil
	}
	names := subcommandNames()
	if slices.Contains(names, word) {
		return classifyf(ErrUsage, "%q is a subcommand: give it first (container-launcher %s [flags]); to run a worker named %s, put -- before it", word, word, word)
	}
	near := suggest.Closest(word, names, min(1, suggest.Limit(word)))
	if len(near) == 0 {
		return nil
	}
	return classifyf(ErrUsage, "%q is not a subcommand (%s); to run a worker named %s, put -- before it",
		word, suggest.Phrase(near, func(s string) string { return strconv.Quote(s) }), word)
}

// runHelp is `container-launcher help [subcommand]`.
func runHelp(args []string, env Env) int {
	if len(args) == 0 {
		fmt.Fprint(env.Stdout, usageText)
		return ExitOK
	}
	if len(args) > 1 {
		return fail(env.Stderr, classifyf(ErrUsage, "help takes one subcommand, got %q", args))
	}
	for _, c := range subcommands {
		if c.name == args[0] {
			fmt.Fprint(env.Stdout, c.help)
			return ExitOK
		}
	}
	if args[0] == "run" { // the default command: a worker
		fmt.Fprint(env.Stdout, usageText)
		return ExitOK
	}
	msg := fmt.Sprintf("help: no subcommand %q", args[0])
	if m := suggest.DidYouMean(args[0], subcommandNames()); m != "" {
		msg += "; " + m
	}
	return fail(env.Stderr, classifyf(ErrUsage, "%s (subcommands: probe, check, discover, help, version; anything else runs a worker)", msg))
}

// common are the flags shared by every subcommand.
type common struct {
	conf        string
	dynamic     conf.DynamicFlag // -D: the flag package never shows a rejected one (conf.ParseError)
	dynamicFile string
	resources   string
	strict      bool
	logLevel    string
}

func (c *common) register(fs *flag.FlagSet) {
	fs.StringVar(&c.conf, "conf", "", "Flink configuration file or directory")
	fs.Var(&c.dynamic, "D", "configuration override key=value (repeatable)")
	fs.StringVar(&c.dynamicFile, "dynamic-file", "", "JSON object of configuration overrides (-D wins over it)")
	fs.StringVar(&c.resources, "resources", "", "comma-separated resource names to use (default: all configured)")
	fs.BoolVar(&c.strict, "strict", false, "turn configuration warnings into errors")
	fs.StringVar(&c.logLevel, "log-level", "", "log level (default info, or $"+EnvLogLevel+")")
}

// config is what the Loader gets from the common flags.
func (c *common) config(env Env, log logrus.FieldLogger) Config {
	return Config{Path: c.conf, Dynamic: c.dynamic.Values, DynamicFile: c.dynamicFile, Strict: c.strict, Getenv: env.Getenv, Log: log}
}

// normalizeArgs rewrites the launcher's own flags into forms the flag
// package takes. It stops where fs stops parsing: at "--" or the first
// argument that is not a flag of fs, so a worker's own arguments are left
// alone:
//
//   - Flink-style "-Dkey=value" becomes "-D", "key=value".
//   - Where fs has --per-device, "--per-device NAME --" becomes
//     "--per-device=NAME --", so the separate-word form works although the
//     flag may stand alone. Without "--" right after NAME, NAME is the
//     worker command.
func normalizeArgs(fs *flag.FlagSet, args []string) []string {
	perDevice := fs.Lookup("per-device") != nil
	out := make([]string, 0, len(args)+2)
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" || a == "-" || !strings.HasPrefix(a, "-") {
			return append(out, args[i:]...)
		}
		if strings.HasPrefix(a, "-D") && len(a) > 2 && a[2] != '=' {
			out = append(out, "-D", a[2:])
			continue
		}
		out = append(out, a)
		name := strings.TrimLeft(a, "-")
		if strings.Contains(name, "=") {
			continue // -flag=value
		}
		if perDevice && name == "per-device" {
			if i+2 < len(args) && args[i+2] == "--" && !strings.HasPrefix(args[i+1], "-") {
				i++
				out[len(out)-1] = a + "=" + args[i]
			}
			continue
		}
		f := fs.Lookup(name)
		if f == nil {
			continue // the flag package reports it
		}
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
			continue
		}
		if i+1 < len(args) { // the flag's value, whatever it looks like
			i++
			out = append(out, args[i])
		}
	}
	return out
}

// Main runs container-launcher with args (without the program name) and
// returns the process exit code.
func Main(ctx context.Context, args []string, env Env) int {
	env.defaults()
	switch launchcmd.Of(args) {
	case launchcmd.Probe:
		return runProbe(ctx, args[1:], env)
	case launchcmd.Check:
		return runCheck(ctx, args[1:], env)
	case launchcmd.Discover:
		return runDiscover(ctx, args[1:], env)
	case launchcmd.PinExec:
		return runExecPinned(args[1:], env)
	case launchcmd.Help:
		return runHelp(args[1:], env)
	case launchcmd.Usage:
		fmt.Fprint(env.Stdout, usageText)
		return ExitOK
	case launchcmd.Version:
		fmt.Fprint(env.Stdout, env.Version())
		return ExitOK
	}
	// A launch: its signal subscription, begun by now (Env.Notify), is
	// complete before anything is reserved.
	notified := func() {}
	if env.Notify != nil {
		notified = env.Notify()
	}
	defer notified() // Notify is never left running
	return runLaunch(ctx, args, env, notified)
}

// newLogger builds the stderr logger from --log-level or $XRES_LOG_LEVEL.
// def is the level when neither is set.
func newLogger(w io.Writer, level, def string, getenv func(string) string) (*logrus.Logger, error) {
	log := logrus.New()
	log.SetOutput(w)
	log.SetFormatter(&logrus.TextFormatter{DisableColors: true, FullTimestamp: true})
	if level == "" {
		level = getenv(EnvLogLevel)
	}
	if level == "" {
		level = def
	}
	lvl, err := logrus.ParseLevel(level)
	if err != nil {
		return log, classifyf(ErrUsage, "log level %q (--log-level or %s): %w", level, EnvLogLevel, err)
	}
	log.SetLevel(lvl)
	return log, nil
}

// errHelpShown: parse printed the help asked for (-h, --help); the
// command exits 0.
var errHelpShown = errors.New("help shown")

// parse parses a subcommand's flags; the error is classified, and names
// neither a rejected -D's value (conf.ParseError) nor an unknown flag
// without the flags it may have meant (suggest.FlagError). For -h and
// --help it prints help, the subcommand's usage, on stdout and returns
// errHelpShown (fail makes that exit 0). dashed reports that the flags
// ended at "--".
func parse(fs *flag.FlagSet, args []string, help string, stdout io.Writer) (dashed bool, err error) {
	fs.SetOutput(io.Discard)
	norm := normalizeArgs(fs, args)
	if err := fs.Parse(norm); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, help)
			return false, errHelpShown
		}
		err = suggest.FlagError(fs, conf.ParseError(fs, err))
		return false, classifyf(ErrUsage, "parse arguments: %w", err)
	}
	used := len(norm) - fs.NArg()
	return used > 0 && norm[used-1] == "--", nil
}

// fail reports err on stderr as one plain line naming the failure kind
// and exit code (plus the usage for usage errors) and returns the code.
func fail(stderr io.Writer, err error) int { return failUsage(stderr, err, usageText) }

// failUsage is fail with usage as the text shown after a usage error.
func failUsage(stderr io.Writer, err error, usage string) int {
	if errors.Is(err, errHelpShown) {
		return ExitOK
	}
	code := ExitCode(err)
	fmt.Fprintf(stderr, "container-launcher: %s error (exit %d): %v\n", ExitCodeName(code), code, err)
	if code == ExitUsage {
		fmt.Fprint(stderr, usage)
	}
	return code
}

// selectSpecs keeps the specs named in only (comma-separated; "" keeps all).
// A name that is not configured is a configuration error.
func selectSpecs(specs []resources.Spec, only string) ([]resources.Spec, error) {
	if strings.TrimSpace(only) == "" {
		return specs, nil
	}
	byName := map[string]resources.Spec{}
	var known []string
	for _, s := range specs {
		byName[s.Name] = s
		known = append(known, s.Name)
	}
	var out []resources.Spec
	seen := map[string]bool{}
	for _, n := range strings.Split(only, ",") {
		n = strings.TrimSpace(n)
		if n == "" || seen[n] {
			continue
		}
		seen[n] = true
		s, ok := byName[n]
		if !ok {
			list := "none"
			if len(known) > 0 {
				list = strings.Join(known, ", ")
			}
			return nil, classifyf(ErrConfig, "--resources: %q is not a configured resource (external-resources enables: %s)", n, list)
		}
		out = append(out, s)
	}
	return out, nil
}

// runLaunch is the default command: discover, tell, run, release.
func runLaunch(ctx context.Context, args []string, env Env, notified func()) int {
	fs := flag.NewFlagSet("container-launcher", flag.ContinueOnError)
	var c common
	c.register(fs)
	infoFile := fs.String("info-file", "", "path of the info file")
	var pd perDeviceOptions
	pd.register(fs)
	dashed, err := parse(fs, args, usageText, env.Stdout)
	if err != nil {
		return fail(env.Stderr, err)
	}
	given := map[string]string{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = "--" + f.Name })
	if err := pd.fromEnv(fs, env.Getenv, given); err != nil {
		return fail(env.Stderr, err)
	}
	if err := pd.validate(given); err != nil {
		return fail(env.Stderr, err)
	}
	log, err := newLogger(env.Stderr, c.logLevel, "info", env.Getenv)
	if err != nil {
		return fail(env.Stderr, err)
	}
	command := fs.Args()
	if len(command) > 0 && command[0] == "--" {
		command = command[1:]
	}
	if len(command) == 0 {
		return fail(env.Stderr, classifyf(ErrUsage, "no worker command: give it after --"))
	}
	if err := notASubcommand(command[0], dashed); err != nil {
		return fail(env.Stderr, err)
	}

	// Signals: before the worker runs they cancel the launch; afterwards
	// they are forwarded. The gate watches for the launcher's whole life.
	// The subscription (Main started it) is complete before anything is
	// reserved (Launcher.ready).
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	gate := newSignalGate(env.Signals, cancel, log)
	defer gate.Stop()

	loaded, err := env.Load(c.config(env, log))
	if err != nil {
		return fail(env.Stderr, err)
	}
	specs, err := selectSpecs(loaded.Specs, c.resources)
	if err != nil {
		return fail(env.Stderr, err)
	}
	var deviceSpec resources.Spec
	if pd.device.set {
		if deviceSpec, err = chooseDeviceSpec(specs, pd.device.name); err != nil {
			return fail(env.Stderr, err)
		}
		log.WithField("resource", deviceSpec.Name).Debug("one worker per device")
	}

	// The worker's program is found before any device is reserved: a
	// command that is not there fails the launch without touching the
	// host's coordination.
	workerPath, err := exec.LookPath(command[0])
	if err != nil {
		return fail(env.Stderr, classifyf(ErrWorkerStart, "start worker %q: %w", command[0], err))
	}

	// Orphaned helpers of the worker become ours, so that they can be
	// waited for when the worker ends.
	if err := becomeSubreaper(); err != nil {
		log.WithError(err).Debug("cannot be the reaper of the worker's helpers")
	}
	l := &Launcher{Registry: env.Registry, Log: log, Getenv: env.Getenv, DriverTimeout: loaded.DiscoveryTimeout, Rescale: loaded.Rescale,
		MetricsInterval: loaded.MetricsInterval, ready: notified}
	res, err := l.Acquire(lctx, specs)
	notified() // no resource configured: the worker still gets the signals
	if err != nil {
		if sig := gate.Pending(); sig != nil {
			log.WithError(err).Info("launch stopped by signal before the worker started")
			return signalExitCode(sig)
		}
		return fail(env.Stderr, err)
	}
	var code int
	if pd.device.set {
		code, err = l.runPerDevice(lctx, res, deviceSpec.Name, workerPath, command, env, *infoFile, pd, gate, log)
	} else {
		code, err = l.run(lctx, res, workerPath, command, env, *infoFile, gate, log)
	}
	ctxRel, cancelRel := context.WithTimeout(context.Background(), res.releaseTimeout())
	defer cancelRel()
	if rerr := res.Release(ctxRel); rerr != nil {
		log.WithError(rerr).Error("releasing devices failed; host coordination reclaims them once this launcher has exited")
	}
	if err != nil {
		return fail(env.Stderr, err)
	}
	return code
}

// run writes the info file, runs the worker and returns its exit code. The
// caller releases res.
func (l *Launcher) run(ctx context.Context, res *Reservation, workerPath string, command []string, env Env, infoFile string, gate *signalGate, log logrus.FieldLogger) (int, error) {
	dir := env.Dir
	path, cleanup, err := writeInfo(infoFile, dir, InfoFileName, env.Getenv, res.Infos())
	if err != nil {
		return 0, err
	}
	defer cleanup()
	log.WithField("info_file", path).Debug("info file written")
	port, err := rendezvousPort(env.Getenv(contract.EnvPortWanted))
	if err != nil {
		return 0, err
	}
	report := func(ctx context.Context) error { return nil }
	reportURL := env.Getenv(contract.EnvReportURL)
	rep := newReport(env.Getenv(EnvContainerID), res.Grants, port, env.Started)
	if reportURL != "" {
		report = func(ctx context.Context) error {
			return postReport(ctx, env.HTTP, reportURL, env.Getenv("LOG_DIRS"), env.Getenv(EnvTokenFile), rep)
		}
		if err := report(ctx); err != nil {
			log.WithError(err).Warn("could not report the devices to the application master; starting the worker anyway")
		}
	}
	vars := grantEnv(res.Grants, path)
	if port > 0 {
		vars[contract.EnvPort] = strconv.Itoa(port)
	}
	// A "worker" port: the worker binds one of its choosing and writes it
	// into XRES_PORT_FILE; the launcher reports it (the whole report
	// again, so that a later AM attempt reads it too).
	portFile := ""
	if strings.EqualFold(strings.TrimSpace(env.Getenv(contract.EnvPortWanted)), contract.PortWantedWorker) {
		if reportURL == "" || env.Getenv(EnvContainerID) == "" {
			log.Warnf("%s=%s, but no application master to tell the port to (%s or %s unset): %s is not set",
				contract.EnvPortWanted, contract.PortWantedWorker, contract.EnvReportURL, EnvContainerID, contract.EnvPortFile)
		} else {
			portFile = absPath(filepath.Join(dir, contract.PortFileName))
			if err := os.Remove(portFile); err != nil && !os.IsNotExist(err) {
				return 0, fmt.Errorf("remove a stale port file %s: %w", portFile, err)
			}
			vars[contract.EnvPortFile] = portFile
		}
	}
	auth := launcherAuth(env.Getenv(EnvTokenFile), env.Getenv(EnvContainerID)) // nil without a key
	if base := env.Getenv(contract.EnvRendezvousURL); base != "" && env.Getenv(EnvContainerID) != "" {
		rw := &rendezvousWait{get: env.Get, url: rendezvousURL(base, env.Getenv(EnvContainerID)), auth: auth,
			wait: env.Getenv(contract.EnvRendezvousWait) == "true", poll: env.RendezvousPoll, log: log, reportNow: report}
		extra, err := rw.run(ctx)
		if err != nil {
			if sig := gate.Pending(); sig != nil {
				log.WithError(err).Info("launch stopped by signal before the worker started")
				return signalExitCode(sig), nil
			}
			return 0, err
		}
		for k, v := range extra {
			vars[k] = v
		}
	}
	var watch *workersWatch
	if url := env.Getenv(contract.EnvWorkersURL); url != "" {
		get, url := auth.workers(env.Get, url) // the groups' addresses for this container's launcher alone
		watch = &workersWatch{get: get, url: url, path: absPath(filepath.Join(dir, contract.WorkersFileName)), r: l.Rescale, log: log}
		if _, err := watch.fetch(ctx); err != nil {
			log.WithError(err).Warn("could not read the application's worker counts; " + contract.EnvWorkersFile + " appears once the application master answers")
		}
		vars[contract.EnvWorkersFile] = watch.path
	}
	var sampler *gpuSampler
	if reportURL != "" {
		sampler = newGPUSampler(res.Grants, l.MetricsInterval, env.Getenv(EnvContainerID), env.Getenv, log, func(ctx context.Context, body []byte) error {
			cctx, cancel := context.WithTimeout(ctx, reportTimeout)
			defer cancel()
			return signAndSend(cctx, env.HTTP, reportURL, env.Getenv(EnvTokenFile), body)
		})
	}
	samplerStarted := false
	jobs := writeJobMapping(res.Grants, env.Getenv(EnvContainerID), log) // while the worker runs, however it ends
	defer jobs.remove()
	hgrants, err := l.healthGrants(res.Grants)
	if err != nil {
		return 0, err
	}
	hw := newHealthWatch(hgrants, healthFile(dir), log) // healthwatch.go
	if hw != nil {
		vars[EnvGPUHealthFile] = hw.file
		if reportURL != "" { // the event and the replacement, shown by the AM
			hw.container, hw.send = env.Getenv(EnvContainerID), func(ctx context.Context, body []byte) error {
				return signAndSend(ctx, env.HTTP, reportURL, env.Getenv(EnvTokenFile), body)
			}
		}
	}
	wctx, stopWatch := context.WithCancel(ctx) // ends the watch once the worker has
	startedSent := make(chan struct{})         // closed once the command-started report is sent
	code, err := runWorker(ctx, worker{
		Setup:  memPolicySetup(grantsMemPolicy(res.Grants, log), log),
		Path:   workerPath,
		Args:   command,
		Env:    mergeEnv(env.Environ, vars),
		Dir:    dir,
		Stdin:  env.Stdin,
		Stdout: env.Stdout,
		Stderr: env.Stderr,
		Started: func(g coord.Group) {
			if err := res.HoldGroup(ctx, g); err != nil {
				log.WithError(err).Warn("could not record the worker's process group: its forked helpers would not keep its devices held should this launcher be killed")
			}
			if hw != nil {
				hw.running(g.PGID)
				hw.launch(wctx)
			}
			if watch != nil && watch.r.Watch {
				go watch.watch(wctx, gate.notify)
			}
			if sampler != nil {
				samplerStarted = true
				go sampler.run(wctx)
			}
			if portFile != "" {
				go watchPortFile(wctx, portFile, portFilePoll, log, func(p int) {
					log.WithField("port", p).Info("the worker reported its port; telling the application master")
					rep.Port = p
					for try := 1; ; try++ { // its dependents wait for it: a few tries
						err := report(wctx)
						if err == nil || try == portReportTries || wctx.Err() != nil {
							if err != nil {
								log.WithError(err).Error("could not report the worker's port to the application master: its dependents wait for it")
							}
							return
						}
						log.WithError(err).Warn("could not report the worker's port to the application master; retrying")
						select {
						case <-wctx.Done():
							return
						case <-time.After(time.Second):
						}
					}
				})
			}
			if reportURL != "" {
				go func() {
					defer close(startedSent)
					reportCommandStarted(ctx, env, reportURL, time.Now(), log)
				}()
			}
		},
	}, gate, killGrace, log)
	stopWatch()
	sampler.wait(samplerStarted, time.Second)
	hw.stop()
	if err != nil {
		return 0, err
	}
	if reason := hw.replaced(); reason != "" {
		return 0, errGPUFailed(reason)
	}
	// A worker that ended at once leaves its command-started report a
	// moment to reach the AM.
	if reportURL != "" {
		select {
		case <-startedSent:
		case <-time.After(commandReportWait):
		}
	}
	log.WithField("exit_code", describeCode(code)).Debug("passing the worker's exit code on")
	return code, nil
}

// writeInfo writes the info file and returns its path and a cleanup that
// removes it when it was a temporary file. With explicit set, that path is
// used. In a YARN container (CONTAINER_ID set) the file is name
// (external-resources.json) in the working directory, which is private to
// the container and cleaned by YARN; elsewhere, or when the working
// directory is not writable, it is a fresh file in $TMPDIR removed after
// the worker.
func writeInfo(explicit, dir, name string, getenv func(string) string, infos map[string][]resources.Info) (string, func(), error) {
	none := func() {}
	if explicit != "" {
		if err := contract.WriteInfoFile(explicit, infos); err != nil {
			return "", none, fmt.Errorf("write info file %s (--info-file): %w", explicit, err)
		}
		return absPath(explicit), none, nil
	}
	if getenv("CONTAINER_ID") != "" {
		p := filepath.Join(dir, name)
		if err := contract.WriteInfoFile(p, infos); err == nil {
			return absPath(p), none, nil
		}
	}
	tmp := getenv("TMPDIR")
	if tmp == "" {
		tmp = os.TempDir()
	}
	p, err := contract.CreateInfoFile(tmp, infos)
	if err != nil {
		return "", none, err
	}
	// The files of launchers killed before they could remove theirs go
	// beside the launch: finding them reads all of $TMPDIR, which no
	// worker should wait for.
	go contract.RemoveStaleInfoFiles(tmp)
	return p, func() { _ = os.Remove(p) }, nil
}

func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}
