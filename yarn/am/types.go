package am

import (
	"context"
	"errors"

	"github.com/xres/xres/yarn"
	"github.com/xres/xres/yarn/security"
)

// ErrShutdown is returned by Run when the RM orders the AM to shut down
// (AM_SHUTDOWN): the attempt is over and the AM must exit without
// unregistering.
var ErrShutdown = errors.New("resource manager ordered the application master to shut down")

// RMClient is what the AM needs from ApplicationMasterProtocol.
// *yarn.AMRMClient implements it: it authenticates with the AMRMToken,
// keeps the allocate response id (reset on Register), answers
// ApplicationMasterNotRegisteredException with an error wrapping
// yarn.ErrApplicationMasterNotRegistered and a refused SchedulingRequest
// with yarn.ErrPlacementUnsupported, and retries finishApplicationMaster
// until the RM says it is unregistered.
type RMClient interface {
	Register(ctx context.Context, req yarn.RegisterRequest) (yarn.RegisterResponse, error)
	Allocate(ctx context.Context, req yarn.AllocateRequest) (yarn.AllocateResponse, error)
	Finish(ctx context.Context, req yarn.FinishRequest) error
}

// NMClient is what the AM needs from ContainerManagementProtocol, one
// container at a time. nmToken is the newest NMToken the RM sent for the
// container's node (zero Token if none was received).
type NMClient interface {
	StartContainer(ctx context.Context, c yarn.Container, nmToken security.Token, launch yarn.LaunchContext) error
	StopContainer(ctx context.Context, c yarn.Container, nmToken security.Token) error
}

// BatchStarter is an NMClient that starts several containers of one
// NodeManager in one call (startContainers takes a list). The AM then sends
// up to Config.StartBatch of a node's waiting containers at a time. The
// result has one entry per container: nil when it started.
type BatchStarter interface {
	StartContainers(ctx context.Context, cs []yarn.Container, nmToken security.Token, launch yarn.LaunchContext) []error
}

// LogFetcher reads the last lines of one of a container's log files
// ("stderr", "stdout") from its NodeManager (web UI / REST).
type LogFetcher interface {
	Tail(ctx context.Context, c yarn.Container, file string, lines int) ([]string, error)
}
