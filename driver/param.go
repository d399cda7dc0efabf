package driver

import (
	"fmt"
	"strings"
	"time"

	"github.com/xres/xres/conf"
)

// Param declares one driver param (external-resource.<name>.param.<Name>):
// its type, default and documentation. Every param a driver reads is a
// Param made by Declare and read through its methods, never by indexing
// Options.Params; the configuration reference (conf.Options, the README's
// table) is generated from the same declarations, and driver/builtin's
// tests fail on a key read without a declaration or declared and never read.
type Param struct {
	Name    string    // the key after "param.", e.g. "discovery-script.path"
	Type    conf.Type // for the documentation and the typed readers
	Default string    // in the param's own syntax; "" for none
	// Values, when not empty, are the only values Choice accepts
	// (case-insensitive); the first one is the default when Default is "".
	Values []string
	Doc    string // one paragraph for the configuration reference
}

// Declare registers p in conf's option registry, as
// external-resource.<name>.param.<p.Name>, and returns it, for use as
// `var sourceParam = driver.Declare(driver.Param{...})`. A name declared
// twice is reported by conf.CheckOptions.
func Declare(p Param) Param {
	conf.Register(p.Option())
	return p
}

// Option is p as a configuration option, its key a pattern over the
// resource name.
func (p Param) Option() conf.Option {
	def := p.Default
	if def == "" && len(p.Values) > 0 {
		def = p.Values[0]
	}
	// ParamKey("<name>", …) spells conf.ExternalResourceParam.For("<name>",
	// …) without its regular expression: Declare runs in package
	// initialisation, on every launcher start (TestParamOptionKey).
	return conf.Option{Key: ParamKey("<name>", p.Name), Type: p.Type, Default: def, Description: p.Doc}
}

// Key is the param's full key for resource, as users write it.
func (p Param) Key(resource string) string { return ParamKey(resource, p.Name) }

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
// ParseDuration; it must be positive), else opts.Timeout (the global
// xres.discovery.timeout) when positive, else DefaultTimeout. A bad value
// is an error naming the key and wrapping ErrInvalidParam.
func (p Param) Timeout(opts Options) (time.Duration, error) {
	raw, ok := p.Lookup(opts.Params)
	if !ok {
		if opts.Timeout > 0 {
			return opts.Timeout, nil
		}
		return DefaultTimeout, nil
	}
	d, err := ParseDuration(raw)
	if err != nil {
		return 0, fmt.Errorf("%s: %w: %w", p.Key(opts.Resource), err, ErrInvalidParam)
	}
	if d <= 0 {
		return 0, fmt.Errorf("%s: %q must be positive: %w", p.Key(opts.Resource), raw, ErrInvalidParam)
	}
	return d, nil
}
