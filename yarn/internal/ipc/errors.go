package ipc

import (
	"errors"
	"fmt"
	"strings"

	"github.com/xres/xres/hadoopproto/hadoopcommon"
)

// Sentinels for the Java exceptions callers act on. A *RemoteError matches
// them with errors.Is through its exception class name.
var (
	ErrInvalidToken                    = errors.New("invalid token")
	ErrAccessControl                   = errors.New("access denied")
	ErrStandby                         = errors.New("server is in standby state")
	ErrRetriable                       = errors.New("server asks to retry")
	ErrApplicationMasterNotRegistered  = errors.New("application master not registered")
	ErrInvalidApplicationMasterRequest = errors.New("invalid application master request")
	ErrApplicationAttemptNotFound      = errors.New("application attempt not found")
	ErrApplicationNotFound             = errors.New("application not found")
	ErrInvalidResourceRequest          = errors.New("invalid resource request")
	ErrResourceNotFound                = errors.New("resource type not found")
	ErrNoSuchProtocol                  = errors.New("no such protocol")
	ErrNoSuchMethod                    = errors.New("no such method")
	// ErrUnauthorized matches every FATAL_UNAUTHORIZED failure, whatever the
	// class (a bad token, a rejected SASL response, SIMPLE not allowed).
	ErrUnauthorized = errors.New("authentication failed")
	// ErrConnection matches every network-level failure (dial, read, write,
	// connection closed by the peer); see *NetError.
	ErrConnection = errors.New("connection failed")
	// ErrClosed is returned for calls on a connection closed by Close.
	ErrClosed = errors.New("connection closed")
)

var classSentinels = map[string]error{
	"org.apache.hadoop.security.token.SecretManager$InvalidToken":                ErrInvalidToken,
	"org.apache.hadoop.security.AccessControlException":                          ErrAccessControl,
	"org.apache.hadoop.security.authorize.AuthorizationException":                ErrAccessControl,
	"org.apache.hadoop.ipc.StandbyException":                                     ErrStandby,
	"org.apache.hadoop.ipc.RetriableException":                                   ErrRetriable,
	"org.apache.hadoop.yarn.exceptions.ApplicationMasterNotRegisteredException":  ErrApplicationMasterNotRegistered,
	"org.apache.hadoop.yarn.exceptions.InvalidApplicationMasterRequestException": ErrInvalidApplicationMasterRequest,
	"org.apache.hadoop.yarn.exceptions.ApplicationAttemptNotFoundException":      ErrApplicationAttemptNotFound,
	"org.apache.hadoop.yarn.exceptions.ApplicationNotFoundException":             ErrApplicationNotFound,
	"org.apache.hadoop.yarn.exceptions.InvalidResourceRequestException":          ErrInvalidResourceRequest,
	"org.apache.hadoop.yarn.exceptions.ResourceNotFoundException":                ErrResourceNotFound,
	"org.apache.hadoop.ipc.RpcNoSuchProtocolException":                           ErrNoSuchProtocol,
	"org.apache.hadoop.ipc.RpcNoSuchMethodException":                             ErrNoSuchMethod,
}

// RemoteError is an exception thrown by the Hadoop server, as carried in the
// response header. It works with errors.As, and with errors.Is against the
// sentinels above.
type RemoteError struct {
	Method  string // the call, or "sasl"/"connect" for connection set-up
	Class   string // Java exception class (exceptionClassName)
	Message string // errorMsg, which may hold a Java stack trace
	Code    hadoopcommon.RpcResponseHeaderProto_RpcErrorCodeProto
	Fatal   bool // the server closed the connection
}

// Error gives the method, class and the first line of the message.
func (e *RemoteError) Error() string {
	msg := e.Message
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = strings.TrimSpace(msg[:i])
	}
	return fmt.Sprintf("%s: %s: %s", e.Method, e.Class, msg)
}

// Is reports whether the exception class maps to target, or target is
// ErrUnauthorized and the server reported FATAL_UNAUTHORIZED.
func (e *RemoteError) Is(target error) bool {
	if target == ErrUnauthorized {
		return e.Code == hadoopcommon.RpcResponseHeaderProto_FATAL_UNAUTHORIZED ||
			e.Class == "org.apache.hadoop.security.token.SecretManager$InvalidToken"
	}
	if s, ok := classSentinels[e.Class]; ok {
		return s == target
	}
	return false
}

func remoteError(method string, h *hadoopcommon.RpcResponseHeaderProto) *RemoteError {
	return &RemoteError{
		Method:  method,
		Class:   h.GetExceptionClassName(),
		Message: h.GetErrorMsg(),
		Code:    h.GetErrorDetail(),
		Fatal:   h.GetStatus() == hadoopcommon.RpcResponseHeaderProto_FATAL,
	}
}

// NetError is a network-level failure talking to Addr. It matches
// ErrConnection with errors.Is and unwraps to the cause.
type NetError struct {
	Op   string // dial, read, write
	Addr string
	Err  error
}

func (e *NetError) Error() string { return fmt.Sprintf("%s %s: %v", e.Op, e.Addr, e.Err) }

// Unwrap returns the cause.
func (e *NetError) Unwrap() error { return e.Err }

// Is makes every NetError match ErrConnection.
func (e *NetError) Is(target error) bool { return target == ErrConnection }
