package yarn

import (
	"errors"

	"github.com/xres/xres/yarn/internal/ipc"
	"github.com/xres/xres/yarn/internal/sasl"
)

// RemoteError is an exception thrown by a YARN server; use errors.As to
// read its Java class and message.
type RemoteError = ipc.RemoteError

// NetError is a network failure talking to one address.
type NetError = ipc.NetError

// Errors callers test with errors.Is. Remote exceptions match by their Java
// class name.
var (
	ErrInvalidToken                    = ipc.ErrInvalidToken                    // SecretManager$InvalidToken
	ErrUnauthorized                    = ipc.ErrUnauthorized                    // any authentication failure
	ErrAccessControl                   = ipc.ErrAccessControl                   // AccessControlException
	ErrStandby                         = ipc.ErrStandby                         // StandbyException
	ErrApplicationMasterNotRegistered  = ipc.ErrApplicationMasterNotRegistered  // re-register and resend state
	ErrInvalidApplicationMasterRequest = ipc.ErrInvalidApplicationMasterRequest // e.g. double register
	ErrApplicationAttemptNotFound      = ipc.ErrApplicationAttemptNotFound
	ErrApplicationNotFound             = ipc.ErrApplicationNotFound
	ErrInvalidResourceRequest          = ipc.ErrInvalidResourceRequest
	ErrResourceNotFound                = ipc.ErrResourceNotFound
	ErrConnection                      = ipc.ErrConnection // dial/read/write failure
	ErrKerberos                        = sasl.ErrKerberos  // no ticket could be had or used
	ErrQOP                             = sasl.ErrQOP       // hadoop.rpc.protection level not supported
	ErrClosed                          = ipc.ErrClosed     // client closed

	// ErrNoActiveRM means no address answered as an active
	// ResourceManager within the retry budget (all standby or unreachable).
	ErrNoActiveRM = errors.New("no active resourcemanager")
	// ErrNoToken means a client that needs a token was given none, or one
	// of the wrong kind.
	ErrNoToken = errors.New("no usable token")
)
