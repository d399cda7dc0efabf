// Package launchcmd is what container-launcher's start needs to know of its
// command line before anything else: which subcommand the arguments name,
// the discovery scripts' names it answers to, and the signals a launch
// forwards. It imports none of the launcher's packages, so that the
// command's package initialisation can use it (the signal subscription of
// a launch begins there: cmd/container-launcher/internal/earlysig).
package launchcmd

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// Command is what the arguments ask for.
type Command int

const (
	Launch   Command = iota // run a worker (no subcommand)
	Probe                   // probe
	Check                   // check
	Discover                // discover: the discovery bridge
	PinExec                 // __exec-pinned: a per-device worker's pinned exec
	Help                    // help [topic]
	Usage                   // -h, -help, --help
	Version                 // --version, -version, version
)

// Subcommand names.
const (
	ProbeName    = "probe"
	CheckName    = "check"
	DiscoverName = "discover"
	PinExecName  = "__exec-pinned"
	HelpName     = "help"
)

// Of returns the command args (without the program name) ask for.
func Of(args []string) Command {
	if len(args) == 0 {
		return Launch
	}
	switch args[0] {
	case ProbeName:
		return Probe
	case CheckName:
		return Check
	case DiscoverName:
		return Discover
	case PinExecName:
		return PinExec
	case HelpName:
		return Help
	case "-h", "-help", "--help":
		return Usage
	case "--version", "-version", "version":
		return Version
	}
	return Launch
}

// BridgeArgs is how a launcher started under a discovery script's name,
// xres-<resource>-discovery (also with .sh), runs: the discover subcommand
// for that resource, with the engine's arguments after "--" so that none is
// read as a flag of ours. ok is false for any other name.
func BridgeArgs(argv0 string, args []string) ([]string, bool) {
	name := strings.TrimSuffix(filepath.Base(argv0), ".sh")
	res, pre := strings.CutPrefix(name, "xres-")
	res, suf := strings.CutSuffix(res, "-discovery")
	if !pre || !suf || res == "" {
		return nil, false
	}
	return append([]string{DiscoverName, "--resources", res, "--"}, args...), true
}

// Args returns the arguments the process runs with (os.Args as
// BridgeArgs rewrites them), without the program name.
func Args(argv []string) []string {
	if len(argv) == 0 {
		return nil
	}
	if b, ok := BridgeArgs(argv[0], argv[1:]); ok {
		return b
	}
	return argv[1:]
}

// ForwardedSignals are the signals a launch passes on to the worker's
// process group. YARN stops a container with SIGTERM, then SIGKILL after
// yarn.nodemanager.sleep-delay-before-sigkill.ms; SIGKILL cannot be caught,
// so a launcher killed that way takes its worker along: the worker by its
// parent-death signal, its whole group by its reaper.
var ForwardedSignals = []os.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT}
