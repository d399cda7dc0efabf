// Package jsonfile reads and writes the small JSON files the launcher
// touches on every start (the coordination state, the device cache, the
// info file) without encoding/json's reflection. Decoding a struct with
// encoding/json first builds the type's field tables, which cost a
// launcher that lives a few milliseconds about a third of its
// instructions; these files have fixed shapes, so their code walks them
// directly.
//
// Writing: AppendString escapes a string exactly as encoding/json does
// (HTML-safe), so files written here are byte for byte what json.Marshal
// wrote before. Reading: a Reader walks a document in memory, reading
// JSON's grammar as encoding/json does (a fuzz test holds the two to the
// same tokens); the caller says what it expects where.
package jsonfile

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"
	"unicode/utf16"
	"unicode/utf8"
)

const hexDigits = "0123456789abcdef"

// AppendString appends s as a JSON string, escaped as encoding/json
// escapes it: '"' and '\\' with a backslash; \b, \f, \n, \r, \t by name;
// other control characters and '<', '>', '&' as \u00XX; U+2028 and U+2029
// as \u2028 and \u2029; each byte of invalid UTF-8 as \ufffd.
func AppendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' && b != '<' && b != '>' && b != '&' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '"', '\\':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// AppendTime appends t as encoding/json writes a time.Time: RFC 3339 with
// nanoseconds, quoted.
func AppendTime(dst []byte, t time.Time) []byte {
	dst = append(dst, '"')
	dst = t.AppendFormat(dst, time.RFC3339Nano)
	return append(dst, '"')
}

// ErrSyntax marks a document that is not JSON, or not the shape its reader
// expects.
var ErrSyntax = errors.New("json")

// Reader walks one JSON document held in memory. It reads the grammar of
// RFC 8259 as encoding/json does (FuzzReaderAsEncodingJSON holds it to
// json.Decoder.Token, token for token, accepted and refused alike: a
// string's escapes and surrogate pairs, invalid UTF-8 read as U+FFFD,
// control characters refused, numbers as JSON writes them), without that
// tokenizer's cost: json.Decoder.Token allocates a syntax error for the
// delimiter that ends every scalar, which made reading the state and the
// device caches a sixth of the CPU time of a launch with topology
// placement (docs/benchmarks.md). The caller says what it expects where;
// each container checks its own commas, colons and end.
type Reader struct {
	b []byte
	i int
}

// NewReader reads the document in b.
func NewReader(b []byte) *Reader { return &Reader{b: b} }

// skip moves past white space and returns the next byte (0 at the end).
func (r *Reader) skip() byte {
	for r.i < len(r.b) {
		switch c := r.b[r.i]; c {
		case ' ', '\t', '\n', '\r':
			r.i++
		default:
			return c
		}
	}
	return 0
}

// atEnd reports whether only white space is left (skip's 0 is also a NUL
// byte in the document).
func (r *Reader) atEnd() bool {
	r.skip()
	return r.i >= len(r.b)
}

func (r *Reader) errorf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format+" at offset %d", append([]any{ErrSyntax}, append(args, r.i)...)...)
}

// want is the error for a value or delimiter other than what (the end of
// the document among them).
func (r *Reader) want(what string) error {
	if r.atEnd() {
		return r.errorf("unexpected end of document (want %s)", what)
	}
	return r.errorf("want %s, got %s", what, r.found())
}

// found describes what is at the reader's position, for an error.
func (r *Reader) found() string {
	switch c := r.skip(); {
	case r.atEnd():
		return "the end of the document"
	case c == '"':
		return "a string"
	case c == '{':
		return "an object"
	case c == '[':
		return "an array"
	case c == '-' || (c >= '0' && c <= '9'):
		return "a number"
	case c == 't' || c == 'f':
		return "a boolean"
	default:
		return strconv.QuoteRune(rune(c))
	}
}

// literal consumes word (null, true, false) when it is next.
func (r *Reader) literal(word string) bool {
	if r.skip() != word[0] || !bytes.HasPrefix(r.b[r.i:], []byte(word)) {
		return false
	}
	r.i += len(word)
	return true
}

// Null consumes a null and reports true, or leaves any other value.
func (r *Reader) Null() (bool, error) {
	if r.atEnd() {
		return false, r.want("a value")
	}
	return r.literal("null"), nil
}

// open consumes a container's opening delim; a null reads as an empty
// container (ok false).
func (r *Reader) open(delim byte, what string) (ok bool, err error) {
	switch c := r.skip(); {
	case c == delim:
		r.i++
		return true, nil
	case r.literal("null"):
		return false, nil
	default:
		return false, r.want(what)
	}
}

// Object reads an object, calling field for each member's key; field must
// read the member's value. A null reads as an empty object. A member name
// given twice is refused: encoding/json would merge the two values into
// one field (a second "quarantine":{} keeps the first one's members), so
// a file xres never wrote could read as a device state it never had;
// encoding/json/v2 refuses duplicate names too.
func (r *Reader) Object(field func(key string) error) error {
	if ok, err := r.open('{', "an object"); !ok || err != nil {
		return err
	}
	if r.skip() == '}' {
		r.i++
		return nil
	}
	var names memberNames
	for {
		if r.skip() != '"' {
			return r.want("a member name")
		}
		key, err := r.str()
		if err != nil {
			return err
		}
		if !names.add(key) {
			return r.errorf("member %q given twice", key)
		}
		if r.skip() != ':' {
			return r.want(fmt.Sprintf("':' after member %q", key))
		}
		r.i++
		if err := field(key); err != nil {
			return err
		}
		switch r.skip() {
		case ',':
			r.i++
		case '}':
			r.i++
			return nil
		default:
			return r.want(fmt.Sprintf("',' or '}' after member %q", key))
		}
	}
}

// memberNames is the set of an object's member names read so far: a few
// in place (the files' objects have at most eleven members), a map for
// more, so that a hostile object of many members costs no quadratic scan.
type memberNames struct {
	few  [12]string
	n    int
	many map[string]struct{}
}

// add records name, and says false if it was there already.
func (m *memberNames) add(name string) bool {
	if m.many != nil {
		if _, ok := m.many[name]; ok {
			return false
		}
		m.many[name] = struct{}{}
		return true
	}
	if slices.Contains(m.few[:m.n], name) {
		return false
	}
	if m.n < len(m.few) {
		m.few[m.n] = name
		m.n++
		return true
	}
	m.many = make(map[string]struct{}, 2*len(m.few))
	for _, s := range m.few {
		m.many[s] = struct{}{}
	}
	m.many[name] = struct{}{}
	return true
}

// Array reads an array, calling elem for each element; elem must read it.
// A null reads as an empty array.
func (r *Reader) Array(elem func() error) error {
	if ok, err := r.open('[', "an array"); !ok || err != nil {
		return err
	}
	if r.skip() == ']' {
		r.i++
		return nil
	}
	for {
		if err := elem(); err != nil {
			return err
		}
		switch r.skip() {
		case ',':
			r.i++
		case ']':
			r.i++
			return nil
		default:
			return r.want("',' or ']' in an array")
		}
	}
}

// String reads a string; a null reads as "".
func (r *Reader) String() (string, error) {
	switch c := r.skip(); {
	case c == '"':
		return r.str()
	case r.literal("null"):
		return "", nil
	default:
		return "", r.want("a string")
	}
}

// str reads the string that begins at the reader's position (a '"'), as
// encoding/json unquotes one.
func (r *Reader) str() (string, error) {
	r.i++ // the opening quote
	start := r.i
	for r.i < len(r.b) { // the common case: nothing to unescape
		c := r.b[r.i]
		if c == '"' {
			s := string(r.b[start:r.i])
			r.i++
			return s, nil
		}
		if c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
			break
		}
		r.i++
	}
	buf := append([]byte(nil), r.b[start:r.i]...)
	for r.i < len(r.b) {
		c := r.b[r.i]
		switch {
		case c == '"':
			r.i++
			return string(buf), nil
		case c < 0x20:
			return "", r.errorf("control character %#02x in a string", c)
		case c == '\\':
			if r.i+1 >= len(r.b) {
				return "", r.errorf("unexpected end of document")
			}
			e := r.b[r.i+1]
			r.i += 2
			switch e {
			case '"', '\\', '/':
				buf = append(buf, e)
			case 'b':
				buf = append(buf, '\b')
			case 'f':
				buf = append(buf, '\f')
			case 'n':
				buf = append(buf, '\n')
			case 'r':
				buf = append(buf, '\r')
			case 't':
				buf = append(buf, '\t')
			case 'u':
				u, ok := r.hex4()
				if !ok {
					return "", r.errorf("bad \\u escape in a string")
				}
				if utf16.IsSurrogate(u) {
					// A pair makes one rune; a surrogate alone is U+FFFD.
					if r.i+1 < len(r.b) && r.b[r.i] == '\\' && r.b[r.i+1] == 'u' {
						save := r.i
						r.i += 2
						if u2, ok := r.hex4(); ok {
							if p := utf16.DecodeRune(u, u2); p != utf8.RuneError {
								buf = utf8.AppendRune(buf, p)
								continue
							}
						}
						r.i = save
					}
					u = utf8.RuneError
				}
				buf = utf8.AppendRune(buf, u)
			default:
				return "", r.errorf("bad escape \\%c in a string", e)
			}
		case c < utf8.RuneSelf:
			buf = append(buf, c)
			r.i++
		default:
			ru, size := utf8.DecodeRune(r.b[r.i:])
			r.i += size
			buf = utf8.AppendRune(buf, ru) // invalid UTF-8: U+FFFD, as encoding/json
		}
	}
	return "", r.errorf("unexpected end of document in a string")
}

// hex4 reads the four hex digits of a \u escape.
func (r *Reader) hex4() (rune, bool) {
	if r.i+4 > len(r.b) {
		return 0, false
	}
	var v rune
	for _, c := range r.b[r.i : r.i+4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		v = v<<4 | rune(c)
	}
	r.i += 4
	return v, true
}

// number reads a number's text (JSON's grammar); a null reads as "0".
func (r *Reader) number() (string, error) {
	c := r.skip()
	if r.literal("null") {
		return "0", nil
	}
	if c != '-' && (c < '0' || c > '9') {
		return "", r.want("a number")
	}
	start := r.i
	if c == '-' {
		r.i++
	}
	digits := func() int {
		n := 0
		for r.i < len(r.b) && r.b[r.i] >= '0' && r.b[r.i] <= '9' {
			r.i++
			n++
		}
		return n
	}
	if r.i < len(r.b) && r.b[r.i] == '0' {
		r.i++
	} else if digits() == 0 {
		return "", r.errorf("bad number")
	}
	if r.i < len(r.b) && r.b[r.i] == '.' {
		r.i++
		if digits() == 0 {
			return "", r.errorf("bad number")
		}
	}
	if r.i < len(r.b) && (r.b[r.i] == 'e' || r.b[r.i] == 'E') {
		r.i++
		if r.i < len(r.b) && (r.b[r.i] == '+' || r.b[r.i] == '-') {
			r.i++
		}
		if digits() == 0 {
			return "", r.errorf("bad number")
		}
	}
	return string(r.b[start:r.i]), nil
}

// Int reads an integer that fits an int (no fraction, no exponent, as
// encoding/json requires of an int field); a null reads as 0.
func (r *Reader) Int() (int, error) {
	s, err := r.number()
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(s, 10, strconv.IntSize)
	if err != nil {
		return 0, fmt.Errorf("%w: %s is not an integer of %d bits", ErrSyntax, s, strconv.IntSize)
	}
	return int(n), nil
}

// Uint64 reads a non-negative integer of 64 bits; a null reads as 0.
func (r *Reader) Uint64() (uint64, error) {
	s, err := r.number()
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: %s is not an unsigned integer of 64 bits", ErrSyntax, s)
	}
	return n, nil
}

// Time reads a time as encoding/json reads a time.Time (RFC 3339, strict);
// a null reads as the zero time.
func (r *Reader) Time() (time.Time, error) {
	var t time.Time
	if null, err := r.Null(); null || err != nil {
		return t, err
	}
	s, err := r.String()
	if err != nil {
		return t, err
	}
	if err := t.UnmarshalText([]byte(s)); err != nil {
		return t, fmt.Errorf("%w: %v", ErrSyntax, err)
	}
	return t, nil
}

// StringMap reads an object of strings; a null reads as nil.
func (r *Reader) StringMap() (map[string]string, error) {
	if null, err := r.Null(); null || err != nil {
		return nil, err
	}
	m := map[string]string{}
	err := r.Object(func(key string) error {
		v, err := r.String()
		m[key] = v
		return err
	})
	return m, err
}

// End checks that nothing but white space follows the document.
func (r *Reader) End() error {
	if !r.atEnd() {
		return r.errorf("data after the document")
	}
	return nil
}

// Unknown is the error for a member a reader does not know.
func Unknown(key string) error {
	return fmt.Errorf("%w: unknown field %q", ErrSyntax, key)
}

// AppendStringMap appends m as encoding/json writes a map[string]string:
// members sorted by key, null for a nil map.
func AppendStringMap(dst []byte, m map[string]string) []byte {
	if m == nil {
		return append(dst, "null"...)
	}
	dst = append(dst, '{')
	for i, k := range slices.Sorted(maps.Keys(m)) {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = AppendString(dst, k)
		dst = append(dst, ':')
		dst = AppendString(dst, m[k])
	}
	return append(dst, '}')
}
