package plugin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/xres/xres/resources"
)

// ProtocolVersion is the version of the exec-plugin protocol spoken here.
//
// The launcher runs the plugin executable once per discovery:
//
//	argv    <plugin> discover <amount>
//	cwd     the launcher's (relative paths in params mean the same to both)
//	env     the launcher's environment, plus
//	          XRES_PLUGIN_PROTOCOL=1
//	          XRES_PLUGIN_DIR=<the plugin's directory>   for files shipped with it
//	          XRES_RESOURCE=<resource name>        e.g. fpga
//	          XRES_AMOUNT=<amount>
//	          XRES_DRY_RUN=true|false              true for probe
//	          XRES_PARAM_<KEY>=<value>             one per param, KEY upper-cased,
//	                                               non-alphanumerics as "_"
//	stdin   one JSON object, then EOF:
//	          {"protocol":1,"resource":"fpga","amount":2,"dry_run":false,
//	           "params":{"vendor":"0x10ee"}}
//	stdout  one JSON array, one object per usable device, in preference order:
//	          [{"index":"0","address":"0000:3b:00.1"},
//	           {"index":"1","address":"0000:d8:00.1"}]
//	        values are strings (numbers and booleans are taken as written)
//	stderr  free text; relayed to the launcher's debug log, and its last
//	        lines are quoted in the error when the plugin fails
//	exit    0 on success; anything else is a discovery failure
//
// The plugin lists every device it offers (at least amount); xres picks
// amount of them with host coordination, as for built-in drivers. Each
// device must carry one of the identity properties (IdentityKeys), which
// must be stable across runs and unique on the host.
const ProtocolVersion = 1

// IdentityKeys are the properties that identify a device host-wide for
// coordination, in order of preference.
var IdentityKeys = []string{"uuid", "pci.bus-id", "address", "pci", "index", "id"}

// MaxOutput bounds what a plugin may print on stdout.
const MaxOutput = 1 << 20

// ErrBadOutput is wrapped when a plugin's stdout is not the protocol's JSON.
var ErrBadOutput = errors.New("plugin output does not follow the protocol")

// request is what the plugin reads on stdin.
type request struct {
	Protocol int               `json:"protocol"`
	Resource string            `json:"resource"`
	Amount   int64             `json:"amount"`
	DryRun   bool              `json:"dry_run"`
	Params   map[string]string `json:"params"`
}

// ParseOutput parses a plugin's stdout: a JSON array of flat objects with
// string, number or boolean values.
func ParseOutput(out []byte) ([]resources.Properties, error) {
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.UseNumber()
	var raw []json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("%w: want a JSON array of device objects: %v (output starts %s)", ErrBadOutput, err, snippet(out))
	}
	if raw == nil {
		return nil, fmt.Errorf("%w: want a JSON array of device objects, got %s", ErrBadOutput, snippet(out))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%w: data after the JSON array", ErrBadOutput)
	}
	devices := make([]resources.Properties, 0, len(raw))
	for i, r := range raw {
		var obj map[string]any
		d := json.NewDecoder(bytes.NewReader(r))
		d.UseNumber()
		if err := d.Decode(&obj); err != nil || obj == nil {
			return nil, fmt.Errorf("%w: device %d is not a JSON object: %s", ErrBadOutput, i, snippet(r))
		}
		p := make(resources.Properties, len(obj))
		for k, v := range obj {
			if strings.TrimSpace(k) == "" {
				return nil, fmt.Errorf("%w: device %d has an empty property name", ErrBadOutput, i)
			}
			switch v := v.(type) {
			case string:
				p[k] = v
			case json.Number:
				p[k] = v.String()
			case bool:
				p[k] = fmt.Sprint(v)
			default:
				return nil, fmt.Errorf("%w: device %d property %q: want a string, number or boolean, got %s", ErrBadOutput, i, k, kind(v))
			}
		}
		devices = append(devices, p)
	}
	return devices, nil
}

// Identity returns the key that identifies a device for coordination: the
// first non-empty IdentityKeys property.
func Identity(p resources.Properties) (string, bool) {
	for _, k := range IdentityKeys {
		if v := strings.TrimSpace(p[k]); v != "" {
			return v, true
		}
	}
	return "", false
}

func kind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// snippet quotes the start of some output for an error message.
func snippet(b []byte) string {
	s := strings.TrimSpace(string(b))
	if s == "" {
		return "(empty)"
	}
	if len(s) > 120 {
		s = s[:120] + "…"
	}
	return fmt.Sprintf("%q", s)
}
