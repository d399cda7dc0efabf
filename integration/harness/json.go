package harness

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"
)

// List decodes a JSON array, or a single object where the RM's Jersey-1 JSON writer
// unwraps one-element arrays, or null, into a slice.
type List[T any] []T

// UnmarshalJSON implements json.Unmarshaler.
func (l *List[T]) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case len(b) == 0 || bytes.Equal(b, []byte("null")):
		*l = nil
		return nil
	case b[0] == '[':
		var s []T
		if err := json.Unmarshal(b, &s); err != nil {
			return fmt.Errorf("decode list: %w", err)
		}
		*l = s
		return nil
	default:
		var v T
		if err := json.Unmarshal(b, &v); err != nil {
			return fmt.Errorf("decode list element: %w", err)
		}
		*l = List[T]{v}
		return nil
	}
}

// ResourceInformation is one entry of a resource's resourceInformations.
type ResourceInformation struct {
	Name  string `json:"name"`
	Value int64  `json:"value"`
	Units string `json:"units"`
}

// Resource is the RM's resource JSON (totalResource, usedResource, ...).
type Resource struct {
	Memory               int64 `json:"memory"`
	VCores               int64 `json:"vCores"`
	ResourceInformations struct {
		ResourceInformation List[ResourceInformation] `json:"resourceInformation"`
	} `json:"resourceInformations"`
}

// Get returns the value of the named resource type (e.g. "yarn.io/gpu") and whether the
// resource lists it.
func (r Resource) Get(name string) (int64, bool) {
	for _, ri := range r.ResourceInformations.ResourceInformation {
		if ri.Name == name {
			return ri.Value, true
		}
	}
	return 0, false
}

// Node is one entry of /ws/v1/cluster/nodes.
type Node struct {
	ID                string       `json:"id"`
	State             string       `json:"state"`
	NodeHostName      string       `json:"nodeHostName"`
	NodeHTTPAddress   string       `json:"nodeHTTPAddress"`
	HealthReport      string       `json:"healthReport"`
	NodeLabels        List[string] `json:"nodeLabels"`
	TotalResource     Resource     `json:"totalResource"`
	UsedResource      Resource     `json:"usedResource"`
	AvailableResource Resource     `json:"availableResource"`
}

// Nodes returns the RM's node list (GET /ws/v1/cluster/nodes), failing the test on error.
func (c *Cluster) Nodes(t testing.TB) []Node {
	t.Helper()
	var r struct {
		Nodes struct {
			Node List[Node] `json:"node"`
		} `json:"nodes"`
	}
	c.GetJSON(t, "/ws/v1/cluster/nodes", &r)
	return r.Nodes.Node
}

// Total is the node's capacity: totalResource where the RM reports it, else used plus
// available (older RMs report only those).
func (n Node) Total() Resource {
	if len(n.TotalResource.ResourceInformations.ResourceInformation) > 0 {
		return n.TotalResource
	}
	t := Resource{Memory: n.UsedResource.Memory + n.AvailableResource.Memory, VCores: n.UsedResource.VCores + n.AvailableResource.VCores}
	for _, ri := range n.AvailableResource.ResourceInformations.ResourceInformation {
		used, _ := n.UsedResource.Get(ri.Name)
		ri.Value += used
		t.ResourceInformations.ResourceInformation = append(t.ResourceInformations.ResourceInformation, ri)
	}
	return t
}
