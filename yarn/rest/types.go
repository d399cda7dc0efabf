package rest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
)

// The JSON shapes of the RM REST API (Hadoop 3.x, Jersey 1 JSON as the RM
// serves it by default). Jersey versions disagree on two details, so the
// decoders accept both: numbers may come quoted (Int64), and a list of one
// element may come as a bare object or the whole list as null (List).

// Int64 is a JSON number that may also arrive as a numeric string.
type Int64 int64

// UnmarshalJSON implements json.Unmarshaler.
func (n *Int64) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if bytes.Equal(b, []byte("null")) {
		return nil
	}
	s := string(bytes.Trim(b, `"`))
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		f, ferr := strconv.ParseFloat(s, 64)
		if ferr != nil {
			return fmt.Errorf("not an integer: %s", b)
		}
		v = int64(f)
	}
	*n = Int64(v)
	return nil
}

// List is a JSON array that also accepts null and a single bare element.
type List[T any] []T

// UnmarshalJSON implements json.Unmarshaler.
func (l *List[T]) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case bytes.Equal(b, []byte("null")):
		*l = nil
		return nil
	case len(b) > 0 && b[0] == '[':
		var out []T
		if err := json.Unmarshal(b, &out); err != nil {
			return err
		}
		*l = out
		return nil
	}
	var one T
	if err := json.Unmarshal(b, &one); err != nil {
		return err
	}
	*l = List[T]{one}
	return nil
}

// ResourceInformation is one resource type's amount in a Resource
// (memory-mb, vcores, yarn.io/gpu, …).
type ResourceInformation struct {
	Name              string `json:"name"`
	ResourceType      string `json:"resourceType,omitempty"` // COUNTABLE
	Units             string `json:"units,omitempty"`
	Value             Int64  `json:"value"`
	MinimumAllocation Int64  `json:"minimumAllocation,omitempty"`
	MaximumAllocation Int64  `json:"maximumAllocation,omitempty"`
}

// ResourceInformations wraps the list as the RM nests it.
type ResourceInformations struct {
	ResourceInformation List[ResourceInformation] `json:"resourceInformation"`
}

// Resource is the RM's ResourceInfo: memory (MB) and vCores, plus every
// resource type in ResourceInformations (GPUs appear only there).
type Resource struct {
	Memory               Int64                 `json:"memory"`
	VCores               Int64                 `json:"vCores"`
	ResourceInformations *ResourceInformations `json:"resourceInformations,omitempty"`
}

// Value returns the amount of one resource type. "memory-mb" and "vcores"
// fall back to Memory and VCores when the list lacks them.
func (r *Resource) Value(name string) (int64, bool) {
	if r == nil {
		return 0, false
	}
	if r.ResourceInformations != nil {
		for _, ri := range r.ResourceInformations.ResourceInformation {
			if ri.Name == name {
				return int64(ri.Value), true
			}
		}
	}
	switch name {
	case "memory-mb", "memory":
		return int64(r.Memory), true
	case "vcores":
		return int64(r.VCores), true
	}
	return 0, false
}

// ClusterInfo is GET /ws/v1/cluster/info. HAState is ACTIVE, STANDBY,
// INITIALIZING or STOPPED; standby RMs answer this call themselves.
type ClusterInfo struct {
	ID                     Int64  `json:"id"`
	StartedOn              Int64  `json:"startedOn"`
	State                  string `json:"state"`
	HAState                string `json:"haState"`
	RMStateStoreName       string `json:"rmStateStoreName"`
	ResourceManagerVersion string `json:"resourceManagerVersion"`
	HadoopVersion          string `json:"hadoopVersion"`
	HAZooKeeperState       string `json:"haZooKeeperConnectionState"`
}

// ClusterMetrics is GET /ws/v1/cluster/metrics.
type ClusterMetrics struct {
	AppsSubmitted         Int64 `json:"appsSubmitted"`
	AppsCompleted         Int64 `json:"appsCompleted"`
	AppsPending           Int64 `json:"appsPending"`
	AppsRunning           Int64 `json:"appsRunning"`
	AppsFailed            Int64 `json:"appsFailed"`
	AppsKilled            Int64 `json:"appsKilled"`
	ReservedMB            Int64 `json:"reservedMB"`
	AvailableMB           Int64 `json:"availableMB"`
	AllocatedMB           Int64 `json:"allocatedMB"`
	TotalMB               Int64 `json:"totalMB"`
	ReservedVirtualCores  Int64 `json:"reservedVirtualCores"`
	AvailableVirtualCores Int64 `json:"availableVirtualCores"`
	AllocatedVirtualCores Int64 `json:"allocatedVirtualCores"`
	TotalVirtualCores     Int64 `json:"totalVirtualCores"`
	ContainersAllocated   Int64 `json:"containersAllocated"`
	ContainersReserved    Int64 `json:"containersReserved"`
	ContainersPending     Int64 `json:"containersPending"`
	TotalNodes            Int64 `json:"totalNodes"`
	ActiveNodes           Int64 `json:"activeNodes"`
	LostNodes             Int64 `json:"lostNodes"`
	UnhealthyNodes        Int64 `json:"unhealthyNodes"`
	DecommissioningNodes  Int64 `json:"decommissioningNodes"`
	DecommissionedNodes   Int64 `json:"decommissionedNodes"`
	RebootedNodes         Int64 `json:"rebootedNodes"`
	ShutdownNodes         Int64 `json:"shutdownNodes"`
	// Totals over all partitions, with every resource type (3.x).
	TotalClusterResources *Resource `json:"totalClusterResourcesAcrossPartition,omitempty"`
	TotalUsedResources    *Resource `json:"totalUsedResourcesAcrossPartition,omitempty"`
}

// Node is one entry of GET /ws/v1/cluster/nodes.
type Node struct {
	ID                    string    `json:"id"`
	Rack                  string    `json:"rack"`
	State                 string    `json:"state"` // NEW, RUNNING, UNHEALTHY, DECOMMISSIONED, LOST, …
	NodeHostName          string    `json:"nodeHostName"`
	NodeHTTPAddress       string    `json:"nodeHTTPAddress"`
	LastHealthUpdate      Int64     `json:"lastHealthUpdate"`
	Version               string    `json:"version"`
	HealthReport          string    `json:"healthReport"`
	NumContainers         Int64     `json:"numContainers"`
	UsedMemoryMB          Int64     `json:"usedMemoryMB"`
	AvailMemoryMB         Int64     `json:"availMemoryMB"`
	UsedVirtualCores      Int64     `json:"usedVirtualCores"`
	AvailableVirtualCores Int64     `json:"availableVirtualCores"`
	UsedResource          *Resource `json:"usedResource,omitempty"`
	AvailableResource     *Resource `json:"availableResource,omitempty"`
	TotalResource         *Resource `json:"totalResource,omitempty"`
}

// Total returns the node's capacity of one resource type (e.g.
// "yarn.io/gpu"): totalResource where the RM sends it, else used plus
// available.
func (n *Node) Total(name string) (int64, bool) {
	if v, ok := n.TotalResource.Value(name); ok {
		return v, true
	}
	used, uok := n.UsedResource.Value(name)
	avail, aok := n.AvailableResource.Value(name)
	if !uok && !aok {
		return 0, false
	}
	return used + avail, true
}

// App is one application (GET /ws/v1/cluster/apps[/{id}]).
type App struct {
	ID                  string  `json:"id"`
	User                string  `json:"user"`
	Name                string  `json:"name"`
	Queue               string  `json:"queue"`
	State               string  `json:"state"`       // NEW, NEW_SAVING, SUBMITTED, ACCEPTED, RUNNING, FINISHED, FAILED, KILLED
	FinalStatus         string  `json:"finalStatus"` // UNDEFINED, SUCCEEDED, FAILED, KILLED
	Progress            float64 `json:"progress"`
	TrackingUI          string  `json:"trackingUI"`
	TrackingURL         string  `json:"trackingUrl"`
	Diagnostics         string  `json:"diagnostics"`
	ClusterID           Int64   `json:"clusterId"`
	ApplicationType     string  `json:"applicationType"`
	ApplicationTags     string  `json:"applicationTags"`
	Priority            Int64   `json:"priority"`
	StartedTime         Int64   `json:"startedTime"`
	LaunchTime          Int64   `json:"launchTime"`
	FinishedTime        Int64   `json:"finishedTime"`
	ElapsedTime         Int64   `json:"elapsedTime"`
	AMContainerLogs     string  `json:"amContainerLogs"`
	AMHostHTTPAddress   string  `json:"amHostHttpAddress"`
	AllocatedMB         Int64   `json:"allocatedMB"`
	AllocatedVCores     Int64   `json:"allocatedVCores"`
	RunningContainers   Int64   `json:"runningContainers"`
	MemorySeconds       Int64   `json:"memorySeconds"`
	VCoreSeconds        Int64   `json:"vcoreSeconds"`
	UnmanagedAM         bool    `json:"unmanagedApplication"`
	AMNodeLabelExpr     string  `json:"amNodeLabelExpression"`
	NumAMContainerPreem Int64   `json:"numAMContainerPreempted"`
}

// NewApplication is the answer to POST /ws/v1/cluster/apps/new-application.
type NewApplication struct {
	ApplicationID             string   `json:"application-id"`
	MaximumResourceCapability Resource `json:"maximum-resource-capability"`
}

// Entry is one key/value pair of the RM's map encoding.
type Entry[T any] struct {
	Key   string `json:"key"`
	Value T      `json:"value"`
}

// Entries is a map as the RM encodes it: {"entry": [{"key":…, "value":…}]}.
type Entries[T any] struct {
	Entry []Entry[T] `json:"entry"`
}

// StringEntries turns a map into Entries, sorted by key so requests are
// reproducible; nil for an empty map.
func StringEntries(m map[string]string) *Entries[string] {
	if len(m) == 0 {
		return nil
	}
	e := &Entries[string]{Entry: make([]Entry[string], 0, len(m))}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		e.Entry = append(e.Entry, Entry[string]{Key: k, Value: m[k]})
	}
	return e
}

// LocalResource is a file the NodeManager downloads into the container.
type LocalResource struct {
	Resource   string `json:"resource"`   // URL, e.g. hdfs://nn:8020/user/x/app.jar
	Type       string `json:"type"`       // FILE, ARCHIVE, PATTERN
	Visibility string `json:"visibility"` // PUBLIC, PRIVATE, APPLICATION
	Size       int64  `json:"size"`
	Timestamp  int64  `json:"timestamp"` // modification time, ms
}

// Commands holds the AM command line, run by bash in the container.
// <LOG_DIR>, {{VAR}} and <CPS> are expanded by the NodeManager.
type Commands struct {
	Command string `json:"command"`
}

// Credentials carries tokens (URL-safe base64 of Hadoop's Token) and secrets
// (base64). Its String never shows them.
type Credentials struct {
	Tokens  *Entries[string] `json:"tokens,omitempty"`
	Secrets *Entries[string] `json:"secrets,omitempty"`
}

// String implements fmt.Stringer without revealing any value.
func (c Credentials) String() string {
	n, m := 0, 0
	if c.Tokens != nil {
		n = len(c.Tokens.Entry)
	}
	if c.Secrets != nil {
		m = len(c.Secrets.Entry)
	}
	return fmt.Sprintf("Credentials{%d tokens, %d secrets: redacted}", n, m)
}

// GoString implements fmt.GoStringer (%#v) the same way.
func (c Credentials) GoString() string { return c.String() }

// ContainerLaunchContext is the AM container's spec ("am-container-spec").
type ContainerLaunchContext struct {
	LocalResources  *Entries[LocalResource] `json:"local-resources,omitempty"`
	Environment     *Entries[string]        `json:"environment,omitempty"`
	Commands        Commands                `json:"commands"`
	ServiceData     *Entries[string]        `json:"service-data,omitempty"`
	Credentials     *Credentials            `json:"credentials,omitempty"`
	ApplicationACLs *Entries[string]        `json:"application-acls,omitempty"`
}

// AMResource is the AM container's size. REST carries memory and vCores
// only: GPUs for the AM need the RPC submission path.
type AMResource struct {
	Memory int64 `json:"memory"`
	VCores int64 `json:"vCores"`
}

// Tags are application tags.
type Tags struct {
	Tag []string `json:"tag"`
}

// ApplicationSubmission is the body of POST /ws/v1/cluster/apps
// (application-submission-context).
type ApplicationSubmission struct {
	ApplicationID                   string                 `json:"application-id"`
	ApplicationName                 string                 `json:"application-name,omitempty"`
	Queue                           string                 `json:"queue,omitempty"`
	Priority                        int                    `json:"priority,omitempty"`
	AMContainerSpec                 ContainerLaunchContext `json:"am-container-spec"`
	UnmanagedAM                     bool                   `json:"unmanaged-AM"`
	MaxAppAttempts                  int                    `json:"max-app-attempts,omitempty"`
	Resource                        *AMResource            `json:"resource,omitempty"`
	ApplicationType                 string                 `json:"application-type,omitempty"`
	KeepContainersAcrossAttempts    bool                   `json:"keep-containers-across-application-attempts"`
	ApplicationTags                 *Tags                  `json:"application-tags,omitempty"`
	AttemptFailuresValidityInterval int64                  `json:"attempt-failures-validity-interval,omitempty"`
	AppNodeLabelExpression          string                 `json:"app-node-label-expression,omitempty"`
	AMContainerNodeLabelExpression  string                 `json:"am-container-node-label-expression,omitempty"`
}

// AppsFilter narrows GET /ws/v1/cluster/apps; zero fields are not sent.
type AppsFilter struct {
	States           []string // e.g. RUNNING, ACCEPTED
	Queue            string
	User             string
	ApplicationTypes []string
	ApplicationTags  []string
	Limit            int
}
