package conf

import (
	"fmt"
	"sort"
	"strings"
	"sync"
)

// Type is the type of an option's value.
type Type int

// Option value types, named in the config reference as Flink names them.
const (
	TypeString Type = iota
	TypeInt
	TypeInt64
	TypeFloat
	TypeBool
	TypeDuration
	TypeMemorySize
	TypeList
)

// String names the type as Flink's documentation does.
func (t Type) String() string {
	switch t {
	case TypeString:
		return "String"
	case TypeInt:
		return "Integer"
	case TypeInt64:
		return "Long"
	case TypeFloat:
		return "Double"
	case TypeBool:
		return "Boolean"
	case TypeDuration:
		return "Duration"
	case TypeMemorySize:
		return "MemorySize"
	case TypeList:
		return "List<String>"
	}
	return fmt.Sprintf("Type(%d)", int(t))
}

// Option declares one configuration key. A key may be a pattern with
// placeholders in angle brackets (external-resource.<name>.amount); For
// fills them in.
type Option struct {
	Key         string
	Type        Type
	Default     string // in the option's own syntax; "" for none
	Description string
}

// placeholders returns the spans [start, end) of the key's placeholders:
// text in angle brackets, non-empty and without angle brackets inside
// (external-resource.<name>.amount has one). Scanned by hand, not with a
// regular expression: the regexp package's tables cost every launcher
// start (it starts once per worker) time at initialisation.
func placeholders(key string) [][2]int {
	var spans [][2]int
	for i := 0; i < len(key); i++ {
		if key[i] != '<' {
			continue
		}
		j := i + 1
		for j < len(key) && key[j] != '<' && key[j] != '>' {
			j++
		}
		if j < len(key) && key[j] == '>' && j > i+1 {
			spans = append(spans, [2]int{i, j + 1})
			i = j
		}
	}
	return spans
}

// fixedParts is the key's text around its placeholders: one more part than
// there are placeholders.
func fixedParts(key string, spans [][2]int) []string {
	parts := make([]string, 0, len(spans)+1)
	at := 0
	for _, sp := range spans {
		parts = append(parts, key[at:sp[0]])
		at = sp[1]
	}
	return append(parts, key[at:])
}

// IsPattern reports whether the key holds placeholders such as <name>.
func (o Option) IsPattern() bool { return len(placeholders(o.Key)) > 0 }

// For returns the option with its placeholders replaced by args, in
// order: ExternalResourceAmount.For("gpu").Key is
// "external-resource.gpu.amount". Missing args leave placeholders as they
// are.
func (o Option) For(args ...string) Option {
	spans := placeholders(o.Key)
	if len(spans) == 0 || len(args) == 0 {
		return o
	}
	var b strings.Builder
	at := 0
	for i, sp := range spans {
		if i >= len(args) {
			break
		}
		b.WriteString(o.Key[at:sp[0]])
		b.WriteString(args[i])
		at = sp[1]
	}
	b.WriteString(o.Key[at:])
	o.Key = b.String()
	return o
}

// Matches reports whether key is an instance of the option's key (equal,
// or matching its pattern, each placeholder standing for one or more
// characters other than a newline).
func (o Option) Matches(key string) bool {
	spans := placeholders(o.Key)
	if len(spans) == 0 {
		return key == o.Key
	}
	if strings.ContainsRune(key, '\n') {
		return false // no fixed part holds one, and no placeholder stands for one
	}
	parts := fixedParts(o.Key, spans)
	if !strings.HasPrefix(key, parts[0]) {
		return false
	}
	// Each inner part at its first place after at least one character:
	// a later place would only leave less for the parts after it.
	at := len(parts[0])
	last := len(parts) - 1
	for _, p := range parts[1:last] {
		if at+1 > len(key) {
			return false
		}
		i := strings.Index(key[at+1:], p)
		if i < 0 {
			return false
		}
		at += 1 + i + len(p)
	}
	return len(key)-len(parts[last]) >= at+1 && strings.HasSuffix(key, parts[last])
}

// The registry: Register only records (it runs in package initialisation,
// on every launcher start); the index by key is built on first lookup.
var (
	registryMu sync.Mutex
	declared   = make([]Option, 0, 128) // in declaration order, duplicates too
	byKey      map[string]Option        // the last declaration of each key
	indexed    int                      // how many of declared byKey holds
)

// Register declares an option for the registry (Options) and returns it,
// for use as `var MyOption = conf.Register(conf.Option{...})`. Declaring a
// key twice is reported by CheckOptions.
func Register(o Option) Option {
	registryMu.Lock()
	declared = append(declared, o)
	registryMu.Unlock()
	return o
}

// index returns the registry by key, brought up to date; registryMu held.
func index() map[string]Option {
	if byKey == nil {
		byKey = make(map[string]Option, len(declared))
	}
	for _, o := range declared[indexed:] {
		byKey[o.Key] = o
	}
	indexed = len(declared)
	return byKey
}

// Options lists every declared option, sorted by key.
func Options() []Option {
	registryMu.Lock()
	defer registryMu.Unlock()
	idx := index()
	out := make([]Option, 0, len(idx))
	for _, o := range idx {
		out = append(out, o)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// LookupOption finds the declared option for key: an exact declaration, or
// else the pattern that matches it with the longest fixed text.
func LookupOption(key string) (Option, bool) {
	registryMu.Lock()
	o, ok := index()[key]
	registryMu.Unlock()
	if ok {
		return o, true
	}
	best, bestLen := Option{}, -1
	for _, o := range Options() {
		if o.IsPattern() && o.Matches(key) {
			if n := len(strings.Join(fixedParts(o.Key, placeholders(o.Key)), "")); n > bestLen {
				best, bestLen = o, n
			}
		}
	}
	return best, bestLen >= 0
}

// CheckOptions reports declarations that break the registry's rules: a key
// declared twice, an empty key or description, a default that does not
// parse as the option's type.
func CheckOptions() error {
	var problems []string
	registryMu.Lock()
	seen := make(map[string]bool, len(declared))
	for _, o := range declared {
		if seen[o.Key] {
			problems = append(problems, "option "+o.Key+" declared twice")
		}
		seen[o.Key] = true
	}
	registryMu.Unlock()
	for _, o := range Options() {
		if o.Key == "" || o.Description == "" {
			problems = append(problems, fmt.Sprintf("option %q needs a key and a description", o.Key))
		}
		if bareAngle(o.Description) {
			problems = append(problems, fmt.Sprintf("option %q: put <placeholders> in the description in backticks (markdown)", o.Key))
		}
		if o.Default == "" {
			continue
		}
		c := New()
		var err error
		switch o.Type {
		case TypeInt:
			_, err = c.Int(o)
		case TypeInt64:
			_, err = c.Int64(o)
		case TypeFloat:
			_, err = c.Float(o)
		case TypeBool:
			_, err = c.Bool(o)
		case TypeDuration:
			_, err = c.Duration(o)
		case TypeMemorySize:
			_, err = c.MemorySize(o)
		case TypeList:
			_, err = c.List(o)
		}
		if err != nil {
			problems = append(problems, err.Error())
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("check options: %s", strings.Join(problems, "; "))
	}
	return nil
}

// bareAngle reports a '<' outside `code spans`, which markdown would take
// for an HTML tag.
func bareAngle(s string) bool {
	for i, part := range strings.Split(s, "`") {
		if i%2 == 0 && strings.ContainsAny(part, "<>") {
			return true
		}
	}
	return false
}
