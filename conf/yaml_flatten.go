package conf

import (
	"fmt"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// Flink flattens the parsed config.yaml (GlobalConfiguration.flatten):
// nested mapping keys are joined with dots; a list becomes one value. This
// file walks the library's node tree the same way, keeping each key's line.

// maxCollectionAliases bounds how often aliases of mappings and lists are
// expanded (snakeyaml's default limit, 50), against alias bombs.
const maxCollectionAliases = 50

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
			if readsAsOtherNumber(val) {
				f.warns = append(f.warns, Warning{File: f.file, Line: p.line,
					Message: fmt.Sprintf("key %s: Flink reads this unquoted value as a YAML 1.1 number "+
						"(octal 0…, hexadecimal 0x…, binary 0b… or base 60 with ':') and passes it on in decimal", key),
					Fix: "quote the value to keep it as written"})
			}
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
