package conf

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	yaml "go.yaml.in/yaml/v3"
)

// Flink 1.19+ reads config.yaml as standard YAML (snakeyaml) and flattens
// it: nested mapping keys are joined with dots, and each value is kept in
// the form Flink turns it into (see flinkScalar). This file parses with
// go.yaml.in/yaml/v3 into a yaml.Node tree and walks it, so every key and
// error keeps its line.

// maxCollectionAliases bounds how often aliases of mappings and lists are
// expanded (snakeyaml's default limit, 50), against alias bombs.
const maxCollectionAliases = 50

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

var libraryLine = regexp.MustCompile(`^yaml: (?:line (\d+): )?(.*)$`)

// libraryError turns the library's "yaml: line N: problem" into a
// *SyntaxError naming the file. The library numbers parser errors (those
// below) from 0 and leaves out a line 1; reader errors carry no line, so
// the offending line is looked up here.
func libraryError(name string, data []byte, err error) error {
	m := libraryLine.FindStringSubmatch(err.Error())
	if m == nil {
		return &SyntaxError{File: name, Line: 1, Msg: err.Error()}
	}
	line, _ := strconv.Atoi(m[1])
	msg := m[2]
	if strings.HasPrefix(msg, "did not find expected") || strings.HasPrefix(msg, "found duplicate %") ||
		msg == "found incompatible YAML document" || msg == "found undefined tag handle" {
		line++
	} else if line == 0 {
		line = 1
	}
	lines := bytes.Split(data, []byte("\n"))
	for i, l := range lines {
		if bad := badChar(l); bad != "" && m[1] == "" {
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
	if hint, ok := libraryHints[msg]; ok {
		msg += " (" + hint + ")"
	}
	return &SyntaxError{File: name, Line: line, Msg: msg}
}

// libraryHints says what usually causes the library's terser errors.
var libraryHints = map[string]string{
	"did not find expected key":                              "bad indentation, text after a quoted value, or a line that is not 'key: value'",
	"did not find expected <document start>":                 "bad indentation: this line is indented less than the first line of the file",
	"mapping values are not allowed in this context":         "':' followed by a space inside a plain value; quote the value, or indent it below its key",
	"block sequence entries are not allowed in this context": "a sequence entry '- ' must start its own line, below its key",
	"found unexpected end of stream":                         "a quote, [ or { is not closed",
	"did not find expected ',' or ']'":                       "a [ is not closed",
	"did not find expected ',' or '}'":                       "a { is not closed",
	"found incompatible YAML document":                       "only '%YAML 1.1' may be named",
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

// flattener turns the node tree into dotted keys.
type flattener struct {
	file    string
	kvs     []keyValue
	warns   []Warning
	seen    map[string]int      // flattened key -> line
	open    map[*yaml.Node]bool // mappings being walked (an alias of one is a cycle)
	aliases int
}

func (f *flattener) errf(line int, format string, args ...any) error {
	return &SyntaxError{File: f.file, Line: line, Msg: fmt.Sprintf(format, args...)}
}

// deref follows an alias to the node its anchor names.
func (f *flattener) deref(n *yaml.Node) (*yaml.Node, error) {
	if n.Kind != yaml.AliasNode {
		return n, nil
	}
	if t := n.Alias; t.Kind == yaml.MappingNode || t.Kind == yaml.SequenceNode {
		if f.aliases++; f.aliases > maxCollectionAliases {
			return nil, f.errf(n.Line, "more than %d aliases of mappings or lists", maxCollectionAliases)
		}
		if f.open[t] {
			return nil, f.errf(n.Line, "alias *%s refers to a mapping that contains it", n.Value)
		}
	}
	return n.Alias, nil
}

// pair is one key of a mapping with the line it is set on.
type pair struct {
	key  string
	line int
	val  *yaml.Node
}

// pairs lists a mapping's keys, merge keys ("<<: *base", YAML 1.1 as in
// snakeyaml) expanded: a key set in the mapping wins over a merged one, and
// an earlier merged mapping over a later one.
func (f *flattener) pairs(n *yaml.Node) ([]pair, error) {
	var own, merged []pair
	first := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, err := f.deref(n.Content[i])
		if err != nil {
			return nil, err
		}
		line := n.Content[i].Line
		if k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
			srcs, err := f.deref(n.Content[i+1])
			if err != nil {
				return nil, err
			}
			list := []*yaml.Node{srcs}
			if srcs.Kind == yaml.SequenceNode {
				list = srcs.Content
			}
			for _, s := range list {
				if s, err = f.deref(s); err != nil {
					return nil, err
				}
				if s.Kind != yaml.MappingNode {
					return nil, f.errf(line, "a merge key '<<' takes a mapping or a list of mappings")
				}
				ps, err := f.pairs(s)
				if err != nil {
					return nil, err
				}
				merged = append(merged, ps...)
			}
			continue
		}
		if k.Kind != yaml.ScalarNode {
			return nil, f.errf(line, "a key must be a plain value, not a mapping or a list")
		}
		key, null, err := f.scalar(k)
		if err != nil {
			return nil, err
		}
		if null || key == "" {
			return nil, f.errf(line, "empty key")
		}
		if at, dup := first[key]; dup {
			return nil, f.errf(line, "duplicate key %q (first at line %d)", key, at)
		}
		first[key] = line
		own = append(own, pair{key, line, n.Content[i+1]})
	}
	for _, p := range merged {
		if _, set := first[p.key]; !set {
			first[p.key] = p.line
			own = append(own, p)
		}
	}
	return own, nil
}

func (f *flattener) mapping(prefix string, n *yaml.Node) error {
	f.open[n] = true
	defer delete(f.open, n)
	ps, err := f.pairs(n)
	if err != nil {
		return err
	}
	for _, p := range ps {
		key := p.key
		if prefix != "" {
			key = prefix + "." + p.key
		}
		val, err := f.deref(p.val)
		if err != nil {
			return err
		}
		var value string
		switch val.Kind {
		case yaml.MappingNode:
			if err := f.mapping(key, val); err != nil {
				return err
			}
			continue
		case yaml.SequenceNode:
			if value, err = f.list(key, val); err != nil {
				return err
			}
		default:
			v, null, err := f.scalar(val)
			if err != nil {
				return err
			}
			if null {
				f.warns = append(f.warns, Warning{File: f.file, Line: p.line,
					Message: fmt.Sprintf("key %s has no value; skipped", key)})
				continue
			}
			value = v
		}
		if first, dup := f.seen[key]; dup {
			return f.errf(p.line, "key %s is set twice once nested keys are joined with dots (first at line %d)", key, first)
		}
		f.seen[key] = p.line
		f.kvs = append(f.kvs, keyValue{key: key, value: value, line: p.line})
	}
	return nil
}

// list renders a sequence as Flink's list value: elements joined with ';'
// (quoted where needed); a mapping element becomes Flink's "k1:v1,k2:v2".
func (f *flattener) list(key string, n *yaml.Node) (string, error) {
	elems := make([]string, 0, len(n.Content))
	for _, it := range n.Content {
		it, err := f.deref(it)
		if err != nil {
			return "", err
		}
		switch it.Kind {
		case yaml.SequenceNode:
			return "", f.errf(it.Line, "list %s: lists inside lists are not supported", key)
		case yaml.MappingNode:
			ps, err := f.pairs(it)
			if err != nil {
				return "", err
			}
			parts := make([]string, 0, len(ps))
			for _, p := range ps {
				v, err := f.deref(p.val)
				if err != nil {
					return "", err
				}
				s, null, err := f.scalar(v)
				if err != nil || null || v.Kind != yaml.ScalarNode {
					if err == nil {
						err = f.errf(p.line, "list %s: values of a mapping inside a list must be plain values", key)
					}
					return "", err
				}
				parts = append(parts, quoteElem(p.key, ":,")+":"+quoteElem(s, ":,"))
			}
			elems = append(elems, strings.Join(parts, ","))
		default:
			s, null, err := f.scalar(it)
			if err != nil {
				return "", err
			}
			if null {
				return "", f.errf(it.Line, "empty entry in the list %s", key)
			}
			elems = append(elems, s)
		}
	}
	return JoinList(elems), nil
}
