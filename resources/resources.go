// Package resources holds the external-resource model that every part of
// xres shares: the parsed per-resource specification (Flink's
// external-resource.<name>.* keys) and the device infos a driver reports.
package resources

import "sort"

// Info describes one device handed to a worker, the counterpart of Flink's
// ExternalResourceInfo: a set of string properties such as "index" or "uuid".
type Info interface {
	// Property returns the value of key and whether the device has it.
	Property(key string) (string, bool)
	// Keys lists the property names, sorted.
	Keys() []string
}

// Properties is the plain Info implementation: one device as a property map.
type Properties map[string]string

var _ Info = Properties(nil)

// Property implements Info.
func (p Properties) Property(key string) (string, bool) {
	v, ok := p[key]
	return v, ok
}

// Keys implements Info.
func (p Properties) Keys() []string {
	keys := make([]string, 0, len(p))
	for k := range p {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Clone returns a copy of p that shares nothing with it; never nil.
func (p Properties) Clone() Properties {
	out := make(Properties, len(p))
	for k, v := range p {
		out[k] = v
	}
	return out
}

// PropertiesOf copies each Info of list into a plain property map, in
// order; never nil, so an empty list stays an empty JSON array.
func PropertiesOf(list []Info) []Properties {
	out := make([]Properties, 0, len(list))
	for _, in := range list {
		p := Properties{}
		for _, k := range in.Keys() {
			p[k], _ = in.Property(k)
		}
		out = append(out, p)
	}
	return out
}

// Spec is one enabled external resource, as configured by
// external-resource.<Name>.* keys.
type Spec struct {
	Name    string            // the name listed in external-resources
	Amount  int64             // external-resource.<name>.amount, > 0
	YarnKey string            // external-resource.<name>.yarn.config-key, "" if unset
	K8sKey  string            // external-resource.<name>.kubernetes.config-key, "" if unset
	Factory string            // external-resource.<name>.driver-factory.class, "" if unset
	Params  map[string]string // external-resource.<name>.param.* with the prefix stripped
}
