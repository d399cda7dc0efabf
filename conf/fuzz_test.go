package conf

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// addFiles seeds a fuzz target with the configuration fixtures.
func addFiles(f *testing.F) {
	for _, p := range []string{"flink-conf.yaml", filepath.Join("nested", "config.yaml")} {
		data, err := os.ReadFile(filepath.Join("testdata", p))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
}

// FuzzNested: the YAML reader never panics, and what it accepts is sane:
// keys are non-empty, unique, and carry a line of the input.
func FuzzNested(f *testing.F) {
	addFiles(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		kvs, warns, err := parseNested("config.yaml", data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "config.yaml:") {
				t.Fatalf("error without file:line: %v", err)
			}
			return
		}
		lines := yamlLines(data)
		seen := map[string]bool{}
		for _, kv := range kvs {
			if kv.key == "" || seen[kv.key] {
				t.Fatalf("empty or repeated key %q", kv.key)
			}
			seen[kv.key] = true
			if kv.line < 1 || kv.line > lines {
				t.Fatalf("key %q at line %d of %d", kv.key, kv.line, lines)
			}
			if !utf8.ValidString(kv.value) && utf8.Valid(data) {
				t.Fatalf("key %q: invalid UTF-8 value from valid input", kv.key)
			}
		}
		for _, w := range warns {
			if w.Line < 1 || w.Line > lines {
				t.Fatalf("warning at line %d of %d", w.Line, lines)
			}
		}
	})
}

// yamlLines counts data's lines as YAML does: "\r\n", a lone "\r", "\n",
// and (YAML 1.1) U+0085, U+2028, U+2029 each end one.
func yamlLines(data []byte) int {
	s := strings.ReplaceAll(string(data), "\r\n", "\n")
	n := 1 + strings.Count(s, "\n") + strings.Count(s, "\r")
	for _, b := range []string{"\u0085", "\u2028", "\u2029"} {
		n += strings.Count(s, b)
	}
	return n
}

// FuzzFlat: the flat loader never panics; it keeps only trimmed, non-empty
// keys and values (and fails only on nested YAML).
func FuzzFlat(f *testing.F) {
	addFiles(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		kvs, _, _ := parseFlat("flink-conf.yaml", data)
		for _, kv := range kvs {
			if kv.key == "" || kv.value == "" || strings.TrimSpace(kv.key) != kv.key ||
				strings.TrimSpace(kv.value) != kv.value || strings.Contains(kv.value, "#") {
				t.Fatalf("bad pair %q=%q", kv.key, kv.value)
			}
		}
	})
}

// FuzzSplitList: the list splitter never panics, and JoinList is its
// inverse on whatever it returns.
func FuzzSplitList(f *testing.F) {
	for _, s := range []string{"gpu;fpga", " a ; 'b;c' ;", `"x""y";;z`, "a'b", "'open"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		elems, err := SplitList(s)
		if err != nil {
			return
		}
		again, err := SplitList(JoinList(elems))
		if err != nil {
			t.Fatalf("JoinList(%q) does not split: %v", elems, err)
		}
		if strings.Join(again, "\x00") != strings.Join(elems, "\x00") || len(again) != len(elems) {
			t.Fatalf("round trip %q → %q → %q", elems, JoinList(elems), again)
		}
	})
}
