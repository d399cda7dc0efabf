package resources

import (
	"strings"

	"github.com/xres/xres/conf"
)

// ValueOrigin is one configuration value behind a resource and where it was
// set: "file:line", "-D", or for a Spark configuration the Spark key and
// its place ("spark-defaults.conf:3 (spark.executor.resource.gpu.amount)").
type ValueOrigin struct {
	Key    string `json:"key"`
	Value  string `json:"value"` // as conf.RedactValue shows it: "(hidden)" for a sensitive key
	Origin string `json:"origin"`
}

// Origins lists what `am resources` shows for resource name: the
// external-resources list, then every external-resource.<name>.* key set,
// sorted, each with its value (conf.RedactValue: no secret) and origin.
func Origins(cfg *conf.Config, name string) []ValueOrigin {
	var out []ValueOrigin
	add := func(k string) {
		v, _ := cfg.Get(k)
		out = append(out, ValueOrigin{Key: k, Value: conf.RedactValue(k, v), Origin: cfg.Origin(k)})
	}
	if _, ok := cfg.Get(KeyList); ok {
		add(KeyList)
	}
	prefix := KeyPrefix + name + "."
	for _, k := range cfg.Keys() {
		if strings.HasPrefix(k, prefix) {
			add(k)
		}
	}
	return out
}
