package sasl

import (
	"fmt"
	"strings"
)

// Directives are the key=value pairs of a DIGEST-MD5 challenge or response
// (RFC 2831 §2.1.1). Keys are lower-cased; a key given twice keeps every
// value in order (realm may repeat).
type Directives map[string][]string

// Get returns the first value of key, or "".
func (d Directives) Get(key string) string {
	if v := d[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// ParseDirectives parses a comma-separated list of key=value and
// key="quoted value" pairs. Inside quotes, a backslash escapes the next
// character. Empty list elements (",,") are allowed, as RFC 2831's #rule
// says.
func ParseDirectives(b []byte) (Directives, error) {
	d := Directives{}
	s := string(b)
	i := 0
	skipSpace := func() {
		for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r' || s[i] == '\n') {
			i++
		}
	}
	for {
		skipSpace()
		if i >= len(s) {
			return d, nil
		}
		if s[i] == ',' {
			i++
			continue
		}
		start := i
		for i < len(s) && s[i] != '=' && s[i] != ',' && s[i] != ' ' && s[i] != '\t' {
			i++
		}
		key := strings.ToLower(s[start:i])
		if key == "" {
			return nil, fmt.Errorf("%w: empty directive name at offset %d", ErrBadChallenge, start)
		}
		skipSpace()
		if i >= len(s) || s[i] != '=' {
			return nil, fmt.Errorf("%w: directive %q has no value", ErrBadChallenge, key)
		}
		i++
		skipSpace()
		var val strings.Builder
		if i < len(s) && s[i] == '"' {
			i++
			closed := false
			for i < len(s) {
				c := s[i]
				if c == '\\' && i+1 < len(s) {
					val.WriteByte(s[i+1])
					i += 2
					continue
				}
				if c == '"' {
					closed = true
					i++
					break
				}
				val.WriteByte(c)
				i++
			}
			if !closed {
				return nil, fmt.Errorf("%w: unterminated quoted value of %q", ErrBadChallenge, key)
			}
		} else {
			start := i
			for i < len(s) && s[i] != ',' && s[i] != ' ' && s[i] != '\t' {
				i++
			}
			val.WriteString(s[start:i])
		}
		d[key] = append(d[key], val.String())
		skipSpace()
		if i < len(s) {
			if s[i] != ',' {
				return nil, fmt.Errorf("%w: expected ',' after %q at offset %d", ErrBadChallenge, key, i)
			}
			i++
		}
	}
}
