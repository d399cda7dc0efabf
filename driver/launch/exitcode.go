package launch

import (
	"errors"
	"fmt"

	"github.com/xres/xres/conf"
	"github.com/xres/xres/driver"
	"github.com/xres/xres/resources"
)

// Exit codes of container-launcher: the shared contract in the resources
// package (resources.LauncherExits lists them with their meaning and whom
// they blame), under this package's short names.
//
// check exits ExitConfig when a configuration problem would leave a worker
// without its devices, ExitDiscovery when only host problems would, and 0
// otherwise.
const (
	ExitOK          = resources.LauncherExitOK
	ExitUsage       = resources.LauncherExitUsage
	ExitConfig      = resources.LauncherExitConfig
	ExitDiscovery   = resources.LauncherExitDiscovery
	ExitWorkerStart = resources.LauncherExitWorker
	ExitInternal    = resources.LauncherExitInternal
	ExitAssignment  = resources.LauncherExitAssignment
	ExitGPUFailed   = resources.LauncherExitGPUFailed
)

// Sentinel errors classifying a launch failure; ExitCode maps them to the
// codes above. Callers test them with errors.Is.
var (
	ErrUsage       = errors.New("usage")
	ErrConfig      = conf.ErrInvalid // every configuration error (a *conf.Error matches it too)
	ErrDiscovery   = errors.New("discovery failed")
	ErrWorkerStart = errors.New("worker could not start")
	// ErrGPUFailed: a GPU of the worker failed (healthwatch.go), or YARN
	// assigned a quarantined one (nodeassign.go).
	ErrGPUFailed = errors.New("GPU failed")
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
	case errors.Is(err, driver.ErrAssignmentUnknown):
		return ExitAssignment
	case errors.Is(err, driver.ErrAssignedQuarantined):
		return ExitGPUFailed
	case errors.Is(err, ErrDiscovery):
		return ExitDiscovery
	case errors.Is(err, ErrWorkerStart):
		return ExitWorkerStart
	case errors.Is(err, ErrGPUFailed):
		return ExitGPUFailed
	default:
		return ExitInternal
	}
}

// ExitCodeName names a launcher exit code for logs and reports ("config",
// "discovery", …); worker codes are "worker".
func ExitCodeName(code int) string { return resources.DescribeLauncherExit(code).Name }

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
