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
func parseFlat(name string, data []byte) ([]keyValue, []Warning) {
	var kvs []keyValue
	var warns []Warning
	seen := map[string]int{} // key -> line of its last setting
	text := strings.TrimPrefix(string(data), "\ufeff")
	for i, raw := range strings.Split(text, "\n") {
		line := i + 1
		raw, _, _ = strings.Cut(raw, "#")
		raw = strings.TrimSpace(raw)
		if raw == "" {
			continue
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
	return kvs, warns
}
