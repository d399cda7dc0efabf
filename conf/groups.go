package conf

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// EnvWorkerGroup names, in a worker container's environment, the worker
// group the container belongs to ("" or unset: the only group). The
// container-launcher reads the group's view of the configuration (Group).
const EnvWorkerGroup = "XRES_WORKER_GROUP"

// GroupPrefix is where a worker group's own keys live:
// xres.worker-group.<group>.<key> (WorkerGroupKey up to its placeholders).
var GroupPrefix = strings.TrimSuffix(WorkerGroupKey.For("", "").Key, ".")

// validGroupName: letters, digits, '-' and '_', at least one.
func validGroupName(n string) bool {
	if n == "" {
		return false
	}
	for _, r := range n {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

// WorkerGroupNames reads xres.worker-groups: nil when unset (one group,
// the plain keys). Every name must be non-empty, unique and made of
// letters, digits, '-' and '_'.
func (c *Config) WorkerGroupNames() ([]string, error) {
	if _, set := c.Get(WorkerGroups.Key); !set {
		return nil, nil
	}
	names, err := c.List(WorkerGroups)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, n := range names {
		switch {
		case !validGroupName(n):
			return nil, c.KeyErrorf(WorkerGroups.Key, "group name %q: only letters, digits, '-' and '_'", n)
		case seen[n]:
			return nil, c.KeyErrorf(WorkerGroups.Key, "group %s is listed twice", n)
		}
		seen[n] = true
	}
	if len(names) == 0 {
		return nil, c.KeyErrorf(WorkerGroups.Key, "lists no group")
	}
	return names, nil
}

// Group returns the configuration worker group name sees: a copy of c in
// which every xres.worker-group.<name>.<key> is also set as <key>, with
// its own origin, winning over the plain <key>. Group("") is c itself.
func (c *Config) Group(name string) *Config {
	if name == "" || c == nil {
		return c
	}
	out := &Config{path: c.path, entries: make(map[string]entry, len(c.entries)), warnings: c.warnings}
	for k, e := range c.entries {
		out.entries[k] = e
	}
	prefix := GroupPrefix + name + "."
	for k, e := range c.entries {
		if rest, ok := strings.CutPrefix(k, prefix); ok && rest != "" {
			out.entries[rest] = e
		}
	}
	return out
}

// GroupKey is key as set for group name alone (xres.worker-group.<name>.<key>).
func GroupKey(name, key string) string { return GroupPrefix + name + "." + key }

// SplitCommand splits a command line into words as a POSIX shell would,
// without any expansion: blanks separate words; 'single quotes' keep
// everything; "double quotes" keep everything but \" \\ \$ \` (escaped);
// a backslash outside quotes keeps the next character. An unclosed quote
// or a trailing backslash is an error (wrapping ErrInvalid) that says
// where (the column, from 1, of the quote or backslash) and never repeats
// the text: a command line may hold a password.
func SplitCommand(s string) ([]string, error) {
	var words []string
	var b strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case ch == ' ' || ch == '\t' || ch == '\n':
			if inWord {
				words = append(words, b.String())
				b.Reset()
				inWord = false
			}
		case ch == '\\':
			if i+1 >= len(s) {
				return nil, fmt.Errorf("%w: the command ends with a backslash (column %d)", ErrInvalid, column(s, i))
			}
			i++
			b.WriteByte(s[i])
			inWord = true
		case ch == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, fmt.Errorf("%w: the command has an unclosed single quote (opened at column %d)", ErrInvalid, column(s, i))
			}
			b.WriteString(s[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case ch == '"':
			open := i
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`", s[i+1]) >= 0 {
					i++
				}
				b.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, fmt.Errorf("%w: the command has an unclosed double quote (opened at column %d)", ErrInvalid, column(s, open))
			}
			inWord = true
		default:
			b.WriteByte(ch)
			inWord = true
		}
	}
	if inWord {
		words = append(words, b.String())
	}
	return words, nil
}

// column is the 1-based column, in characters, of byte offset i of s.
func column(s string, i int) int { return utf8.RuneCountInString(s[:i]) + 1 }
