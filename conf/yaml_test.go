package conf

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// nested parses yaml as config.yaml and returns its keys and values.
func nested(t *testing.T, yaml string) map[string]string {
	t.Helper()
	kvs, _, err := parseNested("config.yaml", []byte(yaml))
	require.NoError(t, err)
	got := map[string]string{}
	for _, kv := range kvs {
		got[kv.key] = kv.value
	}
	return got
}

func TestNestedValues(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want map[string]string
	}{
		{"empty file", "", map[string]string{}},
		{"only comments and document start", "# c\n---\n# d\n", map[string]string{}},
		{"document of only null", "~\n", map[string]string{}},
		{"flat keys", "a.b: x\nc: two words\n", map[string]string{"a.b": "x", "c": "two words"}},
		{"nested", "a:\n  b:\n    c: x\n  d: y\ne: z\n", map[string]string{"a.b.c": "x", "a.d": "y", "e": "z"}},
		{"whole file indented", "  a: x\n  b: y\n", map[string]string{"a": "x", "b": "y"}},
		{"single quotes", "a: 'it''s: # here'\n", map[string]string{"a": "it's: # here"}},
		{"double quotes", `a: "tab\there \"q\" \u00e9 \\"` + "\n", map[string]string{"a": "tab\there \"q\" é \\"}},
		{"quoted key", "'a b': x\n\"c\": y\n", map[string]string{"a b": "x", "c": "y"}},
		{"comment after value", "a: x # one\nb: x#y\n", map[string]string{"a": "x", "b": "x#y"}},
		{"colon without space in value", "a: http://host:8080/x\n", map[string]string{"a": "http://host:8080/x"}},
		{"flow sequence", "a: [x, 'y;z', \"w\", 1]\n", map[string]string{"a": "x;'y;z';w;1"}},
		{"empty flow sequence", "a: []\n", map[string]string{"a": ""}},
		{"block sequence indented", "a:\n  - x\n  - y\n", map[string]string{"a": "x;y"}},
		{"block sequence at key indent", "a:\n- x\n- y\nb: z\n", map[string]string{"a": "x;y", "b": "z"}},
		{"flow mapping flattens", "a: {b: x, c: 'two'}\n", map[string]string{"a.b": "x", "a.c": "two"}},
		{"nested flow mapping", "a: {b: {c: x}}\n", map[string]string{"a.b.c": "x"}},
		{"list of mappings", "a:\n  - k: v\n    n: 'x,y'\n  - {k: w}\n", map[string]string{"a": "'k:v,n:''x,y''';k:w"}},
		{"scalar on next line", "a:\n  value\nb: z\n", map[string]string{"a": "value", "b": "z"}},
		{"crlf line ends", "a: x\r\nb:\r\n  c: y\r\n", map[string]string{"a": "x", "b.c": "y"}},
		{"byte order mark", "\ufeffa: x\n", map[string]string{"a": "x"}},
		{"null values are skipped", "a: ~\nb:\nc: null\nd: x\n", map[string]string{"d": "x"}},
		{"tab inside a value", "a: x\ty\n", map[string]string{"a": "x\ty"}},
		{"sequence entry comment", "a:\n  - x # first\n  # between\n  - y\n", map[string]string{"a": "x;y"}},
		// Standard YAML the hand-written reader refused.
		{"multi-line plain value folds", "a: x\n  y\n", map[string]string{"a": "x y"}},
		{"flow collection over lines", "a: [x,\n  y]\n", map[string]string{"a": "x;y"}},
		{"pair in a flow sequence", "a: [x: y]\n", map[string]string{"a": "x:y"}},
		{"literal block scalar", "a: |\n  line 1\n  line 2\nb: z\n", map[string]string{"a": "line 1\nline 2\n", "b": "z"}},
		{"folded block scalar", "a: >-\n  one\n  two\n", map[string]string{"a": "one two"}},
		{"document end marker", "a: x\n...\n", map[string]string{"a": "x"}},
		{"YAML 1.1 directive", "%YAML 1.1\n---\na: x\n", map[string]string{"a": "x"}},
		{"complex scalar key", "? a\n: x\n", map[string]string{"a": "x"}},
		{"explicit string tag", "a: !!str 0x10\nb: !!int 0x10\n", map[string]string{"a": "0x10", "b": "16"}},
		{"anchor and alias of a value", "a: &gpu yarn.io/gpu\nb: *gpu\n", map[string]string{"a": "yarn.io/gpu", "b": "yarn.io/gpu"}},
		{"alias of a mapping", "base: &b\n  amount: 1\n  x: y\nexternal-resource:\n  gpu: *b\n",
			map[string]string{"base.amount": "1", "base.x": "y", "external-resource.gpu.amount": "1", "external-resource.gpu.x": "y"}},
		{"alias of a list", "a: &l [x, y]\nb: *l\n", map[string]string{"a": "x;y", "b": "x;y"}},
		{"merge key, own keys win", "d: &d {amount: 1, x: y}\ngpu:\n  <<: *d\n  amount: 2\n",
			map[string]string{"d.amount": "1", "d.x": "y", "gpu.amount": "2", "gpu.x": "y"}},
		{"merge of several, the first wins", "a: &a {k: 1}\nb: &b {k: 2, j: 3}\nc:\n  <<: [*a, *b]\n",
			map[string]string{"a.k": "1", "b.k": "2", "b.j": "3", "c.k": "1", "c.j": "3"}},
		// Scalars take the form Flink (snakeyaml, YAML 1.1) gives them.
		{"booleans", "a: yes\nb: Off\nc: TRUE\nd: 'yes'\ne: y\n", map[string]string{"a": "true", "b": "false", "c": "true", "d": "yes", "e": "y"}},
		{"integers", "a: 0x1F\nb: 017\nc: 1_000\nd: 1:30\ne: -0b101\nf: 0\ng: +7\nh: 08081\ni: '017'\nj: 99999999999999999999\n",
			map[string]string{"a": "31", "b": "15", "c": "1000", "d": "90", "e": "-5", "f": "0", "g": "7", "h": "08081", "i": "017", "j": "99999999999999999999"}},
		{"floats", "a: 1.50\nb: 1e3\nc: .5\nd: 1.0e10\ne: 0.0001\nf: -.inf\ng: .NaN\nh: 3.10\ni: 1_000.5\nj: 1:30.5\nk: '3.10'\n",
			map[string]string{"a": "1.5", "b": "1000.0", "c": "0.5", "d": "1.0E10", "e": "1.0E-4", "f": "-.inf", "g": ".NaN", "h": "3.1", "i": "1000.5", "j": "90.5", "k": "3.10"}},
		{"timestamps", "a: 2001-12-14\nb: 2001-12-14t21:59:43.10-05:00\nc: 2001-12-14 21:59:43.1 +5\nd: 2001-1-5\ne: '2001-12-14'\nf: 2001-12-14T01:02:03Z\n",
			map[string]string{"a": "2001-12-14T00:00:00Z", "b": "2001-12-15T02:59:43.100Z", "c": "2001-12-14T16:59:43.100Z", "d": "2001-1-5", "e": "2001-12-14", "f": "2001-12-14T01:02:03Z"}},
		{"memory sizes and durations stay text", "a: 1728m\nb: 10 s\nc: 2 gb\n", map[string]string{"a": "1728m", "b": "10 s", "c": "2 gb"}},
		{"scalar keys take Flink's form", "a:\n  1: x\n  yes: y\n", map[string]string{"a.1": "x", "a.true": "y"}},
		{"list elements take Flink's form", "a: [yes, 0x10, 1.50, 'on']\n", map[string]string{"a": "true;16;1.5;on"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, nested(t, tc.yaml))
		})
	}
}

func TestNestedErrors(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want string // full "file:line: ..." prefix and a part of the message
	}{
		{"tab indentation", "a:\n\tb: 1\n", "config.yaml:2: tab in indentation"},
		{"tab indentation deeper", "x: 1\ny:\n  z: 2\n  \tb: 1\n", "config.yaml:4: tab in indentation"},
		{"unknown alias", "a: 1\nb: *x\n", "config.yaml:1: unknown anchor 'x' referenced"},
		{"alias of its own mapping", "a: &x\n  b: *x\n", "config.yaml:2: alias *x refers to a mapping that contains it"},
		{"custom tag", "a: !secret 1\n", "config.yaml:1: tag !secret is not supported"},
		{"binary tag", "a: !!binary aGk=\n", "config.yaml:1: tag !!binary is not supported"},
		{"two documents", "a: 1\n---\nb: 2\n", "config.yaml:2: a second YAML document"},
		{"empty second document", "a: 1\n---\n", "config.yaml:2: a second YAML document"},
		{"YAML 1.2 directive", "%YAML 1.2\n---\na: 1\n", "config.yaml:1: found incompatible YAML document"},
		{"sequence as key", "? [a]\n: 1\n", "config.yaml:1: a key must be a plain value"},
		{"null key", "~: 1\n", "config.yaml:1: empty key"},
		{"empty quoted key", "a:\n  '': 1\n", "config.yaml:2: empty key"},
		{"duplicate key", "a: 1\nb: 2\na: 3\n", `config.yaml:3: duplicate key "a" (first at line 1)`},
		{"duplicate key as Flink reads it", "a:\n  yes: 1\n  true: 2\n", `config.yaml:3: duplicate key "true" (first at line 2)`},
		{"duplicate nested key", "a:\n  b: 1\n  c: 2\n  b: 3\n", `config.yaml:4: duplicate key "b" (first at line 2)`},
		{"collision once flattened", "a.b: 1\na:\n  b: 2\n", "config.yaml:3: key a.b is set twice"},
		{"unclosed single quote", "a: 'x\n", "config.yaml:1: found unexpected end of stream (a quote, [ or { is not closed)"},
		{"unclosed double quote", "a: \"x\\\"\n", "config.yaml:1: found unexpected end of stream"},
		{"unknown escape", `a: "\q"` + "\n", `config.yaml:1: found unknown escape character`},
		{"text after quote", "x: 0\na: 'x' y\n", `config.yaml:2: did not find expected key (bad indentation`},
		{"unterminated flow", "a: [x,\n  y\n", "config.yaml:2: did not find expected ',' or ']' (a [ is not closed)"},
		{"bad indentation", "a:\n    b: 1\n  c: 2\n", "config.yaml:3: did not find expected key"},
		{"mapping value in plain", "x: 0\na: b: c\n", "config.yaml:2: mapping values are not allowed in this context (':' followed by a space"},
		{"sequence at top", "- a\n- b\n", "config.yaml:1: the top level must be a mapping"},
		{"scalar at top", "just text\n", "config.yaml:1: the top level must be a mapping"},
		{"dash after key", "a: - x\n", "config.yaml:1: block sequence entries are not allowed"},
		{"nested lists", "a:\n  - - x\n", "config.yaml:2: list a: lists inside lists"},
		{"empty list entry", "a:\n  -\n  - x\n", "config.yaml:2: empty entry in the list a"},
		{"list in a mapping in a list", "a:\n  - k: [x]\n", "config.yaml:2: list a: values of a mapping inside a list must be plain values"},
		{"sequence among keys", "a: 1\n- x\n", "config.yaml:2: did not find expected key"},
		{"less indented line", "  a: 1\nb: 2\n", "config.yaml:2: did not find expected <document start> (bad indentation"},
		{"invalid utf-8", "a: 1\nb: \xff\n", "config.yaml:2: not valid UTF-8"},
		{"control character", "a: 1\nb: x\x01\n", "config.yaml:2: control character U+0001"},
		{"empty key", "x: 0\n: x\n", "config.yaml:2: did not find expected key"},
		{"merge of a scalar", "a:\n  <<: 1\n", "config.yaml:2: a merge key '<<' takes a mapping"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := parseNested("config.yaml", []byte(tc.yaml))
			require.Error(t, err)
			require.True(t, errors.Is(err, ErrSyntax), "%v", err)
			require.Contains(t, err.Error(), tc.want)
			require.True(t, strings.HasPrefix(err.Error(), "config.yaml:"), err.Error())
		})
	}
}

// An alias bomb is refused after snakeyaml's 50 aliases of collections
// instead of expanding 2^k keys.
func TestNestedAliasBomb(t *testing.T) {
	var b strings.Builder
	b.WriteString("l0: &l0 {a: x, b: y}\n")
	for i := 1; i <= 40; i++ {
		p := i - 1
		b.WriteString("l" + strconv.Itoa(i) + ": &l" + strconv.Itoa(i) + " {a: *l" + strconv.Itoa(p) + ", b: *l" + strconv.Itoa(p) + "}\n")
	}
	_, _, err := parseNested("config.yaml", []byte(b.String()))
	require.ErrorIs(t, err, ErrSyntax)
	require.Contains(t, err.Error(), "more than 50 aliases")
}

// An unquoted number Flink rewrites in another base is read as Flink reads
// it, with a warning naming the key and never the value.
func TestNestedNumberRewriteWarns(t *testing.T) {
	kvs, warns, err := parseNested("config.yaml", []byte("a:\n  vendor: 0x10ee\n  b: 017\nc: 1:30\nd: 17\ne: '0x10ee'\nf: 1.50\ng: 1_000\n"))
	require.NoError(t, err)
	require.Len(t, kvs, 7)
	require.Equal(t, "4334", kvs[0].value)
	var lines []int
	for _, w := range warns {
		lines = append(lines, w.Line)
		require.NotContains(t, w.String(), "10ee")
		require.Equal(t, "quote the value to keep it as written", w.Fix)
	}
	require.Equal(t, []int{2, 3, 4}, lines)
	require.Contains(t, warns[0].String(), "config.yaml:2: key a.vendor: Flink reads this unquoted value as a YAML 1.1 number")
}

func TestLoadNestedErrorNamesPath(t *testing.T) {
	p := writeFile(t, t.TempDir(), "config.yaml", "external-resources: gpu\nexternal-resource:\n  gpu:\n\tamount: 1\n")
	_, err := Load(p, nil)
	require.ErrorIs(t, err, ErrSyntax)
	require.Contains(t, err.Error(), p+":4: tab in indentation")
}
