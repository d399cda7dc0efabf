package yarn

import (
	"errors"

	"github.com/xres/xres/yarn/security"
)

// The ApplicationMasterProtocol's messages in Go types: what AMRMClient's
// Register, Allocate and Finish take and return. Only the parts an AM uses
// are carried; the proto conversion stays inside this package.

// ErrPlacementUnsupported is what AMRMClient.Allocate returns (wrapped)
// when the RM refuses a SchedulingRequest because its placement handler
// (yarn.resourcemanager.placement-constraints.handler) is disabled.
var ErrPlacementUnsupported = errors.New("the resource manager cannot handle placement constraints")

// DefaultPriority is the priority of an Ask that names none (0).
const DefaultPriority int32 = 1

// DefaultAllocationTag is the allocation tag of a SchedulingRequest whose
// Ask names none: every worker container asked with a placement
// constraint carries it, and the constraint counts the containers of this
// application carrying it.
const DefaultAllocationTag = "xres-worker"

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

// NMToken is the token to talk to one NodeManager (node id host:port).
type NMToken struct {
	NodeID string
	Token  security.Token
}

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
	Priority int32 // 0: DefaultPriority
	Profile  Resource
	Count    int
	// NodeLabel is the node label expression ("": the queue's default).
	NodeLabel string
	// MaxPerNode > 0 sends the ask as a SchedulingRequest tagged Tag: at
	// most MaxPerNode containers of that tag on one node.
	MaxPerNode int
	// Tag is the allocation tag of a SchedulingRequest ("":
	// DefaultAllocationTag).
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

// AllocateRequest is one heartbeat. The client keeps the response id.
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
	AMRMToken *security.Token // set when the RM rolled the AMRMToken
	Shutdown  bool            // AM_SHUTDOWN
	// ClusterNodes is num_cluster_nodes (0: not sent); UpdatedNodes the
	// nodes whose state changed.
	ClusterNodes int
	UpdatedNodes []NodeUpdate
}

// NodeUpdate is one entry of an allocate answer's updated_nodes: a node
// whose state changed (NodeStateProto's name without its NS_ prefix).
type NodeUpdate struct {
	NodeID string
	State  string
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
