package amplan

import (
	"errors"
	"fmt"
	"strings"

	"github.com/xres/xres/conf"
	"github.com/xres/xres/resources"
	"github.com/xres/xres/yarn"
)

// ErrProfileUnsatisfiable is wrapped by CheckProfile's error: the cluster
// can never grant the container profile, so waiting would be forever.
var ErrProfileUnsatisfiable = errors.New("container profile cannot be satisfied by this cluster")

// ClusterLimits is what the RM says it can grant: its resource types and the
// largest container it allows (maximumCapability).
type ClusterLimits struct {
	Types []yarn.ResourceType
	Max   yarn.Resource
	// MaxName names Max in CheckProfile's messages, e.g. "the largest
	// NodeManager" when Max is the nodes' capability; "" speaks of the
	// cluster's maximum allocation.
	MaxName string
}

// CheckProfile fails fast when the cluster cannot grant profile: an extended
// resource whose key is not a resource type of the cluster (the RM would
// silently drop it), or any amount above the maximum allocation (the RM
// would never allocate). Every problem is listed, each naming the key, what
// was asked and what the cluster offers. owners maps a YARN key back to the
// external resource name for the message; it may be nil.
func CheckProfile(profile yarn.Resource, limits ClusterLimits, owners map[string]string) error {
	known := make(map[string]bool, len(limits.Types))
	names := make([]string, 0, len(limits.Types))
	for _, t := range limits.Types {
		known[t.Name] = true
		names = append(names, t.Name)
	}
	maxAlloc, largest := "the cluster's maximum allocation", "the largest container the cluster allows"
	if limits.MaxName != "" {
		maxAlloc, largest = limits.MaxName, limits.MaxName
	}
	var problems []string
	if profile.MemoryMB > limits.Max.MemoryMB {
		problems = append(problems, fmt.Sprintf("memory-mb: asked %d MiB per worker, %s is %d MiB (%s, yarn.scheduler.maximum-allocation-mb)",
			profile.MemoryMB, maxAlloc, limits.Max.MemoryMB, conf.TaskManagerProcessSize.Key))
	}
	if profile.VCores > limits.Max.VCores {
		problems = append(problems, fmt.Sprintf("vcores: asked %d per worker, %s is %d (yarn.scheduler.maximum-allocation-vcores)",
			profile.VCores, maxAlloc, limits.Max.VCores))
	}
	for _, key := range sortedKeys(profile.Extra) {
		asked := profile.Extra[key]
		label := key
		if name := owners[key]; name != "" {
			label = fmt.Sprintf("resource %s (external-resource.%s.yarn.config-key=%s)", name, name, key)
		}
		if !known[key] {
			problems = append(problems, fmt.Sprintf("%s: %s is not a resource type of this cluster (it offers: %s); add it to yarn.resource-types in resource-types.xml",
				label, key, strings.Join(names, ", ")))
			continue
		}
		if offered := limits.Max.Extra[key]; asked > offered {
			problems = append(problems, fmt.Sprintf("%s: asked %d per worker, %s has %d",
				label, asked, largest, offered))
		}
	}
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s", ErrProfileUnsatisfiable, strings.Join(problems, "; "))
}

// Owners maps each YARN key of specs to its external resource name, for
// CheckProfile's messages.
func Owners(specs []resources.Spec) map[string]string {
	out := make(map[string]string, len(specs))
	for _, s := range specs {
		if k := strings.TrimSpace(s.YarnKey); k != "" {
			out[k] = s.Name
		}
	}
	return out
}
