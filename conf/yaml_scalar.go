package conf

import (
	"fmt"
	"math"
	"math/big"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	yaml "go.yaml.in/yaml/v3"
)

// Flink's snakeyaml resolves a plain (unquoted) scalar by YAML 1.1's rules
// and Flink reads a non-string value back as snakeyaml writes it:
//
//	yes, On, TRUE          → true         (booleans)
//	0x1F, 017, 0b11, 1_000 → 31, 15, 3, 1000 (integers, in decimal)
//	1:30                   → 90           (base 60)
//	1.50, 1e3, 0.0001      → 1.5, 1000.0, 1.0E-4 (Java's Double.toString)
//	2001-12-14             → 2001-12-14T00:00:00Z (a date, in UTC)
//	~, null, nothing       → no value
//
// Quoted and block scalars stay as written. The patterns are snakeyaml 2's
// (Flink 1.19+). yamlRE compiles them on first use rather than when a
// binary starts (the launcher links this package and must start fast).
var yamlRE = sync.OnceValue(func() (re struct{ int, float, time *regexp.Regexp }) {
	re.int = regexp.MustCompile(`^(?:[-+]?0b_*[0-1][0-1_]*|[-+]?0_*[0-7][0-7_]*|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x_*[0-9a-fA-F][0-9a-fA-F_]*|[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+)$`)
	re.float = regexp.MustCompile(`^(?:[-+]?[0-9][0-9_]*\.[0-9_]*(?:[eE][-+]?[0-9]+)?|[-+]?[0-9][0-9_]*[eE][-+]?[0-9]+|[-+]?\.[0-9_]+(?:[eE][-+]?[0-9]+)?|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$`)
	re.time = regexp.MustCompile(`^([0-9]{4})-(?:([0-9]{2})-([0-9]{2})|([0-9]{1,2})-([0-9]{1,2})(?:[Tt]|[ \t]+)([0-9]{1,2}):([0-9]{2}):([0-9]{2})(?:\.([0-9]*))?(?:[ \t]*(?:Z|([-+][0-9]{1,2})(?::([0-9]{2}))?))?)$`)
	return re
})

// yamlBool reads YAML 1.1's booleans.
func yamlBool(v string) (value, ok bool) {
	switch v {
	case "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON":
		return true, true
	case "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF":
		return false, true
	}
	return false, false
}

// scalar returns a scalar node's value in Flink's string form, and whether
// it is null (no value).
func (f *flattener) scalar(n *yaml.Node) (string, bool, error) {
	tag := ""
	if n.Style&yaml.TaggedStyle != 0 {
		tag = n.ShortTag()
	}
	switch {
	case tag == "!!str" || tag == "!":
		return n.Value, false, nil
	case tag != "" && tag != "!!int" && tag != "!!float" && tag != "!!bool" && tag != "!!null" && tag != "!!timestamp":
		return "", false, f.errf(n.Line, "tag %s is not supported", tag)
	case tag == "" && n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) != 0:
		return n.Value, false, nil
	}
	v := n.Value
	if v != "" && !strings.ContainsRune("~nNyYtTfFoO+-.0123456789", rune(v[0])) {
		return v, false, nil // as snakeyaml, resolve only by the first character's patterns
	}
	b, isBool := yamlBool(v)
	switch {
	case v == "" || v == "~" || v == "null" || v == "Null" || v == "NULL":
		return "", true, nil
	case isBool:
		return strconv.FormatBool(b), false, nil
	case strings.Trim(v, "0123456789") == "" && (v[0] != '0' || v == "0"):
		return v, false, nil // a plain decimal: the common case, as written
	case strings.Trim(v, "0123456789_+-.:xabcdefABCDEFINTZnt \t") != "":
		return v, false, nil // "1728m", "10 s": no number or date
	}
	switch re := yamlRE(); {
	case re.int.MatchString(v):
		return yamlIntText(v), false, nil
	case re.float.MatchString(v):
		return yamlFloatText(v), false, nil
	case re.time.MatchString(v):
		return yamlTimeText(v), false, nil
	}
	return v, false, nil
}

// yamlTimeText writes a YAML 1.1 timestamp as snakeyaml writes the Date it
// makes: in UTC, "2001-12-14T21:59:43.100Z", the milliseconds only when
// not 0. Out-of-range fields roll over (Java's lenient Calendar).
func yamlTimeText(v string) string {
	m := yamlRE().time.FindStringSubmatch(v)
	n := func(i int) int { x, _ := strconv.Atoi(m[i]); return x }
	var t time.Time
	if m[2] != "" {
		t = time.Date(n(1), time.Month(n(2)), n(3), 0, 0, 0, 0, time.UTC)
	} else {
		secs, _ := strconv.ParseFloat(m[8]+"."+m[9]+"0", 64)
		whole := math.Floor(secs)
		zone := 0
		if m[10] != "" {
			zone = n(10)*3600 + n(11)*60
			if m[10][0] == '-' {
				zone = n(10)*3600 - n(11)*60
			}
		}
		t = time.Date(n(1), time.Month(n(4)), n(5), n(6), n(7), int(whole),
			int(math.Round((secs-whole)*1000))*int(time.Millisecond), time.FixedZone("", zone)).UTC()
	}
	out := t.Format("2006-01-02T15:04:05")
	if ms := t.Nanosecond() / int(time.Millisecond); ms > 0 {
		out += fmt.Sprintf(".%03d", ms)
	}
	return out + "Z"
}

// readsAsOtherNumber reports whether n is a plain integer or float that
// Flink rewrites to another number's text: octal, hexadecimal, binary or
// base 60 (as "0x10ee" → "4334"); a user writing a PCI id or a time of day
// would not expect it.
func readsAsOtherNumber(n *yaml.Node) bool {
	if n.Kind != yaml.ScalarNode || n.Style != 0 {
		return false
	}
	v := strings.TrimLeft(n.Value, "+-")
	switch re := yamlRE(); {
	case re.int.MatchString(n.Value):
		return len(v) > 1 && v[0] == '0' || strings.Contains(v, ":")
	case re.float.MatchString(n.Value):
		return strings.Contains(v, ":")
	}
	return false
}

// sexagesimal reads "1:30:05" (base 60) with the sign already removed.
func sexagesimal(v string) *big.Float {
	sum := new(big.Float)
	for _, d := range strings.Split(v, ":") {
		x, _ := new(big.Float).SetString(d)
		sum.Add(sum.Mul(sum, big.NewFloat(60)), x)
	}
	return sum
}

func yamlIntText(v string) string {
	v = strings.ReplaceAll(v, "_", "")
	neg := v[0] == '-'
	v = strings.TrimLeft(v, "+-")
	n := new(big.Int)
	switch {
	case strings.Contains(v, ":"):
		sexagesimal(v).Int(n)
	case strings.HasPrefix(v, "0b"):
		n.SetString(v[2:], 2)
	case strings.HasPrefix(v, "0x"):
		n.SetString(v[2:], 16)
	case len(v) > 1 && v[0] == '0':
		n.SetString(v[1:], 8)
	default:
		n.SetString(v, 10)
	}
	if neg {
		n.Neg(n)
	}
	return n.String()
}

func yamlFloatText(v string) string {
	v = strings.ToLower(strings.ReplaceAll(v, "_", ""))
	var x float64
	switch {
	case strings.HasSuffix(v, ".nan"):
		return ".NaN"
	case strings.HasSuffix(v, ".inf"):
		x = math.Inf(1)
	case strings.Contains(v, ":"):
		x, _ = sexagesimal(strings.TrimLeft(v, "+-")).Float64()
	default:
		x, _ = strconv.ParseFloat(strings.TrimLeft(v, "+-"), 64) // ±Inf past the range, as Java
	}
	if v[0] == '-' {
		x = -x
	}
	return javaDouble(x)
}

// javaDouble writes x as Java's Double.toString (and snakeyaml for the
// infinities): plain between 10^-3 and 10^7, else "1.0E10".
func javaDouble(x float64) string {
	switch a := math.Abs(x); {
	case math.IsInf(x, 1):
		return ".inf"
	case math.IsInf(x, -1):
		return "-.inf"
	case a == 0 || a >= 1e-3 && a < 1e7:
		s := strconv.FormatFloat(x, 'f', -1, 64)
		if !strings.Contains(s, ".") {
			s += ".0"
		}
		return s
	}
	mant, exp, _ := strings.Cut(strconv.FormatFloat(x, 'E', -1, 64), "E")
	if !strings.Contains(mant, ".") {
		mant += ".0"
	}
	e, _ := strconv.Atoi(exp)
	return mant + "E" + strconv.Itoa(e)
}
