package conf

import (
	"bytes"
	"fmt"
	"strings"
)

// Markers around the generated table in docs/configuration.md.
const (
	TableBegin = "<!-- BEGIN CONFIG TABLE -->"
	TableEnd   = "<!-- END CONFIG TABLE -->"
)

// MarkdownTable renders the declared options as docs/configuration.md's
// reference: one row per option, sorted by key.
func MarkdownTable() string {
	var b strings.Builder
	b.WriteString("| Key | Type | Default | Description |\n|---|---|---|---|\n")
	for _, o := range Options() {
		def := "(none)"
		if o.Default != "" {
			def = "`" + o.Default + "`"
		}
		desc := strings.ReplaceAll(o.Description, "|", `\|`)
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", o.Key, o.Type, def, desc)
	}
	return b.String()
}

// ReplaceTable returns doc with the text between TableBegin and TableEnd
// replaced by MarkdownTable. Both markers must be present, in order.
func ReplaceTable(doc []byte) ([]byte, error) {
	i := bytes.Index(doc, []byte(TableBegin))
	j := bytes.Index(doc, []byte(TableEnd))
	if i < 0 || j < i {
		return nil, fmt.Errorf("replace config table: markers %s and %s not found in order", TableBegin, TableEnd)
	}
	var out bytes.Buffer
	out.Write(doc[:i+len(TableBegin)])
	out.WriteString("\n")
	out.WriteString(MarkdownTable())
	out.Write(doc[j:])
	return out.Bytes(), nil
}
