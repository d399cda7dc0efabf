package driver

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/xres/xres/resources"
)

// ErrInvalidParam is wrapped by every error about a malformed driver param
// (external-resource.<name>.param.<key>); the message names the full key.
// The built-in drivers' own ErrInvalidParam variables are this value.
var ErrInvalidParam = errors.New("invalid driver param")

// DefaultTimeout bounds one discovery step (a script, nvidia-smi, rocm-smi,
// a plugin) when neither the resource's params nor Options.Timeout set one.
const DefaultTimeout = 10 * time.Second

// ParamKey names a driver param in full, as users write it:
// external-resource.<resource>.param.<param> ("param.<param>" without a
// resource).
func ParamKey(resource, param string) string {
	if resource == "" {
		return "param." + param
	}
	return resources.Key(resource, resources.SuffixParam+param)
}

// TimeoutParam reads a driver's time limit: the param named key when set (Flink
// syntax, see ParseDuration; it must be positive), else opts.Timeout (the
// global xres.discovery.timeout) when positive, else DefaultTimeout. A bad
// value is an error naming the key and wrapping ErrInvalidParam.
func (o Options) TimeoutParam(key string) (time.Duration, error) {
	raw := strings.TrimSpace(o.Params[key])
	if raw == "" {
		if o.Timeout > 0 {
			return o.Timeout, nil
		}
		return DefaultTimeout, nil
	}
	d, err := ParseDuration(raw)
	if err != nil {
		return 0, fmt.Errorf("%s: %w: %w", ParamKey(o.Resource, key), err, ErrInvalidParam)
	}
	if d <= 0 {
		return 0, fmt.Errorf("%s: %q must be positive: %w", ParamKey(o.Resource, key), raw, ErrInvalidParam)
	}
	return d, nil
}

// BoolParam reads a true/false param (case-insensitive); unset is def. Any
// other value is an error naming the key and wrapping ErrInvalidParam.
func BoolParam(resource string, params map[string]string, key string, def bool) (bool, error) {
	v := strings.TrimSpace(params[key])
	switch {
	case v == "":
		return def, nil
	case strings.EqualFold(v, "true"):
		return true, nil
	case strings.EqualFold(v, "false"):
		return false, nil
	}
	return false, fmt.Errorf("%s: %q, want true or false: %w", ParamKey(resource, key), v, ErrInvalidParam)
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
