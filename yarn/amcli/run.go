package amcli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/sirupsen/logrus"

	"github.com/xres/xres/conf"
)

// Exit codes of am.
const (
	ExitOK             = 0 // done; for submit/run: the application SUCCEEDED
	ExitAppFailed      = 1 // the application ended FAILED or KILLED; resources: errors found
	ExitUsage          = 2 // bad command line
	ExitConfig         = 3 // bad configuration
	ExitCluster        = 4 // the cluster could not be reached or refused a request
	ExitNotImplemented = 5 // the subcommand is not wired to the cluster clients yet
)

// errNotImplemented marks subcommands whose cluster clients are not wired yet.
var errNotImplemented = errors.New("not implemented yet")

// errUsage marks command-line mistakes.
var errUsage = errors.New("usage")

const usageText = `usage:
  am submit [--conf FILE] [-D k=v]… [--dynamic-file F] [--name NAME] [--queue Q] [--workers N]
            [--files F[#NAME],…]… [--launcher PATH] [--detach] [--rest] -- <worker command…>
        stage and submit an application; follow it until it ends (unless --detach);
        the -D overrides are staged in a file, never put on a command line
  am run [--conf FILE] [-D k=v]… [--dynamic-file F] [--workers N] -- <worker command…>
        the ApplicationMaster (started by YARN in the AM container)
  am status APP_ID [--json] [--rest]   state, workers and tracking URL of an application
  am kill APP_ID [--rest]              kill an application
  am cluster [--json] [--rest]         nodes with their GPU/FPGA capacity and use
  am resources [--conf FILE] [-D k=v]… [--dynamic-file F] [--workers N] [--json]
        the external resources parsed and the exact YARN container profile asked

common flags: --log-level LEVEL (default info, or $XRES_LOG_LEVEL); --rest uses the RM's
REST API instead of RPC (insecure clusters; the AM container gets memory and vcores only)
exit codes: 0 ok / application SUCCEEDED, 1 application FAILED or KILLED (resources:
errors found), 2 usage, 3 configuration, 4 cluster, 5 not implemented yet
`

// Env is what am gets from its process; a nil field takes the process's
// own (os.Getenv, os.Stdout, os.Stderr).
type Env struct {
	Getenv func(string) string
	Stdout io.Writer
	Stderr io.Writer
}

// env is what a subcommand gets: the process's Env and the cluster clients.
type env struct {
	getenv func(string) string
	stdout io.Writer
	stderr io.Writer
	log    *logrus.Logger
	deps   deps
}

// Main is am's testable main: it runs one subcommand (args without the
// program name) and returns the exit code.
func Main(ctx context.Context, args []string, pe Env) int {
	return run(ctx, args, env{getenv: pe.Getenv, stdout: pe.Stdout, stderr: pe.Stderr, deps: defaultDeps()})
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
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(e.stderr, usageText)
		if len(args) == 0 {
			return ExitUsage
		}
		return ExitOK
	}
	cmds := map[string]func(context.Context, []string, *env) error{
		"submit":    cmdSubmit,
		"run":       cmdRun,
		"status":    cmdStatus,
		"kill":      cmdKill,
		"cluster":   cmdCluster,
		"resources": cmdResources,
	}
	cmd, ok := cmds[args[0]]
	if !ok {
		fmt.Fprintf(e.stderr, "am: unknown command %q\n%s", args[0], usageText)
		return ExitUsage
	}
	e.log = logrus.New()
	e.log.SetOutput(e.stderr)
	err := cmd(ctx, args[1:], &e)
	code := exitCode(err)
	if err != nil && !errors.Is(err, errAppFailed) {
		fmt.Fprintf(e.stderr, "am %s: %v\n", args[0], err)
	}
	if errors.Is(err, errUsage) {
		fmt.Fprint(e.stderr, usageText)
	}
	return code
}

// errAppFailed is returned when the application ended other than SUCCEEDED
// (already reported) or am resources found errors.
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
	case errors.Is(err, errNotImplemented):
		return ExitNotImplemented
	case errors.Is(err, errAppFailed):
		return ExitAppFailed
	case errors.As(err, &ce):
		return ExitConfig
	case errors.As(err, &cl):
		return ExitCluster
	default:
		return ExitAppFailed
	}
}

// dynamicFlag collects repeated -D key=value overrides.
type dynamicFlag []string

func (d *dynamicFlag) String() string { return strings.Join(*d, ",") }

func (d *dynamicFlag) Set(v string) error {
	if _, _, err := conf.ParseDynamic(v); err != nil {
		return err
	}
	*d = append(*d, v)
	return nil
}

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
	dynamic     dynamicFlag
	dynamicFile string
	logLevel    string
	// overrides are the dynamic file's overrides and then -D's, as load
	// read them.
	overrides []string
}

func (c *common) register(fs *flag.FlagSet, withConf bool) {
	if withConf {
		fs.StringVar(&c.conf, "conf", "", "Flink configuration file or folder (default: $FLINK_CONF_DIR)")
		fs.Var(&c.dynamic, "D", "override a configuration key: -D key=value (repeatable)")
		fs.StringVar(&c.dynamicFile, "dynamic-file", "", "overrides from a JSON object of strings; -D wins over it")
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
	c.overrides, err = conf.WithDynamicFile(c.dynamicFile, c.dynamic)
	if err != nil {
		return nil, configError{err}
	}
	cfg, err := conf.Load(path, c.overrides)
	if err != nil {
		return nil, configError{err}
	}
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
		if err := fs.Parse(args); err != nil {
			return nil, nil, fmt.Errorf("%w: %w", errUsage, err)
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
