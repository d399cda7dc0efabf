package am

import (
	"context"
	"errors"

	"github.com/xres/xres/yarn"
	"github.com/xres/xres/yarn/security"
)

// ErrNotRegistered is what an RMClient's Allocate or Finish returns (wrapped)
// when the RM answers ApplicationMasterNotRegisteredException, after an RM
// restart or fail-over: the AM re-registers and re-sends its whole state.
var ErrNotRegistered = errors.New("application master is not registered")

// ErrPlacementUnsupported is what an RMClient's Allocate returns (wrapped)
// when the RM refuses a SchedulingRequest because its placement handler
// (yarn.resourcemanager.placement-constraints.handler) is disabled: the AM
// fails the application naming that key and
// xres.placement.max-workers-per-node.
var ErrPlacementUnsupported = errors.New("the resource manager cannot handle placement constraints")

// ErrShutdown is returned by Run when the RM orders the AM to shut down
// (AM_SHUTDOWN): the attempt is over and the AM must exit without
// unregistering.
var ErrShutdown = errors.New("resource manager ordered the application master to shut down")

// YARN container exit statuses (ContainerExitStatus); a positive value is
// the process's own exit code.
const (
	ExitSuccess           = 0
	ExitInvalid           = -1000
	ExitAborted           = -100
	ExitDisksFailed       = -101
	ExitPreempted         = -102
	ExitKilledExceedVMem  = -103
	ExitKilledExceedPMem  = -104
	ExitKilledByAM        = -105
	ExitKilledByRM        = -106
	ExitKilledAfterFinish = -107
)

// Token is a Hadoop token, opaque to the AM: an AMRMToken, an NMToken or a
// container token (security.Token: one type for every token; it never
// prints its identifier or password).
type Token = security.Token

// NMToken is the token to talk to one NodeManager (node id host:port).
type NMToken struct {
	NodeID string
	Token  Token
}

// Container is one allocated container (yarn.Container).
type Container = yarn.Container

// Completed is the final status of a container (ContainerStatusProto).
type Completed struct {
	ID          string
	ExitStatus  int
	Diagnostics string
}

// Ask is one outstanding container request: Count containers of Profile,
// tied to the answers by ID (allocation_request_id). Count is the absolute
// number still wanted, as YARN's ResourceRequest means it; 0 cancels.
type Ask struct {
	ID       int64
	Priority int32
	Profile  Resource
	Count    int
	// NodeLabel is the node label expression ("": the queue's default).
	NodeLabel string
	// MaxPerNode > 0 sends the ask as a SchedulingRequest tagged Tag: at
	// most MaxPerNode containers of that tag on one node.
	MaxPerNode int
	// Tag is the allocation tag of a SchedulingRequest ("":
	// WorkerAllocationTag).
	Tag string
}

// RegisterRequest is what the AM tells the RM when it registers.
type RegisterRequest struct {
	Host        string
	RPCPort     int32 // -1: none
	TrackingURL string
}

// RegisterResponse is the part of the RM's answer the AM uses.
type RegisterResponse struct {
	MaxCapability      Resource
	ResourceTypes      []ResourceType
	Queue              string
	PreviousContainers []Container
	NMTokens           []NMToken
}

// AllocateRequest is one heartbeat. The adapter keeps the response id.
type AllocateRequest struct {
	Asks            []Ask
	Release         []string // container ids
	BlacklistAdd    []string // host names
	BlacklistRemove []string
	Progress        float32
}

// AllocateResponse is the part of the RM's heartbeat answer the AM uses.
type AllocateResponse struct {
	Allocated []Container
	Completed []Completed
	NMTokens  []NMToken
	AMRMToken *Token // set when the RM rolled the AMRMToken
	Shutdown  bool   // AM_SHUTDOWN
	// ClusterNodes is num_cluster_nodes (0: not sent); UpdatedNodes the
	// nodes whose state changed.
	ClusterNodes int
	UpdatedNodes []NodeUpdate
}

// FinalStatus is the application's final status at unregister.
type FinalStatus string

// Final statuses.
const (
	StatusSucceeded FinalStatus = "SUCCEEDED"
	StatusFailed    FinalStatus = "FAILED"
	StatusKilled    FinalStatus = "KILLED"
)

// FinishRequest unregisters the AM.
type FinishRequest struct {
	Status      FinalStatus
	Diagnostics string
	TrackingURL string
}

// RMClient is what the AM needs from ApplicationMasterProtocol. An adapter
// over the Hadoop RPC client implements it: it authenticates with the
// AMRMToken, keeps the allocate response id (reset on Register), maps
// ApplicationMasterNotRegisteredException to ErrNotRegistered, and retries
// finishApplicationMaster until the RM says it is unregistered.
type RMClient interface {
	Register(ctx context.Context, req RegisterRequest) (RegisterResponse, error)
	Allocate(ctx context.Context, req AllocateRequest) (AllocateResponse, error)
	Finish(ctx context.Context, req FinishRequest) error
}

// NMClient is what the AM needs from ContainerManagementProtocol, one
// container at a time. nmToken is the newest NMToken the RM sent for the
// container's node (zero Token if none was received).
type NMClient interface {
	StartContainer(ctx context.Context, c Container, nmToken Token, launch LaunchContext) error
	StopContainer(ctx context.Context, c Container, nmToken Token) error
}

// BatchStarter is an NMClient that starts several containers of one
// NodeManager in one call (startContainers takes a list). The AM then sends
// up to Config.StartBatch of a node's waiting containers at a time. The
// result has one entry per container: nil when it started.
type BatchStarter interface {
	StartContainers(ctx context.Context, cs []Container, nmToken Token, launch LaunchContext) []error
}

// LogFetcher reads the last lines of one of a container's log files
// ("stderr", "stdout") from its NodeManager (web UI / REST).
type LogFetcher interface {
	Tail(ctx context.Context, c Container, file string, lines int) ([]string, error)
}
