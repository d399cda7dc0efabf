package launch

import (
	"errors"
	"fmt"
)

// Exit codes of container-launcher. A worker that ran passes its own exit
// code through unchanged (128+N when it died of signal N, as a shell
// reports it). The launcher's own failures use a reserved block far from
// the codes workers and Hadoop commonly use (1, 2, 126, 127, 128+N such as
// 137 and 143, Flink's 239/243), so the ApplicationMaster can tell a bad job
// (configuration, worker command) from a bad node (discovery).
//
//	code  constant          meaning                                          blame
//	----  ----------------  -----------------------------------------------  ------
//	0     ExitOK            worker exited 0 (or probe/check found nothing)   -
//	N     (worker)          worker's own exit code, 128+sig on signal death  job
//	210   ExitUsage         bad command line (unknown flag, no worker)       job
//	211   ExitConfig        configuration error: bad key or value, unknown   job
//	                        driver factory, driver rejected its params
//	212   ExitDiscovery     discovery failed on this host: driver error,     node
//	                        script failed, no free devices (holders named)
//	213   ExitWorkerStart   the worker command could not be started          job
//	214   ExitInternal      the launcher failed otherwise (info file not     node
//	                        writable, …)
//
// check exits ExitConfig when a configuration problem would leave a worker
// without its devices, ExitDiscovery when only host problems would, and 0
// otherwise.
const (
	ExitOK          = 0
	ExitUsage       = 210
	ExitConfig      = 211
	ExitDiscovery   = 212
	ExitWorkerStart = 213
	ExitInternal    = 214
)

// Sentinel errors classifying a launch failure; ExitCode maps them to the
// codes above. Callers test them with errors.Is.
var (
	ErrUsage       = errors.New("usage")
	ErrConfig      = errors.New("configuration error")
	ErrDiscovery   = errors.New("discovery failed")
	ErrWorkerStart = errors.New("worker could not start")
)

// ExitCode maps an error returned by this package to the launcher's exit
// code: nil is ExitOK, a classified error its reserved code, anything else
// ExitInternal.
func ExitCode(err error) int {
	switch {
	case err == nil:
		return ExitOK
	case errors.Is(err, ErrUsage):
		return ExitUsage
	case errors.Is(err, ErrConfig):
		return ExitConfig
	case errors.Is(err, ErrDiscovery):
		return ExitDiscovery
	case errors.Is(err, ErrWorkerStart):
		return ExitWorkerStart
	default:
		return ExitInternal
	}
}

// ExitCodeName names a launcher exit code for logs and reports ("config",
// "discovery", …); worker codes are "worker".
func ExitCodeName(code int) string {
	switch code {
	case ExitOK:
		return "ok"
	case ExitUsage:
		return "usage"
	case ExitConfig:
		return "config"
	case ExitDiscovery:
		return "discovery"
	case ExitWorkerStart:
		return "worker-start"
	case ExitInternal:
		return "internal"
	default:
		return "worker"
	}
}

// classified wraps err so that errors.Is(result, kind) holds, keeping the
// message of err alone (the kind shows through ExitCodeName, not the text).
type classified struct {
	kind error
	err  error
}

func (c *classified) Error() string   { return c.err.Error() }
func (c *classified) Unwrap() []error { return []error{c.kind, c.err} }

func classify(kind, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, kind) {
		return err
	}
	return &classified{kind: kind, err: err}
}

func classifyf(kind error, format string, args ...any) error {
	return classify(kind, fmt.Errorf(format, args...))
}

// BadNodeExitCodes are the launcher codes that blame the host: discovery
// failed there (no device free, driver or script failure) or the launcher
// could not work there. An ApplicationMaster replaces the worker elsewhere.
func BadNodeExitCodes() []int { return []int{ExitDiscovery, ExitInternal} }

// BadJobExitCodes are the launcher codes that blame the job: the command
// line, the configuration or the worker command. No replacement can help.
func BadJobExitCodes() []int { return []int{ExitUsage, ExitConfig, ExitWorkerStart} }
