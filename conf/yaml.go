package conf

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	yaml "go.yaml.in/yaml/v3"
)

// Flink 1.19+ reads config.yaml as standard YAML (snakeyaml) and flattens
// it: nested mapping keys are joined with dots, and each value is kept in
// the form Flink turns it into (yaml_scalar.go). This file parses with
// go.yaml.in/yaml/v3 into a yaml.Node tree, which yaml_flatten.go walks,
// so every key and error keeps its line.

// SyntaxError is a configuration file the YAML reader rejects.
type SyntaxError struct {
	File string
	Line int
	Msg  string
}

// Error renders "file:line: message".
func (e *SyntaxError) Error() string { return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg) }

// Is makes errors.Is(err, ErrSyntax) true.
func (e *SyntaxError) Is(target error) bool { return target == ErrSyntax }

// parseNested reads a standard-YAML config.yaml and flattens it to dotted
// keys.
func parseNested(name string, data []byte) ([]keyValue, []Warning, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
		return nil, nil, nil
	} else if err != nil {
		return nil, nil, libraryError(name, data, err)
	}
	var next yaml.Node
	if err := dec.Decode(&next); err != nil && !errors.Is(err, io.EOF) {
		return nil, nil, libraryError(name, data, err)
	} else if err == nil {
		return nil, nil, &SyntaxError{File: name, Line: next.Line,
			Msg: "a second YAML document ('---'); Flink reads a config.yaml of one document"}
	}
	f := flattener{file: name, seen: map[string]int{}, open: map[*yaml.Node]bool{}}
	root := &yaml.Node{Kind: yaml.MappingNode}
	if len(doc.Content) > 0 {
		root = doc.Content[0]
	}
	root, err := f.deref(root)
	if err != nil {
		return nil, nil, err
	}
	if root.Kind == yaml.ScalarNode {
		if _, null, err := f.scalar(root); err == nil && null {
			return nil, nil, nil // a document of only "~": Flink reads no keys
		}
	}
	if root.Kind != yaml.MappingNode {
		return nil, nil, f.errf(root.Line, "the top level must be a mapping of keys to values")
	}
	if err := f.mapping("", root); err != nil {
		return nil, nil, err
	}
	return f.kvs, f.warns, nil
}

// libraryError turns the library's "yaml: line N: problem" into a
// *SyntaxError naming the file. The library numbers parser errors (those
// below) from 0 and leaves out a line 1; reader errors carry no line, so
// the offending line is looked up here.
func libraryError(name string, data []byte, err error) error {
	msg, ok := strings.CutPrefix(err.Error(), "yaml: ")
	if !ok {
		return &SyntaxError{File: name, Line: 1, Msg: msg}
	}
	line := 0
	if n, rest, ok := strings.Cut(strings.TrimPrefix(msg, "line "), ": "); ok && strings.HasPrefix(msg, "line ") {
		line, _ = strconv.Atoi(n)
		msg = rest
	}
	noLine := line == 0
	if strings.HasPrefix(msg, "did not find expected") || strings.HasPrefix(msg, "found duplicate %") ||
		msg == "found incompatible YAML document" || msg == "found undefined tag handle" {
		line++
	} else if line == 0 {
		line = 1
	}
	lines := bytes.Split(data, []byte("\n"))
	for i := 0; noLine && i < len(lines); i++ { // a reader error: which line?
		if bad := badChar(lines[i]); bad != "" {
			return &SyntaxError{File: name, Line: i + 1, Msg: bad}
		}
	}
	for len(lines) > 1 && len(bytes.TrimSpace(lines[len(lines)-1])) == 0 && line >= len(lines) {
		lines, line = lines[:len(lines)-1], len(lines)-1 // past the end: the last line written
	}
	for at := line; at <= line+1 && at <= len(lines); at++ { // a scanner's line may be the block's
		l := lines[at-1]
		if indent := l[:len(l)-len(bytes.TrimLeft(l, " \t"))]; bytes.ContainsRune(indent, '\t') {
			return &SyntaxError{File: name, Line: at, Msg: "tab in indentation; indent with spaces"}
		}
	}
	if hint := libraryHint(msg); hint != "" {
		msg += " (" + hint + ")"
	}
	return &SyntaxError{File: name, Line: line, Msg: msg}
}

// libraryHint says what usually causes one of the library's terser errors.
func libraryHint(msg string) string {
	switch msg {
	case "did not find expected key":
		return "bad indentation, text after a quoted value, or a line that is not 'key: value'"
	case "did not find expected <document start>":
		return "bad indentation: this line is indented less than the first line of the file"
	case "mapping values are not allowed in this context":
		return "':' followed by a space inside a plain value; quote the value, or indent it below its key"
	case "block sequence entries are not allowed in this context":
		return "a sequence entry '- ' must start its own line, below its key"
	case "found unexpected end of stream":
		return "a quote, [ or { is not closed"
	case "did not find expected ',' or ']'":
		return "a [ is not closed"
	case "did not find expected ',' or '}'":
		return "a { is not closed"
	case "found incompatible YAML document":
		return "only '%YAML 1.1' may be named"
	}
	return ""
}

// badChar names what the YAML reader refuses in a line: invalid UTF-8, or a
// control character YAML does not allow.
func badChar(l []byte) string {
	if !utf8.Valid(l) {
		return "not valid UTF-8"
	}
	for _, r := range string(l) {
		if r < ' ' && r != '\t' && r != '\r' || r == 0x7f || r >= 0x80 && r < 0xa0 && r != 0x85 || r == 0xfffe || r == 0xffff {
			return fmt.Sprintf("control character %U is not allowed in YAML", r)
		}
	}
	return ""
}
