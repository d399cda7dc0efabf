package conf

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// This file is our own reader for the YAML subset Flink 1.19+'s config.yaml
// uses. It works in two steps: lines are cut into indentation and content,
// with "- " sequence markers split off so that a sequence entry's content
// becomes a line of its own, indented where the content starts:
//
//	line 7   "  - name: a"    ──►  {7, indent 2, dash}
//	                               {7, indent 4, "name: a"}
//	line 8   "    path: b"    ──►  {8, indent 4, "path: b"}
//
// and a recursive-descent parser builds mappings, sequences and scalars by
// indentation. Flow collections ([a, b], {k: v}) must close on their line.

// maxFlowDepth bounds nesting of flow collections.
const maxFlowDepth = 64

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

type yKind int

const (
	yNull yKind = iota
	yScalar
	yMap
	ySeq
)

type yNode struct {
	kind    yKind
	line    int
	text    string   // yScalar
	entries []yEntry // yMap, in file order
	items   []*yNode // ySeq
}

type yEntry struct {
	key  string
	line int
	val  *yNode
}

type yLine struct {
	no     int
	indent int
	text   string // content after the indentation; empty for a dash
	dash   bool   // a "- " sequence entry marker
}

type yParser struct {
	file  string
	lines []yLine
	i     int
}

func (p *yParser) errf(line int, format string, args ...any) error {
	return &SyntaxError{File: p.file, Line: line, Msg: fmt.Sprintf(format, args...)}
}

// parseNested reads a standard-YAML config.yaml and flattens it to dotted
// keys.
func parseNested(name string, data []byte) ([]keyValue, []Warning, error) {
	p := &yParser{file: name}
	if err := p.splitLines(data); err != nil {
		return nil, nil, err
	}
	root, err := p.document()
	if err != nil {
		return nil, nil, err
	}
	f := flattener{file: name, seen: map[string]int{}}
	if err := f.mapping("", root); err != nil {
		return nil, nil, err
	}
	return f.kvs, f.warns, nil
}

func (p *yParser) splitLines(data []byte) error {
	data = bytes.TrimPrefix(data, []byte("\ufeff"))
	if !utf8.Valid(data) {
		// Find the line for the message.
		for no, raw := range bytes.Split(data, []byte("\n")) {
			if !utf8.Valid(raw) {
				return p.errf(no+1, "not valid UTF-8")
			}
		}
	}
	started, docStart := false, false
	for no, raw := range strings.Split(string(data), "\n") {
		no++
		raw = strings.TrimSuffix(raw, "\r")
		indent := 0
		for indent < len(raw) && (raw[indent] == ' ' || raw[indent] == '\t') {
			indent++
		}
		rest := raw[indent:]
		if rest == "" || rest[0] == '#' {
			continue
		}
		if strings.Contains(raw[:indent], "\t") {
			return p.errf(no, "tab in indentation; indent with spaces")
		}
		if indent == 0 {
			switch {
			case rest == "---" || strings.HasPrefix(rest, "--- ") || strings.HasPrefix(rest, "---\t"):
				if started || docStart {
					return p.errf(no, "several YAML documents in one file are not supported")
				}
				if after := strings.TrimSpace(rest[3:]); after != "" && after[0] != '#' {
					return p.errf(no, "content after the document marker '---' is not supported")
				}
				docStart = true
				continue
			case rest == "..." || strings.HasPrefix(rest, "... "):
				return p.errf(no, "the document end marker '...' is not supported")
			case rest[0] == '%':
				return p.errf(no, "YAML directives (%%) are not supported")
			}
		}
		started = true
		for rest == "-" || strings.HasPrefix(rest, "- ") || strings.HasPrefix(rest, "-\t") {
			p.lines = append(p.lines, yLine{no: no, indent: indent, dash: true})
			j := 1
			for j < len(rest) && rest[j] == ' ' {
				j++
			}
			if j < len(rest) && rest[j] == '\t' {
				return p.errf(no, "tab after '-'; separate with spaces")
			}
			indent += j
			rest = rest[j:]
			if rest == "" || rest[0] == '#' {
				break
			}
		}
		if rest != "" && rest[0] != '#' {
			p.lines = append(p.lines, yLine{no: no, indent: indent, text: rest})
		}
	}
	return nil
}

// document parses the whole file; the top level must be a mapping.
func (p *yParser) document() (*yNode, error) {
	if len(p.lines) == 0 {
		return &yNode{kind: yMap}, nil
	}
	root, err := p.node(-1)
	if err != nil {
		return nil, err
	}
	if p.i < len(p.lines) {
		return nil, p.errf(p.lines[p.i].no, "bad indentation: this line is indented less than the first line of the file")
	}
	switch root.kind {
	case yMap:
		return root, nil
	case yNull:
		return &yNode{kind: yMap}, nil
	default:
		return nil, p.errf(root.line, "the top level must be a mapping of keys to values")
	}
}

func (p *yParser) next() (yLine, bool) {
	if p.i < len(p.lines) {
		return p.lines[p.i], true
	}
	return yLine{}, false
}

// node parses the node that starts at the current line, which is indented
// more than parent.
func (p *yParser) node(parent int) (*yNode, error) {
	l := p.lines[p.i]
	if l.dash {
		return p.sequence(l.indent)
	}
	if _, _, ok, err := p.splitKey(l); err != nil {
		return nil, err
	} else if ok {
		return p.mapping(l.indent)
	}
	n, err := p.inline(l.text, l.no)
	if err != nil {
		return nil, err
	}
	p.i++
	if nl, ok := p.next(); ok && nl.indent > parent {
		return nil, p.errf(nl.no, "unexpected line: multi-line values are not supported; write the value on one line (quote it if needed)")
	}
	if n == nil {
		n = &yNode{kind: yNull, line: l.no}
	}
	return n, nil
}

func (p *yParser) sequence(indent int) (*yNode, error) {
	n := &yNode{kind: ySeq, line: p.lines[p.i].no}
	for {
		l, ok := p.next()
		if !ok || l.indent < indent || !l.dash {
			if ok && l.indent > indent {
				return nil, p.errf(l.no, "bad indentation of a sequence entry")
			}
			return n, nil
		}
		if l.indent > indent {
			return nil, p.errf(l.no, "bad indentation of a sequence entry")
		}
		p.i++
		item := &yNode{kind: yNull, line: l.no}
		if nl, ok := p.next(); ok && nl.indent > indent {
			var err error
			if item, err = p.node(indent); err != nil {
				return nil, err
			}
		}
		n.items = append(n.items, item)
	}
}

func (p *yParser) mapping(indent int) (*yNode, error) {
	n := &yNode{kind: yMap, line: p.lines[p.i].no}
	seen := map[string]int{}
	for {
		l, ok := p.next()
		if !ok || l.indent < indent {
			return n, nil
		}
		if l.indent > indent {
			return nil, p.errf(l.no, "bad indentation: expected a key at column %d", indent+1)
		}
		if l.dash {
			return nil, p.errf(l.no, "a sequence entry '- ' where a key was expected")
		}
		key, rest, ok, err := p.splitKey(l)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, p.errf(l.no, "expected 'key: value'")
		}
		if first, dup := seen[key]; dup {
			return nil, p.errf(l.no, "duplicate key %q (first at line %d)", key, first)
		}
		seen[key] = l.no
		p.i++
		val, err := p.inline(rest, l.no)
		if err != nil {
			return nil, err
		}
		nl, more := p.next()
		switch {
		case val != nil && more && nl.indent > indent:
			return nil, p.errf(nl.no, "unexpected line: multi-line values are not supported; write the value of %q on one line", key)
		case val != nil:
		case more && nl.indent > indent:
			if val, err = p.node(indent); err != nil {
				return nil, err
			}
		case more && nl.indent == indent && nl.dash:
			if val, err = p.sequence(indent); err != nil {
				return nil, err
			}
		default:
			val = &yNode{kind: yNull, line: l.no}
		}
		n.entries = append(n.entries, yEntry{key: key, line: l.no, val: val})
	}
}

// splitKey splits a "key: value" line. ok is false for a line that is not
// a mapping entry (a scalar or flow collection on its own).
func (p *yParser) splitKey(l yLine) (key, rest string, ok bool, err error) {
	t := l.text
	switch t[0] {
	case '\'', '"':
		v, n, err := scanQuoted(t)
		if err != nil {
			return "", "", false, p.errf(l.no, "%v", err)
		}
		r := strings.TrimLeft(t[n:], " ")
		if strings.HasPrefix(r, ":") && (len(r) == 1 || r[1] == ' ' || r[1] == '\t') {
			return v, r[1:], true, nil
		}
		return "", "", false, nil
	case '[', '{':
		return "", "", false, nil
	case '?':
		if len(t) == 1 || t[1] == ' ' {
			return "", "", false, p.errf(l.no, "complex keys ('? ') are not supported")
		}
	}
	for i := 0; i < len(t); i++ {
		switch c := t[i]; {
		case c == '#' && i > 0 && (t[i-1] == ' ' || t[i-1] == '\t'):
			return "", "", false, nil
		case c == ':' && (i+1 == len(t) || t[i+1] == ' ' || t[i+1] == '\t'):
			key = strings.TrimRight(t[:i], " \t")
			if key == "" {
				return "", "", false, p.errf(l.no, "empty key")
			}
			if strings.ContainsAny(key[:1], "&*!|>%@`") {
				// Let inline name the construct.
				if _, err := p.inline(key, l.no); err != nil {
					return "", "", false, err
				}
			}
			return key, t[i+1:], true, nil
		}
	}
	return "", "", false, nil
}

// inline parses a value written on a line (after "key:" or alone). It
// returns nil for no value (only blanks or a comment).
func (p *yParser) inline(text string, line int) (*yNode, error) {
	s := strings.TrimLeft(text, " \t")
	if s == "" || s[0] == '#' {
		return nil, nil
	}
	if err := p.indicator(s, line); err != nil {
		return nil, err
	}
	switch s[0] {
	case '\'', '"':
		v, n, err := scanQuoted(s)
		if err != nil {
			return nil, p.errf(line, "%v", err)
		}
		if err := p.trailing(s[n:], line); err != nil {
			return nil, err
		}
		return &yNode{kind: yScalar, line: line, text: v}, nil
	case '[', '{':
		f := &flowParser{p: p, s: s, line: line}
		n, err := f.value(0)
		if err != nil {
			return nil, err
		}
		if err := p.trailing(s[f.i:], line); err != nil {
			return nil, err
		}
		return n, nil
	case '-':
		if s == "-" || s[1] == ' ' || s[1] == '\t' {
			return nil, p.errf(line, "a sequence entry '- ' is not allowed here; start it on the next line")
		}
	}
	end := len(s)
	for i := 1; i < len(s); i++ {
		if s[i] == '#' && (s[i-1] == ' ' || s[i-1] == '\t') {
			end = i
			break
		}
	}
	v := strings.TrimRight(s[:end], " \t")
	if strings.Contains(v, ": ") || strings.Contains(v, ":\t") || strings.HasSuffix(v, ":") {
		return nil, p.errf(line, "':' followed by a space inside a plain value; quote the value")
	}
	if isNull(v) {
		return &yNode{kind: yNull, line: line}, nil
	}
	return &yNode{kind: yScalar, line: line, text: v}, nil
}

// indicator rejects the YAML constructs the reader does not cover, named.
func (p *yParser) indicator(s string, line int) error {
	switch s[0] {
	case '&':
		return p.errf(line, "anchors (&) are not supported")
	case '*':
		return p.errf(line, "aliases (*) are not supported")
	case '!':
		return p.errf(line, "tags (!) are not supported")
	case '|', '>':
		return p.errf(line, "block scalars (| and >) are not supported; write the value on one line")
	case '%', '@', '`':
		return p.errf(line, "%q cannot start a plain value; quote the value", s[:1])
	case '?':
		if len(s) == 1 || s[1] == ' ' {
			return p.errf(line, "complex keys ('? ') are not supported")
		}
	}
	return nil
}

// trailing accepts only blanks and a comment after a complete value.
func (p *yParser) trailing(rest string, line int) error {
	r := strings.TrimLeft(rest, " \t")
	if r == "" || (r[0] == '#' && len(r) < len(rest)) {
		return nil
	}
	return p.errf(line, "unexpected text %q after the value", clip(r))
}

func clip(s string) string {
	if len(s) > 20 {
		return s[:20] + "…"
	}
	return s
}

func isNull(v string) bool {
	switch v {
	case "~", "null", "Null", "NULL":
		return true
	}
	return false
}

// scanQuoted reads a single- or double-quoted scalar at the start of s and
// returns its value and the bytes consumed. It must close on the line.
func scanQuoted(s string) (string, int, error) {
	q := s[0]
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch {
		case c == q && q == '\'':
			if i+1 < len(s) && s[i+1] == '\'' {
				b.WriteByte('\'')
				i++
				continue
			}
			return b.String(), i + 1, nil
		case c == q:
			return b.String(), i + 1, nil
		case c == '\\' && q == '"':
			if i+1 >= len(s) {
				return "", 0, fmt.Errorf("unclosed quote: multi-line quoted values are not supported")
			}
			i++
			n, err := unescape(&b, s[i:])
			if err != nil {
				return "", 0, err
			}
			i += n - 1
		default:
			b.WriteByte(c)
		}
	}
	return "", 0, fmt.Errorf("unclosed quote: multi-line quoted values are not supported")
}

// unescape writes the double-quoted escape at the start of s (after the
// backslash) and returns how many bytes it took.
func unescape(b *strings.Builder, s string) (int, error) {
	simple := map[byte]string{'0': "\x00", 'a': "\a", 'b': "\b", 't': "\t", '\t': "\t", 'n': "\n",
		'v': "\v", 'f': "\f", 'r': "\r", 'e': "\x1b", ' ': " ", '"': "\"", '/': "/", '\\': "\\",
		'N': "\u0085", '_': "\u00a0", 'L': "\u2028", 'P': "\u2029"}
	if r, ok := simple[s[0]]; ok {
		b.WriteString(r)
		return 1, nil
	}
	width := map[byte]int{'x': 2, 'u': 4, 'U': 8}[s[0]]
	if width == 0 {
		return 0, fmt.Errorf("unknown escape \\%c in a double-quoted value", s[0])
	}
	if len(s) < 1+width {
		return 0, fmt.Errorf("short escape \\%c in a double-quoted value", s[0])
	}
	v, err := strconv.ParseUint(s[1:1+width], 16, 32)
	if err != nil || (width > 2 && !utf8.ValidRune(rune(v))) {
		return 0, fmt.Errorf("bad escape \\%s in a double-quoted value", s[:1+width])
	}
	b.WriteRune(rune(v))
	return 1 + width, nil
}

// flowParser reads a flow collection that closes on its line.
type flowParser struct {
	p    *yParser
	s    string
	i    int
	line int
}

func (f *flowParser) skip() {
	for f.i < len(f.s) && (f.s[f.i] == ' ' || f.s[f.i] == '\t') {
		f.i++
	}
}

func (f *flowParser) unterminated() error {
	return f.p.errf(f.line, "unterminated flow collection: [ ] and { } must close on the same line")
}

func (f *flowParser) value(depth int) (*yNode, error) {
	if depth > maxFlowDepth {
		return nil, f.p.errf(f.line, "flow collections nested deeper than %d", maxFlowDepth)
	}
	f.skip()
	if f.i >= len(f.s) || f.s[f.i] == '#' {
		return nil, f.unterminated()
	}
	switch c := f.s[f.i]; c {
	case '[':
		return f.sequence(depth)
	case '{':
		return f.mapping(depth)
	case '\'', '"':
		v, n, err := scanQuoted(f.s[f.i:])
		if err != nil {
			return nil, f.p.errf(f.line, "%v", err)
		}
		f.i += n
		return &yNode{kind: yScalar, line: f.line, text: v}, nil
	default:
		if err := f.p.indicator(f.s[f.i:], f.line); err != nil {
			return nil, err
		}
		v := f.plain()
		if v == "" {
			return nil, f.p.errf(f.line, "empty entry in a flow collection")
		}
		if isNull(v) {
			return &yNode{kind: yNull, line: f.line}, nil
		}
		return &yNode{kind: yScalar, line: f.line, text: v}, nil
	}
}

// plain reads a plain scalar inside a flow collection: it ends at , [ ] { }
// at ": " and at " #".
func (f *flowParser) plain() string {
	start := f.i
	for f.i < len(f.s) {
		c := f.s[f.i]
		if strings.IndexByte(",[]{}", c) >= 0 {
			break
		}
		if c == ':' && (f.i+1 == len(f.s) || strings.IndexByte(" \t,[]{}", f.s[f.i+1]) >= 0) {
			break
		}
		if c == '#' && f.i > start && (f.s[f.i-1] == ' ' || f.s[f.i-1] == '\t') {
			break
		}
		f.i++
	}
	return strings.TrimRight(f.s[start:f.i], " \t")
}

func (f *flowParser) sequence(depth int) (*yNode, error) {
	n := &yNode{kind: ySeq, line: f.line}
	f.i++ // [
	for {
		f.skip()
		if f.i >= len(f.s) {
			return nil, f.unterminated()
		}
		if f.s[f.i] == ']' {
			f.i++
			return n, nil
		}
		item, err := f.value(depth + 1)
		if err != nil {
			return nil, err
		}
		n.items = append(n.items, item)
		f.skip()
		if f.i >= len(f.s) || f.s[f.i] == '#' {
			return nil, f.unterminated()
		}
		switch f.s[f.i] {
		case ',':
			f.i++
		case ']':
		case ':':
			return nil, f.p.errf(f.line, "key: value pairs inside [ ] are not supported; use { }")
		default:
			return nil, f.p.errf(f.line, "expected ',' or ']' in a flow sequence")
		}
	}
}

func (f *flowParser) mapping(depth int) (*yNode, error) {
	n := &yNode{kind: yMap, line: f.line}
	seen := map[string]bool{}
	f.i++ // {
	for {
		f.skip()
		if f.i >= len(f.s) || f.s[f.i] == '#' {
			return nil, f.unterminated()
		}
		if f.s[f.i] == '}' {
			f.i++
			return n, nil
		}
		k, err := f.value(depth + 1)
		if err != nil {
			return nil, err
		}
		if k.kind != yScalar {
			return nil, f.p.errf(f.line, "flow mapping keys must be scalars")
		}
		f.skip()
		val := &yNode{kind: yNull, line: f.line}
		if f.i < len(f.s) && f.s[f.i] == ':' {
			f.i++
			f.skip()
			if f.i < len(f.s) && f.s[f.i] != ',' && f.s[f.i] != '}' {
				if val, err = f.value(depth + 1); err != nil {
					return nil, err
				}
			}
		}
		if seen[k.text] {
			return nil, f.p.errf(f.line, "duplicate key %q", k.text)
		}
		seen[k.text] = true
		n.entries = append(n.entries, yEntry{key: k.text, line: f.line, val: val})
		f.skip()
		if f.i >= len(f.s) || f.s[f.i] == '#' {
			return nil, f.unterminated()
		}
		switch f.s[f.i] {
		case ',':
			f.i++
		case '}':
		default:
			return nil, f.p.errf(f.line, "expected ',' or '}' in a flow mapping")
		}
	}
}

// flattener turns the parsed tree into dotted keys.
type flattener struct {
	file  string
	kvs   []keyValue
	warns []Warning
	seen  map[string]int
}

func (f *flattener) errf(line int, format string, args ...any) error {
	return &SyntaxError{File: f.file, Line: line, Msg: fmt.Sprintf(format, args...)}
}

func (f *flattener) mapping(prefix string, n *yNode) error {
	for _, e := range n.entries {
		key := e.key
		if prefix != "" {
			key = prefix + "." + e.key
		}
		if e.val.kind == yMap {
			if err := f.mapping(key, e.val); err != nil {
				return err
			}
			continue
		}
		var value string
		switch e.val.kind {
		case yNull:
			f.warns = append(f.warns, Warning{File: f.file, Line: e.line,
				Message: fmt.Sprintf("key %s has no value; skipped", key)})
			continue
		case yScalar:
			value = e.val.text
		case ySeq:
			v, err := f.list(key, e.val)
			if err != nil {
				return err
			}
			value = v
		}
		if first, dup := f.seen[key]; dup {
			return f.errf(e.line, "key %s is set twice once nested keys are joined with dots (first at line %d)", key, first)
		}
		f.seen[key] = e.line
		f.kvs = append(f.kvs, keyValue{key: key, value: value, line: e.line})
	}
	return nil
}

// list renders a sequence as Flink's list value: elements joined with ';'
// (quoted where needed); a mapping element becomes Flink's "k1:v1,k2:v2".
func (f *flattener) list(key string, n *yNode) (string, error) {
	elems := make([]string, 0, len(n.items))
	for _, it := range n.items {
		switch it.kind {
		case yScalar:
			elems = append(elems, it.text)
		case yNull:
			return "", f.errf(it.line, "empty entry in the list %s", key)
		case yMap:
			parts := make([]string, 0, len(it.entries))
			for _, e := range it.entries {
				if e.val.kind != yScalar {
					return "", f.errf(e.line, "list %s: values of a mapping inside a list must be plain values", key)
				}
				parts = append(parts, quoteElem(e.key, ":,")+":"+quoteElem(e.val.text, ":,"))
			}
			elems = append(elems, strings.Join(parts, ","))
		case ySeq:
			return "", f.errf(it.line, "list %s: lists inside lists are not supported", key)
		}
	}
	return JoinList(elems), nil
}
