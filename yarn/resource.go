package yarn

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/xres/xres/hadoopproto/hadoopyarn"
)

// Resource is an amount of every resource type: a container's size, a
// node's capacity or use. Memory in MiB, virtual cores, and the extended
// resources (YARN resource-type name such as yarn.io/gpu → amount).
type Resource struct {
	MemoryMB int64            `json:"memory-mb"`
	VCores   int64            `json:"vcores"`
	Extra    map[string]int64 `json:"resources,omitempty"`
}

// String renders r like YARN does: <memory:1728, vCores:1, yarn.io/gpu: 2>.
func (r Resource) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "<memory:%d, vCores:%d", r.MemoryMB, r.VCores)
	for _, k := range slices.Sorted(maps.Keys(r.Extra)) {
		fmt.Fprintf(&b, ", %s: %d", k, r.Extra[k])
	}
	b.WriteString(">")
	return b.String()
}

// Value is the amount of resource type name ("memory-mb", "vcores" or an
// extended one).
func (r Resource) Value(name string) int64 {
	switch name {
	case "memory-mb":
		return r.MemoryMB
	case "vcores":
		return r.VCores
	}
	return r.Extra[name]
}

// ResourceType is one resource type the ResourceManager knows
// (getResourceTypeInfo, or the register response).
type ResourceType struct {
	Name  string `json:"name"`
	Units string `json:"units,omitempty"`
}

// resourceFromProto converts a ResourceProto (memory, vcores and the
// resource map).
func resourceFromProto(r *hadoopyarn.ResourceProto) Resource {
	out := Resource{MemoryMB: r.GetMemory(), VCores: int64(r.GetVirtualCores())}
	for _, ri := range r.GetResourceValueMap() {
		switch ri.GetKey() {
		case "memory-mb", "vcores":
			continue
		}
		if out.Extra == nil {
			out.Extra = map[string]int64{}
		}
		out.Extra[ri.GetKey()] = ri.GetValue()
	}
	return out
}

// resourceTypesFromProto converts the RM's resource type infos.
func resourceTypesFromProto(types []*hadoopyarn.ResourceTypeInfoProto) []ResourceType {
	var out []ResourceType
	for _, t := range types {
		out = append(out, ResourceType{Name: t.GetName(), Units: t.GetUnits()})
	}
	return out
}
