// Package params is what xres knows of its built-in drivers' params
// (external-resource.<name>.param.<key>) without their code: the Param
// type every driver declares its params with, the keys, types, defaults
// and allowed values of the params the built-in drivers check, and those
// checks (Check), which need neither the host nor the drivers. The
// drivers' own checks (driver.ParamChecker) are these functions, so that
// `am resources` and `am submit`, which link no driver code, refuse
// exactly what every container-launcher refuses. Each driver declares its
// params (driver.Declare, with their documentation) with the same name,
// type, default and values as here; driver/builtin's tests hold the two
// equal.
package params

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/xres/xres/conf"
	"github.com/xres/xres/resources"
)

// ErrInvalidParam is wrapped by every error about a malformed driver param
// (external-resource.<name>.param.<key>); the message names the full key.
// driver.ErrInvalidParam and the built-in drivers' own are this value.
var ErrInvalidParam = errors.New("invalid driver param")

// DefaultTimeout bounds one discovery step (a script, nvidia-smi, rocm-smi,
// a plugin) when neither the resource's params nor the global
// xres.discovery.timeout set one.
const DefaultTimeout = 10 * time.Second

// Key names a driver param in full, as users write it:
// external-resource.<resource>.param.<param> ("param.<param>" without a
// resource).
func Key(resource, param string) string {
	if resource == "" {
		return "param." + param
	}
	return resources.Key(resource, resources.SuffixParam+param)
}

// Param declares one driver param (external-resource.<name>.param.<Name>):
// its type, default and documentation. Every param a driver reads is a
// Param made by driver.Declare and read through its methods, never by
// indexing the params; the configuration reference (conf.Options, the
// docs/configuration.md's table) is generated from the same declarations, and
// driver/builtin's tests fail on a key read without a declaration or
// declared and never read.
type Param struct {
	Name    string    // the key after "param.", e.g. "discovery-script.path"
	Type    conf.Type // for the documentation and the typed readers
	Default string    // in the param's own syntax; "" for none
	// Values, when not empty, are the only values Choice accepts
	// (case-insensitive); the first one is the default when Default is "".
	Values []string
	Doc    string // one paragraph for the configuration reference
}

// Option is p as a configuration option, its key a pattern over the
// resource name.
func (p Param) Option() conf.Option {
	def := p.Default
	if def == "" && len(p.Values) > 0 {
		def = p.Values[0]
	}
	// Key("<name>", …) spells conf.ExternalResourceParam.For("<name>", …)
	// without its regular expression: declarations run in package
	// initialisation, on every launcher start (TestParamOptionKey).
	return conf.Option{Key: Key("<name>", p.Name), Type: p.Type, Default: def, Description: p.Doc}
}

// Key is the param's full key for resource, as users write it.
func (p Param) Key(resource string) string { return Key(resource, p.Name) }

// Lookup returns the param's value in params, trimmed, and whether it is
// set to something other than blanks.
func (p Param) Lookup(params map[string]string) (string, bool) {
	v := strings.TrimSpace(params[p.Name])
	return v, v != ""
}

// Get returns the param's value in params, trimmed, or its default when
// unset or blank.
func (p Param) Get(params map[string]string) string {
	if v, ok := p.Lookup(params); ok {
		return v
	}
	return p.Default
}

// Bool reads a true/false param (case-insensitive); unset is its default
// (false when it has none). Any other value is an error naming the key and
// wrapping ErrInvalidParam.
func (p Param) Bool(resource string, params map[string]string) (bool, error) {
	v := p.Get(params)
	switch {
	case v == "":
		return false, nil
	case strings.EqualFold(v, "true"):
		return true, nil
	case strings.EqualFold(v, "false"):
		return false, nil
	}
	return false, fmt.Errorf("%s: %q, want true or false: %w", p.Key(resource), v, ErrInvalidParam)
}

// Choice reads a param that takes one of p.Values, lower-cased; unset is
// the default (else the first value). Any other value is an error naming
// the key and the values, wrapping ErrInvalidParam.
func (p Param) Choice(resource string, params map[string]string) (string, error) {
	v := strings.ToLower(p.Get(params))
	if v == "" && len(p.Values) > 0 {
		return p.Values[0], nil
	}
	for _, ok := range p.Values {
		if v == ok {
			return v, nil
		}
	}
	return "", fmt.Errorf("%s: %q, want %s: %w", p.Key(resource), v, strings.Join(p.Values, ", "), ErrInvalidParam)
}

// Timeout reads a time limit: the param when set (Flink syntax, see
// ParseDuration; it must be positive), else fallback (the global
// xres.discovery.timeout) when positive, else DefaultTimeout. A bad value
// is an error naming the key and wrapping ErrInvalidParam.
func (p Param) Timeout(resource string, params map[string]string, fallback time.Duration) (time.Duration, error) {
	raw, ok := p.Lookup(params)
	if !ok {
		if fallback > 0 {
			return fallback, nil
		}
		return DefaultTimeout, nil
	}
	d, err := ParseDuration(raw)
	if err != nil {
		return 0, fmt.Errorf("%s: %w: %w", p.Key(resource), err, ErrInvalidParam)
	}
	if d <= 0 {
		return 0, fmt.Errorf("%s: %q must be positive: %w", p.Key(resource), raw, ErrInvalidParam)
	}
	return d, nil
}

// ParseDuration reads a duration the way Flink writes them: "10 s",
// "10000 ms", "2 min", a bare number of milliseconds, or Go's "1m30s".
func ParseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i == 0 {
		return 0, fmt.Errorf("%q is not a duration", s)
	}
	n, err := strconv.ParseInt(s[:i], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration: %w", s, err)
	}
	unit := strings.ToLower(strings.TrimSpace(s[i:]))
	var u time.Duration
	switch unit {
	case "", "ms", "milli", "millis", "millisecond", "milliseconds":
		u = time.Millisecond
	case "s", "sec", "secs", "second", "seconds":
		u = time.Second
	case "m", "min", "mins", "minute", "minutes":
		u = time.Minute
	case "h", "hour", "hours":
		u = time.Hour
	default:
		d, err := time.ParseDuration(s)
		if err != nil {
			return 0, fmt.Errorf("%q is not a duration (use e.g. 10 s, 500 ms, 2 min)", s)
		}
		return d, nil
	}
	if n > int64(1<<62)/int64(u) {
		return 0, fmt.Errorf("%q is too long", s)
	}
	return time.Duration(n) * u, nil
}

// WithDoc is p with its documentation: a driver declares a param this
// package checks as driver.Declare(params.X.WithDoc("…")), so that its
// name, type, default and values are spelled once, here.
func (p Param) WithDoc(doc string) Param {
	p.Doc = doc
	return p
}
