package conf

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sort"
	"strings"

	"github.com/xres/xres/conf/localfile"
)

// A dynamic file holds -D overrides as one JSON object of strings, so that
// they need not travel on command lines (where ps, the NodeManager's launch
// script and the RM's submission context would show a secret):
//
//	{
//	  "parallelism.default": "4",
//	  "s3.secret-key": "…"
//	}
//
// Its entries count as -D overrides (origin "-D"); a -D given on the
// command line wins over the same key in the file.

// ReadDynamicFile reads the dynamic file at path and returns its entries as
// "key=value" overrides, sorted by key, for Load. Errors name the file (and
// line), never a value.
func ReadDynamicFile(path string) ([]string, error) {
	data, err := localfile.ReadRegular(path, MaxFileSize)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("read dynamic file %s: %w: %w", path, ErrConfNotFound, err)
		}
		return nil, fmt.Errorf("read dynamic file %s: %w", path, err)
	}
	return ParseDynamicFile(path, data)
}

// WithDynamicFile returns the overrides of the dynamic file at path (none
// when path is "") followed by dynamic, so that dynamic wins in Load.
func WithDynamicFile(path string, dynamic []string) ([]string, error) {
	if path == "" {
		return dynamic, nil
	}
	fromFile, err := ReadDynamicFile(path)
	if err != nil {
		return nil, err
	}
	return append(fromFile, dynamic...), nil
}

// ParseDynamicFile parses a dynamic file's content; name is used in errors
// ("name:line: …"). Every value must be a JSON string; keys must be
// non-empty, without '='. A key given twice keeps its last value, as a
// repeated -D does.
func ParseDynamicFile(name string, data []byte) ([]string, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	lineAt := func(off int64) int {
		if off > int64(len(data)) {
			off = int64(len(data))
		}
		return bytes.Count(data[:off], []byte("\n")) + 1
	}
	bad := func(off int64, format string, args ...any) error {
		return fmt.Errorf("dynamic file %w", &Error{File: name, Line: lineAt(off), Err: fmt.Errorf("%w: %s", ErrSyntax, fmt.Sprintf(format, args...))})
	}
	// Token errors are reported without json's message, which may quote
	// a character of a value.
	tokenErr := func(err error) error {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return bad(se.Offset, "malformed JSON (want an object of \"key\": \"value\" strings)")
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return bad(int64(len(data)), "unexpected end of JSON (want an object of \"key\": \"value\" strings)")
		}
		return bad(dec.InputOffset(), "malformed JSON")
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, tokenErr(err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, bad(dec.InputOffset(), "want a JSON object of \"key\": \"value\" strings")
	}
	values := map[string]string{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, tokenErr(err)
		}
		key, _ := tok.(string) // object keys are always strings
		keyOff := dec.InputOffset()
		if k := strings.TrimSpace(key); k == "" || strings.Contains(k, "=") {
			return nil, bad(keyOff, "key %q: want a non-empty configuration key without '='", redactArg(key))
		}
		if k := strings.TrimSpace(key); strings.HasPrefix(k, "-D") {
			return nil, bad(keyOff, "key %q starts with -D: write the configuration key alone (%q)", redactArg(k), redactArg(strings.TrimPrefix(k, "-D")))
		}
		tok, err = dec.Token()
		if err != nil {
			return nil, tokenErr(err)
		}
		v, ok := tok.(string)
		if !ok {
			return nil, bad(keyOff, "key %s: the value must be a JSON string (quote numbers and booleans: \"4\", \"true\")", strings.TrimSpace(key))
		}
		values[strings.TrimSpace(key)] = v
	}
	if _, err := dec.Token(); err != nil { // the closing '}'
		return nil, tokenErr(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, bad(dec.InputOffset(), "unexpected data after the JSON object")
	}
	keys := make([]string, 0, len(values))
	for k := range values {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = k + "=" + values[k]
	}
	return out, nil
}

// WriteDynamicFile writes dynamic ("key=value" overrides, the last of a key
// winning) as a dynamic file at path, readable by its owner only (0600).
func WriteDynamicFile(path string, dynamic []string) error {
	values := map[string]string{}
	for _, d := range dynamic {
		k, v, err := ParseDynamic(d)
		if err != nil {
			return err
		}
		values[k] = v
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(values); err != nil { // map keys are sorted
		return fmt.Errorf("write dynamic file %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("write dynamic file %s: %w", path, err)
	}
	// The file may have existed with wider permissions.
	if err := f.Chmod(0o600); err != nil {
		_ = f.Close()
		return fmt.Errorf("write dynamic file %s: %w", path, err)
	}
	if _, err := f.Write(buf.Bytes()); err != nil {
		_ = f.Close()
		return fmt.Errorf("write dynamic file %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write dynamic file %s: %w", path, err)
	}
	return nil
}
