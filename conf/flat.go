package conf

import (
	"bufio"
	"bytes"
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
// A later line overrides an earlier one with the same key. Values are never
// put in warnings: a skipped line may hold a secret.
func parseFlat(name string, data []byte) ([]keyValue, []Warning) {
	var kvs []keyValue
	var warns []Warning
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	line := 0
	for sc.Scan() {
		line++
		text := sc.Text()
		if line == 1 {
			text = strings.TrimPrefix(text, "\ufeff")
		}
		text, _, _ = strings.Cut(text, "#")
		text = strings.TrimSpace(text)
		if text == "" {
			continue
		}
		k, v, ok := strings.Cut(text, ": ")
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
		kvs = append(kvs, keyValue{key: k, value: v, line: line})
	}
	if err := sc.Err(); err != nil {
		warns = append(warns, Warning{File: name, Line: line + 1, Message: "stopped reading: " + err.Error()})
	}
	return kvs, warns
}
