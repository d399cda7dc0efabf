package conf

import (
	"fmt"
	"strings"
)

// parseFlat reads Flink's legacy flink-conf.yaml the way Flink's
// GlobalConfiguration does, line by line:
//
//	jobmanager.rpc.port   :  6123   # a comment
//	└──── key ─────┘ └": "┘ └val┘ └ cut at the first '#' ┘
//
// The part before the first '#' is trimmed; blank results are skipped
// silently. The rest is split at the first ": " and both halves trimmed. A
// line without ": " or with an empty key or value is skipped with a warning.
// A later line overrides an earlier one with the same key, as in Flink, with
// a warning naming both lines (an error in strict mode, like every loader
// warning). Values are never put in warnings: a skipped line may hold a
// secret.
//
// Nested YAML (a "key:" line with more indented lines below it, Flink
// 1.19's format) is an error naming the file and the line (a
// *SyntaxError): Flink would skip the "key:" line and read each indented
// line as a key of its own ("    amount: 1" sets amount), so the keys
// under it would be lost without a word but warnings (a worker without its
// GPU).
func parseFlat(name string, data []byte) ([]keyValue, []Warning, error) {
	var kvs []keyValue
	var warns []Warning
	seen := map[string]int{} // key -> line of its last setting
	// opener is the last "key:" line (no value) and its indentation: the
	// head of a nested block when the next line is more indented.
	opener, openerIndent, openerKey := 0, 0, ""
	text := strings.TrimPrefix(string(data), "\ufeff")
	for i, raw := range strings.Split(text, "\n") {
		line := i + 1
		raw, _, _ = strings.Cut(raw, "#")
		indent := len(raw) - len(strings.TrimLeft(raw, " \t"))
		raw = strings.TrimSpace(raw)
		if raw == "" {
			continue
		}
		if opener > 0 && indent > openerIndent {
			below, _, _ := strings.Cut(raw, ":")
			return nil, nil, &SyntaxError{File: name, Line: opener, Msg: fmt.Sprintf(
				"nested YAML: %q opens a block (line %d, %q, is indented below it), but %s is Flink's legacy flat format, "+
					"read line by line: Flink skips line %d and reads each indented line as a key of its own, so the keys of the block are lost; "+
					"write each key whole on one line (%s.%s: …), or use Flink 1.19's %s, which is read as YAML",
				openerKey+":", line, strings.TrimSpace(below), FileFlat, opener, openerKey, strings.TrimSpace(strings.TrimPrefix(below, "- ")), FileNested)}
		}
		opener = 0
		if k, ok := strings.CutSuffix(raw, ":"); ok && !strings.Contains(raw, ": ") {
			opener, openerIndent, openerKey = line, indent, strings.TrimSpace(k)
		}
		k, v, ok := strings.Cut(raw, ": ")
		if !ok {
			warns = append(warns, Warning{File: name, Line: line,
				Message: `no ": " between key and value; Flink skips this line`})
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if k == "" || v == "" {
			what := "empty value"
			if k == "" {
				what = "empty key"
			}
			warns = append(warns, Warning{File: name, Line: line,
				Message: what + "; Flink skips this line"})
			continue
		}
		if prev, dup := seen[k]; dup {
			warns = append(warns, Warning{File: name, Line: line,
				Message: fmt.Sprintf("key %s is set again (first on line %d); Flink keeps the last, line %d", k, prev, line),
				Fix:     fmt.Sprintf("remove line %d or line %d", prev, line)})
		}
		seen[k] = line
		kvs = append(kvs, keyValue{key: k, value: v, line: line})
	}
	return kvs, warns, nil
}
