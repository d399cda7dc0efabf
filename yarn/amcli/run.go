package amcli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/sirupsen/logrus"

	"github.com/xres/xres/conf"
	"github.com/xres/xres/conf/suggest"
)

// Exit codes of am: Exits says what each means.
const (
	ExitOK        = 0
	ExitAppFailed = 1
	ExitUsage     = 2
	ExitConfig    = 3
	ExitCluster   = 4
)

// Exit is one of am's exit codes and what it means.
type Exit struct {
	Code    int
	Meaning string // markdown: commands, keys and flags in code spans
}

// Exits lists am's exit codes in code order: the usage text's list is
// made from it, and the README's tables are tested against it (both
// ways).
var Exits = []Exit{
	{ExitOK, "done; `submit` (following) and `run`: the application SUCCEEDED"},
	{ExitAppFailed, "`submit` (following) and `run`: the application ended FAILED or KILLED; `kill`: it had already ended (nothing killed)"},
	{ExitUsage, "bad command line (`--workers 0` included: leave it out to take `parallelism.default`)"},
	{ExitConfig, "configuration: a bad or missing file, key or value (no `HADOOP_CONF_DIR` included, or one naming no Hadoop " +
		"configuration), no Kerberos credentials, `am resources` found errors, a profile the cluster can never grant, a " +
		"configuration every `container-launcher` refuses (its exit 211)"},
	{ExitCluster, "the cluster could not be reached or refused a request (the RM, HDFS, the AM's token)"},
}

// errUsage marks command-line mistakes.
var errUsage = errors.New("usage")

// errNotWired is returned when a cluster client is missing from deps (only
// tests build am without them).
var errNotWired = errors.New("cluster client not wired")

// helpRequested is returned by parse for -h/--help: run prints the
// subcommand's usage and flags to stdout and exits 0.
type helpRequested struct{ fs *flag.FlagSet }

func (helpRequested) Error() string { return "help requested" }

// command is one subcommand.
type command struct {
	name     string
	synopsis string // what follows "am "
	summary  string
	run      func(context.Context, []string, *env) error
}

var commands = []command{
	{"submit", "submit [flags] -- <worker command…>", "stage and submit an application, follow it to its end (unless --detach) showing state\n" +
		"changes and workers running/wanted, then each worker's NodeManager, exit code and devices;\n" +
		"-D overrides are staged in a file, never put on a command line", cmdSubmit},
	{"run", "run [flags] -- <worker command…>", "the ApplicationMaster (YARN starts it in the AM container)", cmdRun},
	{"status", "status APP_ID [--json] [--rest]", "state, tracking URL and workers of an application, running or ended (exit code and\n" +
		"reason of each failed worker)", cmdStatus},
	{"list", "list [--all] [--json] [--rest]", "running xres applications (like yarn application -list); --all: every one", cmdList},
	{"logs", "logs APP_ID [--rest]", "every worker's logs (like yarn logs -applicationId): where log aggregation is on, from\n" +
		"HDFS (TFile); where it is off, or before a running application's are uploaded, stdout and\n" +
		"stderr from the NodeManagers", cmdLogs},
	{"kill", "kill APP_ID [--rest]", "kill an application", cmdKill},
	{"cluster", "cluster [--json] [--rest]", "nodes with their GPU/FPGA capacity and use", cmdCluster},
	{"resources", "resources [--conf FILE] [-D k=v]… [--dynamic-file F] [--workers N] [--strict] [--offline] [--json]",
		"the external resources parsed and the exact YARN container profile asked", cmdResources},
	{"render", "render kubernetes --image IMAGE [--conf FILE] [-D k=v]… [--launcher-conf PATH] -- <worker command…>",
		"print a Kubernetes worker pod template: every kubernetes.config-key in requests and limits,\n" +
			"container-launcher as the entry point, the worker after --", cmdRender},
}

// exitCodesText is the usage text's list of Exits.
var exitCodesText = renderExits(Exits)

// renderExits lists exits as the usage text does: "  3  meaning", code
// spans unmarked, wrapped at 100 columns under the meaning.
func renderExits(exits []Exit) string {
	var b strings.Builder
	b.WriteString("exit codes:\n")
	for _, e := range exits {
		line := fmt.Sprintf("  %d ", e.Code)
		for _, w := range strings.Fields(strings.ReplaceAll(e.Meaning, "`", "")) {
			if len(line)+1+len(w) > 100 {
				b.WriteString(line + "\n")
				line = "    "
			}
			line += " " + w
		}
		b.WriteString(line + "\n")
	}
	return b.String()
}

func usageText() string {
	var b strings.Builder
	b.WriteString("usage:\n")
	for _, c := range commands {
		fmt.Fprintf(&b, "  am %s\n        %s\n", c.synopsis, strings.ReplaceAll(c.summary, "\n", "\n        "))
	}
	b.WriteString(`  am --version
        version, commit and the Hadoop versions am was tested against

am <command> --help (or am help <command>) lists a command's flags. Every command takes
--log-level LEVEL (default info, or $XRES_LOG_LEVEL); --rest uses the RM's REST API instead of
RPC (insecure clusters).

`)
	b.WriteString(exitCodesText)
	return b.String()
}

// printHelp prints one subcommand's usage and flags.
func printHelp(w io.Writer, c command, fs *flag.FlagSet) {
	fmt.Fprintf(w, "usage: am %s\n  %s\n\nflags:\n", c.synopsis, strings.ReplaceAll(c.summary, "\n", "\n  "))
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
	fmt.Fprintf(w, "\n%s", exitCodesText)
}

// Env is what am gets from its process; a nil field takes the process's
// own (os.Getenv, os.Stdout, os.Stderr).
type Env struct {
	Getenv func(string) string
	Stdout io.Writer
	Stderr io.Writer
	// Version is what am --version prints (cmd/am fills it from the build
	// info).
	Version string
}

// env is what a subcommand gets: the process's Env and the cluster clients.
type env struct {
	getenv  func(string) string
	stdout  io.Writer
	stderr  io.Writer
	version string
	log     *logrus.Logger
	deps    deps
}

// Main is am's testable main: it runs one subcommand (args without the
// program name) and returns the exit code.
func Main(ctx context.Context, args []string, pe Env) int {
	return run(ctx, args, env{getenv: pe.Getenv, stdout: pe.Stdout, stderr: pe.Stderr, version: pe.Version, deps: defaultDeps()})
}

func run(ctx context.Context, args []string, e env) int {
	if e.getenv == nil {
		e.getenv = os.Getenv
	}
	if e.stdout == nil {
		e.stdout = os.Stdout
	}
	if e.stderr == nil {
		e.stderr = os.Stderr
	}
	if len(args) == 0 {
		fmt.Fprint(e.stderr, usageText())
		return ExitUsage
	}
	switch args[0] {
	case "-h", "-help", "--help":
		fmt.Fprint(e.stdout, usageText())
		return ExitOK
	case "help":
		// am help <command> is am <command> --help.
		if len(args) == 1 || (len(args) == 2 && (args[1] == "help" || args[1] == "version")) {
			fmt.Fprint(e.stdout, usageText())
			return ExitOK
		}
		if len(args) > 2 {
			fmt.Fprintf(e.stderr, "am help: want one command, got %q\n(am --help lists the commands)\n", args[1:])
			return ExitUsage
		}
		if _, ok := findCommand(args[1]); !ok {
			fmt.Fprintf(e.stderr, "am help: %s\n(am --help lists the commands)\n", unknownCommand(args[1]))
			return ExitUsage
		}
		args = []string{args[1], "--help"}
	case "--version", "-version", "version":
		fmt.Fprint(e.stdout, e.version)
		return ExitOK
	}
	cmd, ok := findCommand(args[0])
	if !ok {
		fmt.Fprintf(e.stderr, "am: %s\n(am --help lists the commands)\n", unknownCommand(args[0]))
		return ExitUsage
	}
	e.log = logrus.New()
	e.log.SetOutput(e.stderr)
	err := cmd.run(ctx, args[1:], &e)
	var help helpRequested
	if errors.As(err, &help) {
		printHelp(e.stdout, cmd, help.fs)
		return ExitOK
	}
	code := exitCode(err)
	if err != nil && !errors.Is(err, errAppFailed) {
		fmt.Fprintf(e.stderr, "am %s: %v\n", cmd.name, err)
	}
	if errors.Is(err, errUsage) {
		fmt.Fprintf(e.stderr, "usage: am %s\n(am %s --help lists the flags)\n", cmd.synopsis, cmd.name)
	}
	return code
}

// findCommand is the subcommand called name.
func findCommand(name string) (command, bool) {
	i := slices.IndexFunc(commands, func(c command) bool { return c.name == name })
	if i < 0 {
		return command{}, false
	}
	return commands[i], true
}

// unknownCommand says that name is no command, with the nearest ones:
// `unknown command "sumbit"; did you mean "submit"?`.
func unknownCommand(name string) string {
	names := []string{"help", "version", "--help", "--version"}
	for _, c := range commands {
		names = append(names, c.name)
	}
	msg := fmt.Sprintf("unknown command %q", name)
	if m := suggest.DidYouMean(name, names); m != "" {
		msg += "; " + m
	}
	return msg
}

// errAppFailed is returned when the application ended other than SUCCEEDED
// (already reported), or am kill found it already ended.
var errAppFailed = errors.New("application did not succeed")

// configError marks configuration problems (exit 3).
type configError struct{ err error }

func (c configError) Error() string { return c.err.Error() }
func (c configError) Unwrap() error { return c.err }

// clusterError marks cluster problems (exit 4).
type clusterError struct{ err error }

func (c clusterError) Error() string { return c.err.Error() }
func (c clusterError) Unwrap() error { return c.err }

func exitCode(err error) int {
	var ce configError
	var cl clusterError
	switch {
	case err == nil:
		return ExitOK
	case errors.Is(err, errUsage):
		return ExitUsage
	case errors.Is(err, errNotWired):
		return ExitCluster
	case errors.Is(err, errAppFailed):
		return ExitAppFailed
	case errors.As(err, &ce):
		return ExitConfig
	case errors.As(err, &cl):
		return ExitCluster
	default:
		return ExitCluster
	}
}

// repeatedFlag collects a repeated flag's values as given (commas kept).
type repeatedFlag []string

func (r *repeatedFlag) String() string     { return strings.Join(*r, " ") }
func (r *repeatedFlag) Set(v string) error { *r = append(*r, v); return nil }

// listFlag collects repeated, comma-separated values.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

func (l *listFlag) Set(v string) error {
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			*l = append(*l, p)
		}
	}
	return nil
}

// common are the flags most subcommands share.
type common struct {
	conf        string
	dynamic     conf.DynamicFlag // -D: the flag package never shows a rejected one (conf.ParseError)
	dynamicFile string
	logLevel    string
	// sparkConf and spark are Spark's front-end: a spark-defaults.conf and
	// spark-submit-style --conf overrides (here --spark k=v).
	sparkConf string
	spark     repeatedFlag
	// overrides are the dynamic file's overrides and then -D's, as load
	// read them.
	overrides []string
}

func (c *common) register(fs *flag.FlagSet, withConf bool) {
	if withConf {
		fs.StringVar(&c.conf, "conf", "", "Flink configuration file or folder (default: $FLINK_CONF_DIR)")
		fs.Var(&c.dynamic, "D", "override a configuration key: -D key=value (repeatable)")
		fs.StringVar(&c.dynamicFile, "dynamic-file", "", "overrides from a JSON object of strings; -D wins over it")
		fs.StringVar(&c.sparkConf, "spark-conf", "", "Spark's spark-defaults.conf: its spark.executor.resource.* keys become external resources\n(default with --spark: $SPARK_CONF_DIR/spark-defaults.conf when it exists)")
		fs.Var(&c.spark, "spark", "a Spark key, as spark-submit's --conf: --spark spark.executor.resource.gpu.amount=1 (repeatable)")
	}
	fs.StringVar(&c.logLevel, "log-level", "", "log level: panic, fatal, error, warn, info, debug, trace")
}

func (c *common) apply(e *env) error {
	level := c.logLevel
	if level == "" {
		level = e.getenv("XRES_LOG_LEVEL")
	}
	if level == "" {
		level = "info"
	}
	l, err := logrus.ParseLevel(level)
	if err != nil {
		return fmt.Errorf("%w: --log-level %q: %w", errUsage, level, err)
	}
	e.log.SetLevel(l)
	return nil
}

// load finds and reads the Flink configuration.
func (c *common) load(e *env) (*conf.Config, error) {
	path, err := conf.Find(c.conf, e.getenv)
	if err != nil {
		return nil, configError{err}
	}
	c.overrides, err = conf.WithDynamicFile(c.dynamicFile, c.dynamic.Values)
	if err != nil {
		return nil, configError{err}
	}
	cfg, err := conf.Load(path, c.overrides)
	if err != nil {
		return nil, configError{err}
	}
	if c.sparkConf == "" && len(c.spark) == 0 {
		return cfg, nil
	}
	// Spark's keys over the Flink file, -D over both; what Spark set is
	// passed on (staged) with the -D overrides.
	sparkPath := c.sparkConf
	if sparkPath == "" {
		sparkPath = conf.FindSpark(e.getenv)
	}
	spark, err := conf.LoadSpark(sparkPath, c.spark)
	if err != nil {
		return nil, configError{err}
	}
	mapped, err := conf.FromSpark(spark)
	if err != nil {
		return nil, configError{err}
	}
	c.overrides = append(cfg.WithSpark(mapped), c.overrides...)
	return cfg, nil
}

// parse parses args with flags allowed anywhere before "--"; it returns
// the positional arguments and what follows "--".
func parse(fs *flag.FlagSet, args []string) (positional, rest []string, err error) {
	fs.SetOutput(io.Discard)
	for i, a := range args {
		if a == "--" {
			args, rest = args[:i], args[i+1:]
			break
		}
	}
	args = splitD(args)
	for {
		if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
			return nil, nil, helpRequested{fs}
		} else if err != nil {
			// Neither a rejected -D's value nor an unknown flag without
			// the flags it may have meant.
			return nil, nil, fmt.Errorf("%w: %w", errUsage, suggest.FlagError(fs, conf.ParseError(fs, err)))
		}
		args = fs.Args()
		if len(args) == 0 {
			return positional, rest, nil
		}
		positional = append(positional, args[0])
		args = args[1:]
	}
}

// splitD turns -Dkey=value into -D key=value for the flag package.
func splitD(args []string) []string {
	out := make([]string, 0, len(args))
	for _, a := range args {
		if strings.HasPrefix(a, "-D") && len(a) > 2 && a[2] != '=' {
			out = append(out, "-D", a[2:])
			continue
		}
		out = append(out, a)
	}
	return out
}
