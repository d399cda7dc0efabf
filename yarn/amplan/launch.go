package amplan

import (
	"strings"

	"github.com/xres/xres/conf"
	"github.com/xres/xres/yarn"
)

// LogDir is the NodeManager's placeholder for the container's log folder in
// a command (ApplicationConstants.LOG_DIR_EXPANSION_VAR).
const LogDir = "<LOG_DIR>"

// Command builds one container command line: argv, each argument quoted,
// with stdout and stderr redirected into the container's YARN log folder
// (<LOG_DIR>/stdout, <LOG_DIR>/stderr) so `yarn logs` and the NM UI show
// them.
//
// The NodeManager writes the command into its launch script as
//
//	exec /bin/bash -c "<command>"
//
// so the command is first quoted for the inner bash (single quotes) and
// then escaped for the outer double quotes (\ " $ `).
func Command(argv []string) string {
	quoted := make([]string, len(argv))
	for i, a := range argv {
		quoted[i] = shellQuote(a)
	}
	return escapeDoubleQuoted(strings.Join(quoted, " ")) +
		" 1>" + LogDir + "/stdout 2>" + LogDir + "/stderr"
}

func shellQuote(s string) string {
	if s == "" {
		return "''"
	}
	safe := true
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_-./:=,+@%", r)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func escapeDoubleQuoted(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '\\', '"', '$', '`':
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// EnvFromConfig collects prefix+VAR=value entries (Flink's
// containerized.taskmanager.env.VAR / containerized.master.env.VAR) into an
// environment map.
func EnvFromConfig(cfg *conf.Config, prefix string) map[string]string {
	return cfg.WithPrefix(prefix)
}

// Environment prefixes (conf.TaskManagerEnv, conf.MasterEnv without <VAR>).
var (
	WorkerEnvPrefix = conf.TaskManagerEnv.For("").Key
	MasterEnvPrefix = conf.MasterEnv.For("").Key
)

// Link names of the binaries in a container: the AM's own (in the AM
// container; kept out of the workers'), the container-launcher and, when
// it ships, the launcher's NVML helper (driver/gpu.NVMLHelperName: the
// launcher is built without cgo and reads NVML through it) and its
// NodeManager REST helper (driver/gpu.NMRESTHelperName: TLS and Kerberos
// for a NodeManager's REST on HTTPS or asking for SPNEGO, kept out of the
// launcher's start).
const (
	AMName           = "am"
	LauncherName     = "container-launcher"
	NVMLHelperName   = "xres-nvml"
	NMRESTHelperName = "xres-nmrest"
)

// WorkerSpec is how every worker container is started.
type WorkerSpec struct {
	Resources map[string]yarn.LocalResource // the staged files; the AM's own binary ("am") is left out
	ConfName  string                        // link name of the Flink configuration; "" for none
	// DynamicFile is the link name of the staged dynamic file (the -D
	// overrides of am submit, a JSON object: conf.ReadDynamicFile); "" for
	// none. Its values never appear on a command line.
	DynamicFile string
	// Dynamic are -D overrides given to am run by hand, key=value: they are
	// passed on the launcher's command line.
	Dynamic []string
	Worker  []string          // the worker command
	Env     map[string]string // containerized.taskmanager.env.* and xres's own
	Tokens  []byte            // HDTS credentials without the AMRMToken (the report secret, delegation tokens)
}

// WorkerLaunch builds a worker's launch context:
//
//	./container-launcher [--conf NAME] [--dynamic-file NAME] [-D k=v]… -- <worker command> 1><LOG_DIR>/stdout 2><LOG_DIR>/stderr
func WorkerLaunch(spec WorkerSpec) yarn.LaunchContext {
	argv := []string{"./" + LauncherName}
	if spec.ConfName != "" {
		argv = append(argv, "--conf", spec.ConfName)
	}
	if spec.DynamicFile != "" {
		argv = append(argv, "--dynamic-file", spec.DynamicFile)
	}
	for _, d := range spec.Dynamic {
		argv = append(argv, "-D", d)
	}
	argv = append(append(argv, "--"), spec.Worker...)
	res := map[string]yarn.LocalResource{}
	for name, r := range spec.Resources {
		if name != AMName {
			res[name] = r
		}
	}
	env := map[string]string{}
	for k, v := range spec.Env {
		env[k] = v
	}
	return yarn.LaunchContext{Commands: []string{Command(argv)}, Env: env, LocalResources: res, Tokens: spec.Tokens}
}

// NullWorkerLaunch is a worker's launch context under
// xres.bench.null-worker, the floor a benchmark measures xres against: the
// worker command alone, with the same environment and credentials, and
// neither the container-launcher nor any file to localize:
//
//	<worker command> 1><LOG_DIR>/stdout 2><LOG_DIR>/stderr
//
// Its workers get no devices and send no report.
func NullWorkerLaunch(spec WorkerSpec) yarn.LaunchContext {
	env := map[string]string{}
	for k, v := range spec.Env {
		env[k] = v
	}
	return yarn.LaunchContext{Commands: []string{Command(spec.Worker)}, Env: env, Tokens: spec.Tokens}
}
