package gpu

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/xres/xres/driver"
	"github.com/xres/xres/driver/coord"
	"github.com/xres/xres/resources"
)

// Spark's discovery script protocol (Spark 3.5, ResourceDiscoveryScriptPlugin
// and ResourceInformation.parseJson): the script is run without arguments
// and its whole stdout is one JSON object in the format of Spark's
// ResourceInformation,
//
//	{"name": "gpu", "addresses": ["0", "1", "2", "3"]}
//	  └ must equal the      └ every device of the host (Spark
//	    resource's name       leaves choosing to its scheduler)
//
// Other fields are ignored, as Spark's parser ignores them. A name that
// differs from the resource's is an error, as in Spark.

// IsSparkOutput reports whether a script's stdout looks like Spark's JSON
// (its first non-blank byte is "{") rather than Flink's index line.
func IsSparkOutput(out []byte) bool {
	t := bytes.TrimLeft(out, " \t\r\n\ufeff")
	return len(t) > 0 && t[0] == '{'
}

// ParseSparkScriptOutput reads the addresses of a Spark discovery script's
// output for resource. Errors wrap ErrScriptOutput: not one JSON object, no
// "name", a name other than resource, an address that is not index-like
// (the rule of ParseScriptOutput), or an address listed twice.
func ParseSparkScriptOutput(resource string, out []byte) ([]string, error) {
	if !utf8.Valid(out) {
		return nil, fmt.Errorf("%w: Spark JSON is not UTF-8 text", ErrScriptOutput)
	}
	var ri struct {
		Name      *string  `json:"name"`
		Addresses []string `json:"addresses"`
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	if err := dec.Decode(&ri); err != nil {
		return nil, fmt.Errorf("%w: not Spark's ResourceInformation JSON (%v): %q", ErrScriptOutput, err, clip(strings.TrimSpace(string(out)), 200))
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: more than one JSON value in Spark's output", ErrScriptOutput)
	}
	if ri.Name == nil {
		return nil, fmt.Errorf("%w: Spark JSON has no \"name\"", ErrScriptOutput)
	}
	if *ri.Name != resource {
		return nil, fmt.Errorf("%w: Spark JSON is for resource %q, not %s (Spark refuses it too)", ErrScriptOutput, clip(*ri.Name, 40), resource)
	}
	seen := make(map[string]bool, len(ri.Addresses))
	addrs := make([]string, 0, len(ri.Addresses))
	for _, a := range ri.Addresses {
		a = strings.TrimSpace(a)
		if err := checkIndex(a); err != nil || a == "" {
			return nil, fmt.Errorf("%w: Spark JSON address %q is not a device address", ErrScriptOutput, clip(a, 40))
		}
		if strings.HasPrefix(a, "GPU-") || strings.HasPrefix(a, "MIG-") {
			// Taken as a uuid below: it must be one.
			if err := CheckNVIDIAUUID(a); err != nil {
				return nil, fmt.Errorf("%w: Spark JSON address: %w", ErrScriptOutput, err)
			}
		}
		if seen[a] {
			return nil, fmt.Errorf("%w: Spark JSON lists address %q twice", ErrScriptOutput, a)
		}
		seen[a] = true
		addrs = append(addrs, a)
	}
	return addrs, nil
}

// sparkSelect picks amount of a Spark script's addresses behind the shared
// selection layer, with xres's coordination as the resource's
// coordination.* params say (on by default).
type sparkSelect struct {
	opts     driver.Options
	settings coord.Settings

	mu      sync.Mutex
	pending []driver.Device
	sel     *driver.Coordinated
}

// Enumerate implements driver.Enumerator: the devices of the output being
// selected from.
func (p *sparkSelect) Enumerate(context.Context) ([]driver.Device, error) {
	return p.pending, nil
}

// discover selects amount among addrs. A GPU-…/MIG-… address is a uuid, any
// other an index; the key is the GPU driver's (deviceKey), so that two
// resources reading the same host coordinate on the same devices.
func (p *sparkSelect) discover(ctx context.Context, addrs []string, amount int64) ([]resources.Info, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.sel == nil {
		sel, err := p.settings.Coordinated(p.opts, p)
		if err != nil {
			return nil, err
		}
		p.sel = sel
	}
	p.pending = make([]driver.Device, len(addrs))
	for i, a := range addrs {
		info := resources.Properties{"index": a}
		if strings.HasPrefix(a, "GPU-") || strings.HasPrefix(a, "MIG-") {
			info = resources.Properties{"uuid": a}
		}
		p.pending[i] = driver.Device{Key: deviceKey(info), Info: info}
	}
	return p.sel.Discover(ctx, amount)
}

// Release implements driver.Releaser: it frees what a Spark script's
// selection reserved (nothing for a Flink script).
func (s *scriptDriver) Release(ctx context.Context) error {
	s.spark.mu.Lock()
	sel := s.spark.sel
	s.spark.mu.Unlock()
	if sel == nil {
		return nil
	}
	return sel.Release(ctx)
}
