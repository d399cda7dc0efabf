package conf

import (
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// The placeholder scanner replaced a regular expression; these tests keep
// it equal to that expression's meaning.
var placeholderRE = regexp.MustCompile(`<[^<>]+>`)

// regexpMatches is Option.Matches as it was written with regexp.
func regexpMatches(pattern, key string) bool {
	if !placeholderRE.MatchString(pattern) {
		return key == pattern
	}
	parts := placeholderRE.Split(pattern, -1)
	for i := range parts {
		parts[i] = regexp.QuoteMeta(parts[i])
	}
	return regexp.MustCompile("^" + strings.Join(parts, ".+") + "$").MatchString(key)
}

func regexpFor(pattern string, args ...string) string {
	i := 0
	return placeholderRE.ReplaceAllStringFunc(pattern, func(m string) string {
		if i >= len(args) {
			return m
		}
		i++
		return args[i-1]
	})
}

func TestPlaceholderMatchingAsRegexp(t *testing.T) {
	patterns := []string{
		"external-resource.<name>.amount", "external-resource.<name>.param.<param>", "xres.strict",
		"<a>", "<a><b>", "x.<a>.<b>.y", "a<>b.<c>", "<<a>>", "a<b<c>d", "<a>.<a>", "x<a>x<b>x",
	}
	keys := []string{
		"external-resource.gpu.amount", "external-resource.gpu.a100.amount", "external-resource..amount",
		"external-resource.gpu.param.vendor", "external-resource.gpu.param.", "xres.strict", "xres.strictly",
		"a", "ab", "", "x.1.2.y", "x..y", "x.1..y", "a<>b.c", "a<>b.", "<a>", "ac>d", "a<bxd", "1.2", ".",
		"xaxbx", "xxxxx", "xax", "xaxbxx", "external-resource.g\npu.amount",
	}
	for _, p := range patterns {
		for _, k := range keys {
			require.Equal(t, regexpMatches(p, k), Option{Key: p}.Matches(k), "pattern %q key %q", p, k)
		}
		require.Equal(t, placeholderRE.MatchString(p), Option{Key: p}.IsPattern(), p)
		for _, args := range [][]string{nil, {"gpu"}, {"gpu", "vendor"}, {"a", "b", "c"}} {
			require.Equal(t, regexpFor(p, args...), Option{Key: p}.For(args...).Key, "pattern %q args %q", p, args)
		}
	}
}

func FuzzPlaceholderMatching(f *testing.F) {
	f.Add("external-resource.<name>.amount", "external-resource.gpu.amount", "gpu")
	f.Add("x<a>x<b>x", "xaxbxx", "q")
	f.Add("a<b<c>d", "a<bxd", "")
	f.Fuzz(func(t *testing.T, pattern, key, arg string) {
		if !utf8.ValidString(pattern) {
			return // declared keys are text; regexp refuses invalid UTF-8
		}
		o := Option{Key: pattern}
		if got, want := o.Matches(key), regexpMatches(pattern, key); got != want {
			t.Fatalf("Matches(%q, %q) = %v, regexp says %v", pattern, key, got, want)
		}
		if got, want := o.For(arg).Key, regexpFor(pattern, arg); got != want {
			t.Fatalf("For(%q, %q) = %q, regexp says %q", pattern, arg, got, want)
		}
	})
}
