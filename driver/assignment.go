package driver

import (
	"context"
	"errors"
)

// Sentinel errors of a node-side device assignment (YARN's NodeManager GPU
// plugin assigning GPUs to containers).
var (
	// ErrAssignmentUnknown: the node may be assigning devices to
	// containers, but which ones this container holds could not be learnt
	// (its NodeManager's REST unreachable, refusing, or answering garbage).
	// Nothing is handed out: guessing could put the worker on another
	// container's device. The launcher exits LauncherExitAssignment.
	ErrAssignmentUnknown = errors.New("the node's device assignment for this container is unknown")
	// ErrAssignmentMismatch: the node assigned this container a different
	// number of devices than the configuration asks, or devices the host's
	// discovery does not see.
	ErrAssignmentMismatch = errors.New("the node's device assignment disagrees")
)

// Node modes (NodeAssignment.Mode): who picks a container's devices on
// this host.
const (
	NodeModeHost     = "host"     // not in a YARN container: host coordination
	NodeModeOff      = "off"      // reading the node's assignment is switched off: host coordination
	NodeModeCounted  = "counted"  // the NodeManager counts the resource but assigns nothing: host coordination
	NodeModePlugin   = "plugin"   // the NodeManager's plugin assigns; the container sees every GPU (no isolation)
	NodeModeIsolated = "isolated" // the plugin assigns and the container sees only its GPUs (cgroup)
	NodeModeDocker   = "docker"   // the Docker runtime's NVIDIA_VISIBLE_DEVICES names the container's GPUs
	NodeModeUnknown  = "unknown"  // the NodeManager could not be asked: nothing is handed out
)

// NodeAssignment is what the node's resource manager says of one resource
// for this container, and what the driver does with it.
type NodeAssignment struct {
	Mode string `json:"mode"`
	// YarnResource is the YARN resource name asked about (yarn.io/gpu,
	// nvidia.com/gpu); URL the NodeManager REST address asked.
	YarnResource string `json:"yarn_resource,omitempty"`
	URL          string `json:"url,omitempty"`
	Container    string `json:"container,omitempty"`
	// Assigned names the devices assigned to this container ("minor 2
	// (index 1)"); Total is how many the NodeManager manages.
	Assigned []string `json:"assigned,omitempty"`
	Total    int      `json:"total,omitempty"`
	// Action is what the driver does here, in words.
	Action string `json:"action"`
	// Problem is why the assignment is unknown (Mode unknown) or what
	// was ignored.
	Problem string `json:"problem,omitempty"`
}

// AssignmentReporter is implemented by a Factory whose drivers take the
// devices a node-side plugin assigned to the container (the GPU driver on
// a NodeManager with YARN's GPU plugin). check and probe report it.
type AssignmentReporter interface {
	NodeAssignment(ctx context.Context, opts Options) (NodeAssignment, error)
}
