package conf

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// ValueError is what is wrong with a configuration value that does not
// parse as its type: the Err of the *Error (naming key, file and line)
// that the typed readers return. The value is shown as RedactValue allows
// (hidden for a sensitive key).
type ValueError struct {
	Key   string
	Value string
	Type  Type
	Err   error
}

// Error is Reason: the key and where its value came from are the
// enclosing *Error's.
func (e *ValueError) Error() string { return e.Reason() }

// Reason is the message without key and origin: `"two" is not a valid
// Long: not an integer`.
func (e *ValueError) Reason() string {
	v := strconv.Quote(RedactValue(e.Key, e.Value))
	if IsSensitive(e.Key) {
		v = Hidden
	}
	return fmt.Sprintf("%s is not a valid %s: %v", v, e.Type, e.Err)
}

// Unwrap returns the parse error.
func (e *ValueError) Unwrap() error { return e.Err }

// OriginDefault is the origin reported for a declared default value.
const OriginDefault = "default"

// lookup returns key's value and origin, or the option's default.
func (c *Config) lookup(opt Option) (value, origin string, set bool) {
	if v, ok := c.Get(opt.Key); ok {
		return v, c.Origin(opt.Key), true
	}
	return opt.Default, OriginDefault, false
}

func typed[T any](c *Config, opt Option, t Type, parse func(string) (T, error)) (T, error) {
	v, origin, set := c.lookup(opt)
	var zero T
	if !set && v == "" {
		return zero, nil
	}
	out, err := parse(v)
	if err != nil {
		return zero, ErrorAt(opt.Key, origin, &ValueError{Key: opt.Key, Value: v, Type: t, Err: err})
	}
	return out, nil
}

func typedKey[T any](c *Config, key string, t Type, parse func(string) (T, error)) (T, bool, error) {
	var zero T
	v, ok := c.Get(key)
	if !ok {
		return zero, false, nil
	}
	out, err := parse(v)
	if err != nil {
		return zero, true, c.KeyError(key, &ValueError{Key: key, Value: v, Type: t, Err: err})
	}
	return out, true, nil
}

// String returns opt's value, or its default when unset.
func (c *Config) String(opt Option) (string, error) {
	v, _, _ := c.lookup(opt)
	return v, nil
}

// Int returns opt's value as a 32-bit integer (Flink's Integer).
func (c *Config) Int(opt Option) (int, error) { return typed(c, opt, TypeInt, ParseInt) }

// Int64 returns opt's value as a 64-bit integer (Flink's Long).
func (c *Config) Int64(opt Option) (int64, error) { return typed(c, opt, TypeInt64, ParseInt64) }

// Float returns opt's value as a float (Flink's Double).
func (c *Config) Float(opt Option) (float64, error) { return typed(c, opt, TypeFloat, ParseFloat) }

// Bool returns opt's value as a boolean ("true" or "false", any case).
func (c *Config) Bool(opt Option) (bool, error) { return typed(c, opt, TypeBool, ParseBool) }

// Duration returns opt's value in Flink's duration syntax ("10 s", "500ms",
// "1min"; a bare number is milliseconds).
func (c *Config) Duration(opt Option) (time.Duration, error) {
	return typed(c, opt, TypeDuration, ParseDuration)
}

// MemorySize returns opt's value in bytes, in Flink's memory syntax
// ("1728m", "1g", "512 mb"; a bare number is bytes).
func (c *Config) MemorySize(opt Option) (int64, error) {
	return typed(c, opt, TypeMemorySize, ParseMemorySize)
}

// List returns opt's value split as a Flink list (SplitList).
func (c *Config) List(opt Option) ([]string, error) { return typed(c, opt, TypeList, SplitList) }

// IntKey reads key as an integer; ok is false when key is unset. For keys
// not declared one by one, such as external-resource.gpu.amount.
func (c *Config) IntKey(key string) (v int, ok bool, err error) {
	return typedKey(c, key, TypeInt, ParseInt)
}

// Int64Key reads key as a 64-bit integer; ok is false when key is unset.
func (c *Config) Int64Key(key string) (v int64, ok bool, err error) {
	return typedKey(c, key, TypeInt64, ParseInt64)
}

// BoolKey reads key as a boolean; ok is false when key is unset.
func (c *Config) BoolKey(key string) (v bool, ok bool, err error) {
	return typedKey(c, key, TypeBool, ParseBool)
}

// DurationKey reads key as a Flink duration; ok is false when key is unset.
func (c *Config) DurationKey(key string) (v time.Duration, ok bool, err error) {
	return typedKey(c, key, TypeDuration, ParseDuration)
}

// MemorySizeKey reads key as a Flink memory size in bytes; ok is false when
// key is unset.
func (c *Config) MemorySizeKey(key string) (v int64, ok bool, err error) {
	return typedKey(c, key, TypeMemorySize, ParseMemorySize)
}

// ListKey reads key as a Flink list; ok is false when key is unset.
func (c *Config) ListKey(key string) (v []string, ok bool, err error) {
	return typedKey(c, key, TypeList, SplitList)
}

// ParseInt parses a 32-bit integer as Flink does (surrounding blanks
// allowed, a leading '+' or '-', decimal digits).
func ParseInt(s string) (int, error) {
	v, err := strconv.ParseInt(strings.TrimSpace(s), 10, 32)
	if err != nil {
		return 0, numErr(err)
	}
	return int(v), nil
}

// ParseInt64 parses a 64-bit integer as Flink does.
func ParseInt64(s string) (int64, error) {
	v, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil {
		return 0, numErr(err)
	}
	return v, nil
}

// ParseFloat parses a decimal number.
func ParseFloat(s string) (float64, error) {
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("not a finite number")
	}
	return v, nil
}

func numErr(err error) error {
	if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
		return fmt.Errorf("out of range")
	}
	return fmt.Errorf("not an integer")
}

// ParseBool accepts "true" and "false" in any case, as Flink does.
func ParseBool(s string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, fmt.Errorf(`want "true" or "false"`)
}

// durationUnit is the length of one of Flink's TimeUtils unit labels
// (singular and plural). A switch, not a map literal: a map is built by the
// package's initialisation in every process that links conf, the launcher
// included, whether it parses a duration or not.
func durationUnit(unit string) (time.Duration, bool) {
	switch unit {
	case "d", "day", "days":
		return 24 * time.Hour, true
	case "h", "hour", "hours":
		return time.Hour, true
	case "min", "m", "minute", "minutes":
		return time.Minute, true
	case "s", "sec", "secs", "second", "seconds":
		return time.Second, true
	case "ms", "milli", "millis", "millisecond", "milliseconds":
		return time.Millisecond, true
	case "µs", "us", "micro", "micros", "microsecond", "microseconds":
		return time.Microsecond, true
	case "ns", "nano", "nanos", "nanosecond", "nanoseconds":
		return time.Nanosecond, true
	}
	return 0, false
}

// memoryUnit is the size of one of Flink's MemorySize unit labels (a
// switch for the reason durationUnit gives).
func memoryUnit(unit string) (int64, bool) {
	switch unit {
	case "b", "bytes":
		return 1, true
	case "k", "kb", "kibibytes":
		return 1 << 10, true
	case "m", "mb", "mebibytes":
		return 1 << 20, true
	case "g", "gb", "gibibytes":
		return 1 << 30, true
	case "t", "tb", "tebibytes":
		return 1 << 40, true
	}
	return 0, false
}

// splitAmount cuts "  10 s " into 10 and "s" (unit lower-cased).
func splitAmount(s string) (uint64, string, error) {
	s = strings.TrimSpace(s)
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i == 0 {
		return 0, "", fmt.Errorf("does not start with a number")
	}
	n, err := strconv.ParseUint(s[:i], 10, 64)
	if err != nil {
		return 0, "", fmt.Errorf("number too large")
	}
	return n, strings.ToLower(strings.TrimSpace(s[i:])), nil
}

// ParseDuration parses Flink's duration syntax: a non-negative whole number,
// optional blanks, and an optional unit (d, h, min/m, s, ms, µs/us, ns and
// their long forms); no unit means milliseconds.
func ParseDuration(s string) (time.Duration, error) {
	n, unit, err := splitAmount(s)
	if err != nil {
		return 0, err
	}
	mul := time.Millisecond
	if unit != "" {
		var ok bool
		if mul, ok = durationUnit(unit); !ok {
			return 0, fmt.Errorf("unknown unit %q (use d, h, min, s, ms, us or ns)", unit)
		}
	}
	if n > uint64(math.MaxInt64/int64(mul)) {
		return 0, fmt.Errorf("out of range")
	}
	return time.Duration(n) * mul, nil
}

// ParseMemorySize parses Flink's memory syntax: a non-negative whole number,
// optional blanks, and an optional unit (b, k/kb, m/mb, g/gb, t/tb and
// their long forms, powers of 1024); no unit means bytes.
func ParseMemorySize(s string) (int64, error) {
	n, unit, err := splitAmount(s)
	if err != nil {
		return 0, err
	}
	mul := int64(1)
	if unit != "" {
		var ok bool
		if mul, ok = memoryUnit(unit); !ok {
			return 0, fmt.Errorf("unknown unit %q (use b, k, m, g or t)", unit)
		}
	}
	if n > uint64(math.MaxInt64/mul) {
		return 0, fmt.Errorf("out of range")
	}
	return int64(n) * mul, nil
}

// ParsePorts reads a port specification as rest.bind-port takes it: a
// port, a range "50100-50200" or a list "50100,50105-50110", each port
// 0 to 65535; "" is [0] (any). The error names the part that is wrong,
// wrapping ErrInvalid. The AM binds its tracking server by it; am
// resources and am submit check it with it before anything starts.
func ParsePorts(spec string) ([]int, error) {
	spec = strings.TrimSpace(spec)
	if spec == "" {
		return []int{0}, nil
	}
	var out []int
	for _, part := range strings.Split(spec, ",") {
		bad := func(why string) error {
			return fmt.Errorf("%w: %q is not a port, range or list: %q %s", ErrInvalid, spec, strings.TrimSpace(part), why)
		}
		lo, hi, isRange := strings.Cut(strings.TrimSpace(part), "-")
		a, err := strconv.Atoi(strings.TrimSpace(lo))
		if err != nil || a < 0 || a > 65535 {
			return nil, bad("is not a port 0 to 65535")
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(strings.TrimSpace(hi)); err != nil || b < a || b > 65535 {
				return nil, bad("is not a range low-high of ports 0 to 65535")
			}
		}
		for p := a; p <= b; p++ {
			out = append(out, p)
		}
	}
	return out, nil
}
