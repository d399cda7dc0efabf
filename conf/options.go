package conf

import (
	"fmt"
	"regexp"
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

// placeholder is compiled on first use: the launcher, which starts once
// per worker, seldom needs it.
var placeholder = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`<[^<>]+>`) })

// IsPattern reports whether the key holds placeholders such as <name>.
func (o Option) IsPattern() bool { return placeholder().MatchString(o.Key) }

// For returns the option with its placeholders replaced by args, in
// order: ExternalResourceAmount.For("gpu").Key is
// "external-resource.gpu.amount". Missing args leave placeholders as they
// are.
func (o Option) For(args ...string) Option {
	i := 0
	o.Key = placeholder().ReplaceAllStringFunc(o.Key, func(m string) string {
		if i >= len(args) {
			return m
		}
		i++
		return args[i-1]
	})
	return o
}

// Matches reports whether key is an instance of the option's key (equal,
// or matching its pattern, each placeholder standing for one or more
// characters).
func (o Option) Matches(key string) bool {
	if !o.IsPattern() {
		return key == o.Key
	}
	parts := placeholder().Split(o.Key, -1)
	for i := range parts {
		parts[i] = regexp.QuoteMeta(parts[i])
	}
	re, err := regexp.Compile("^" + strings.Join(parts, ".+") + "$")
	return err == nil && re.MatchString(key)
}

var (
	registryMu sync.Mutex
	registry   = map[string]Option{}
	duplicates []string
)

// Register declares an option for the registry (Options) and returns it,
// for use as `var MyOption = conf.Register(conf.Option{...})`. Declaring a
// key twice is recorded and reported by CheckOptions.
func Register(o Option) Option {
	registryMu.Lock()
	defer registryMu.Unlock()
	if _, dup := registry[o.Key]; dup {
		duplicates = append(duplicates, o.Key)
	}
	registry[o.Key] = o
	return o
}

// Options lists every declared option, sorted by key.
func Options() []Option {
	registryMu.Lock()
	defer registryMu.Unlock()
	out := make([]Option, 0, len(registry))
	for _, o := range registry {
		out = append(out, o)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// LookupOption finds the declared option for key: an exact declaration, or
// else the pattern that matches it with the longest fixed text.
func LookupOption(key string) (Option, bool) {
	registryMu.Lock()
	o, ok := registry[key]
	registryMu.Unlock()
	if ok {
		return o, true
	}
	best, bestLen := Option{}, -1
	for _, o := range Options() {
		if o.IsPattern() && o.Matches(key) {
			if n := len(placeholder().ReplaceAllString(o.Key, "")); n > bestLen {
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
	registryMu.Lock()
	dups := append([]string(nil), duplicates...)
	registryMu.Unlock()
	var problems []string
	for _, k := range dups {
		problems = append(problems, "option "+k+" declared twice")
	}
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
