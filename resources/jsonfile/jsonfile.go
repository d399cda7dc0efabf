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
// wrote before. Reading: a Reader walks a document token by token through
// encoding/json's own tokenizer (json.Decoder.Token), which checks the
// syntax; the caller says what it expects where.
package jsonfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"time"
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

// Reader walks one JSON document.
type Reader struct {
	dec    *json.Decoder
	peeked json.Token
	has    bool
}

// NewReader reads the document in b.
func NewReader(b []byte) *Reader {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	return &Reader{dec: dec}
}

func (r *Reader) next() (json.Token, error) {
	if r.has {
		r.has = false
		return r.peeked, nil
	}
	t, err := r.dec.Token()
	if err == io.EOF {
		return nil, fmt.Errorf("%w: unexpected end of document", ErrSyntax)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSyntax, err)
	}
	return t, nil
}

// Null consumes a null and reports true, or leaves any other value.
func (r *Reader) Null() (bool, error) {
	t, err := r.next()
	if err != nil {
		return false, err
	}
	if t == nil {
		return true, nil
	}
	r.peeked, r.has = t, true
	return false, nil
}

// Object reads an object, calling field for each member's key; field must
// read the member's value. A null reads as an empty object.
func (r *Reader) Object(field func(key string) error) error {
	t, err := r.next()
	if err != nil || t == nil {
		return err
	}
	if t != json.Delim('{') {
		return fmt.Errorf("%w: want an object, got %v", ErrSyntax, t)
	}
	for {
		t, err := r.next()
		if err != nil {
			return err
		}
		if t == json.Delim('}') {
			return nil
		}
		key, ok := t.(string)
		if !ok {
			return fmt.Errorf("%w: want a member name, got %v", ErrSyntax, t)
		}
		if err := field(key); err != nil {
			return err
		}
	}
}

// Array reads an array, calling elem for each element; elem must read it.
// A null reads as an empty array.
func (r *Reader) Array(elem func() error) error {
	t, err := r.next()
	if err != nil || t == nil {
		return err
	}
	if t != json.Delim('[') {
		return fmt.Errorf("%w: want an array, got %v", ErrSyntax, t)
	}
	for {
		if r.dec.More() {
			if err := elem(); err != nil {
				return err
			}
			continue
		}
		t, err := r.next()
		if err != nil {
			return err
		}
		if t != json.Delim(']') {
			return fmt.Errorf("%w: want the end of an array, got %v", ErrSyntax, t)
		}
		return nil
	}
}

// String reads a string; a null reads as "".
func (r *Reader) String() (string, error) {
	t, err := r.next()
	if err != nil || t == nil {
		return "", err
	}
	s, ok := t.(string)
	if !ok {
		return "", fmt.Errorf("%w: want a string, got %v", ErrSyntax, t)
	}
	return s, nil
}

// number reads a number's text; a null reads as "0".
func (r *Reader) number() (string, error) {
	t, err := r.next()
	if err != nil {
		return "", err
	}
	if t == nil {
		return "0", nil
	}
	n, ok := t.(json.Number)
	if !ok {
		return "", fmt.Errorf("%w: want a number, got %v", ErrSyntax, t)
	}
	return string(n), nil
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
	if r.has {
		return fmt.Errorf("%w: data after the document", ErrSyntax)
	}
	if _, err := r.dec.Token(); err != io.EOF {
		return fmt.Errorf("%w: data after the document", ErrSyntax)
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
