package am

import (
	"context"
	"errors"

	"github.com/xres/xres/yarn"
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
