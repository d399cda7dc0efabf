package conf

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// shellQuote single-quotes w for SplitCommand.
func shellQuote(w string) string { return "'" + strings.ReplaceAll(w, "'", `'\''`) + "'" }

var splitCommandErrRE = regexp.MustCompile(`^invalid configuration: the command (ends with a backslash|has an unclosed (single|double) quote \(opened at) `)

// FuzzSplitCommand: the worker command splitter never panics; its words,
// quoted again, split back to themselves; its errors are one of its fixed
// forms, which never repeat the command (it may hold a password).
func FuzzSplitCommand(f *testing.F) {
	for _, s := range []string{"python train.py --epochs 3", `bash -c 'echo $A; sleep 1'`, `echo "a \"b\" \$c" d\ e`,
		`a 'b`, `a "b`, `a\`, "tool --password S 'x", "  x  ''  ", "\t\n", `"\\"`, "é 'ü"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		words, err := SplitCommand(s)
		if err != nil {
			require.ErrorIs(t, err, ErrInvalid)
			require.Regexp(t, splitCommandErrRE, err.Error())
			return
		}
		quoted := make([]string, len(words))
		for i, w := range words {
			quoted[i] = shellQuote(w)
		}
		again, err := SplitCommand(strings.Join(quoted, " "))
		require.NoError(t, err)
		require.Equal(t, words, again)
	})
}

// FuzzParseMemorySize: Flink's memory syntax never panics, never gives a
// negative size, and a size written back in bytes reads the same.
func FuzzParseMemorySize(f *testing.F) {
	for _, s := range []string{"1024m", "2 g", "  10 kb ", "9223372036854775807", "8388608 tb", "1 zettabytes", "", "-1", "12345678901234567890b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseMemorySize(s)
		if err != nil {
			return
		}
		require.GreaterOrEqual(t, n, int64(0))
		back, err := ParseMemorySize(strconv.FormatInt(n, 10) + " b")
		require.NoError(t, err)
		require.Equal(t, n, back)
	})
}

// FuzzParseDuration: Flink's duration syntax never panics, never gives a
// negative duration, and one written back in nanoseconds reads the same.
func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"10 s", "10000", "2 min", "1 d", "106751 days", "9223372036854775807 ns", "5 µs", "1 fortnight", " 3 MS "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDuration(s)
		if err != nil {
			return
		}
		require.GreaterOrEqual(t, int64(d), int64(0))
		back, err := ParseDuration(strconv.FormatInt(int64(d), 10) + " ns")
		require.NoError(t, err)
		require.Equal(t, d, back)
	})
}

// FuzzParseDynamic: the -D splitter never panics; a key comes back
// trimmed, non-empty and without '='; its error never repeats what follows
// the key (a value may be a secret).
func FuzzParseDynamic(f *testing.F) {
	for _, s := range []string{"-Da=b", "a=b=c", " k = v ", "-D", "=v", "some.password", "-Dsome.password hunter2", "k=", "-D=x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		k, v, err := ParseDynamic(s)
		if err != nil {
			require.ErrorIs(t, err, ErrSyntax)
			if i := strings.IndexAny(s, "= :\t"); i >= 0 && len(s)-i > 8 {
				tail := s[i+1:]
				if strings.TrimSpace(tail) != "" && !strings.Contains(err.Error(), "…") {
					require.NotContains(t, err.Error(), tail)
				}
			}
			return
		}
		require.NotEmpty(t, k)
		require.Equal(t, strings.TrimSpace(k), k)
		require.NotContains(t, k, "=")
		require.Equal(t, strings.TrimSpace(v), v)
	})
}

// FuzzParsePorts: rest.bind-port's syntax never panics; what it accepts
// is at least one port, each 0 to 65535.
func FuzzParsePorts(f *testing.F) {
	for _, s := range []string{"0", "", "50100-50200", "50100,50105-50110", "70000", "1-0", "http", "-1", " 1 , 2 - 3 "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if strings.Count(s, "-") > 4 {
			return // many wide ranges only cost memory
		}
		ports, err := ParsePorts(s)
		if err != nil {
			require.ErrorIs(t, err, ErrInvalid)
			return
		}
		require.NotEmpty(t, ports)
		for _, p := range ports {
			require.True(t, p >= 0 && p <= 65535, p)
		}
	})
}
