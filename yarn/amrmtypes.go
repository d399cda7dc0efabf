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
	// ExitKilledByScheduler is KILLED_BY_CONTAINER_SCHEDULER (an
	// opportunistic container made way for a guaranteed one).
	ExitKilledByScheduler = -108
	ExitKilledExcessLogs  = -109 // KILLED_FOR_EXCESS_LOGS
)

// ExitCause says whose fault a container's end is, as Hadoop's
// MapReduce AM and Spark's YarnAllocator judge it.
type ExitCause int

// Exit causes.
const (
	// CauseApp: the worker ended or failed on its own (its exit code, its
	// memory beyond the container's limits, its logs beyond the NM's
	// limit, no exit status at all). It counts toward
	// yarn.maximum-failed-containers.
	CauseApp ExitCause = iota
	// CauseCluster: the cluster took the container (preemption, a kill by
	// the RM, the AM or the container scheduler, a lost node or an expired
	// allocation, the application's end). Replaced, never counted.
	CauseCluster
	// CauseNode: the node's local disks failed under the container.
	// Replaced, not counted; the node is blacklisted, as a node whose
	// launcher could not discover devices is.
	CauseNode
)

// ExitCauseOf classifies a container's exit status (ContainerExitStatus,
// or the process's own exit code when positive).
//
//	status  name                            cause
//	0       SUCCESS                         -
//	>0      the process's exit code         app
//	-1000   INVALID (no exit status)        app
//	-100    ABORTED                         cluster (lost node, expired allocation, released)
//	-101    DISKS_FAILED                    node
//	-102    PREEMPTED                       cluster
//	-103    KILLED_EXCEEDED_VMEM            app
//	-104    KILLED_EXCEEDED_PMEM            app
//	-105    KILLED_BY_APPMASTER             cluster
//	-106    KILLED_BY_RESOURCEMANAGER       cluster
//	-107    KILLED_AFTER_APP_COMPLETION     cluster
//	-108    KILLED_BY_CONTAINER_SCHEDULER   cluster
//	-109    KILLED_FOR_EXCESS_LOGS          app
func ExitCauseOf(status int) ExitCause {
	switch status {
	case ExitAborted, ExitPreempted, ExitKilledByAM, ExitKilledByRM, ExitKilledAfterFinish, ExitKilledByScheduler:
		return CauseCluster
	case ExitDisksFailed:
		return CauseNode
	}
	return CauseApp
}

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
	// Hosts and Racks, when Hosts is not empty, send the ask also as a
	// request of Count on each host and on each rack (relaxed locality,
	// the same allocation_request_id; the ANY request's Count caps the
	// total): the scheduler then places them node-local, many per node
	// heartbeat, where an ANY-only ask is placed off-switch, which the
	// CapacityScheduler limits to one container per node heartbeat
	// (yarn.scheduler.capacity.per-node-heartbeat.maximum-offswitch-assignments).
	// The RM decrements the host's, its rack's and the ANY count of each
	// node-local grant; the next ask sends all of them again. Not with
	// NodeLabel or MaxPerNode.
	Hosts, Racks []string
}

// DefaultRack is the rack YARN gives a node when no topology script names
// one (NetworkTopology.DEFAULT_RACK).
const DefaultRack = "/default-rack"

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
