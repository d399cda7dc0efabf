package conf

import (
	"errors"
	"flag"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRedactValue(t *testing.T) {
	for _, tc := range []struct{ key, value, want string }{
		{"s3.secret-key", "hunter2", Hidden},
		{"security.ssl.keystore-password", "", Hidden},
		{"external-resource.gpu.amount", "2", "2"},
		{"external-resource.gpu.param.discovery-script.args", "--enable-coordination-mode  --coordination-file /tmp/f",
			"--enable-coordination-mode  --coordination-file /tmp/f"}, // nothing to hide: unchanged, spacing kept
		{"external-resource.gpu.param.discovery-script.args", "--password hunter2  -p hunter3 -phunter4 --api-key=hunter5",
			"--password (hidden)  -p (hidden) -p(hidden) --api-key=(hidden)"},
		{"env.java.opts", "-Xmx1g -Djavax.net.ssl.trustStorePassword=hunter2", "-Xmx1g -Djavax.net.ssl.trustStorePassword=(hidden)"},
		{"xres.worker-group.a.command", "sync --from s3://id:hunter2@bucket/x", "sync --from s3://id:(hidden)@bucket/x"},
	} {
		t.Run(tc.key+" "+tc.value, func(t *testing.T) {
			require.Equal(t, tc.want, RedactValue(tc.key, tc.value))
		})
	}
}

func TestRedactOutput(t *testing.T) {
	args := []string{"1", "--token", "hunter2", "-phunter3", "--url=https://u:hunter4@h/", "-p", "ab"}
	out := "usage: script 1 --token hunter2 -phunter3; token hunter2 rejected by https://u:hunter4@h/ (ab)"
	got := RedactOutput(out, args)
	for _, s := range []string{"hunter2", "hunter3", "hunter4"} {
		require.NotContains(t, got, s)
	}
	require.Contains(t, got, "(ab)", "a secret under 3 bytes is not hunted through the text")
	require.Contains(t, got, "usage: script 1 --token (hidden)")
}

// A malformed -D names its key alone: the part before '=', ':' or a space.
func TestParseDynamicNamesTheKeyAlone(t *testing.T) {
	for _, arg := range []string{"k.password:hunter2", "k.password hunter2", "k.password\thunter2", "k.password"} {
		t.Run(arg, func(t *testing.T) {
			_, _, err := ParseDynamic(arg)
			require.ErrorIs(t, err, ErrSyntax)
			require.Contains(t, err.Error(), `"k.password`)
			require.NotContains(t, err.Error(), "hunter2")
		})
	}
	require.Equal(t, strings.Repeat("é", 20)+"…", redactArg(strings.Repeat("é", 30)), "cut at 40 bytes, on a rune")
}

// The flag package repeats a rejected value ("invalid value %q for flag
// -D"); ParseError reports the DynamicFlag's own error instead.
func TestDynamicFlagParseError(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var d DynamicFlag
	fs.Var(&d, "D", "")
	fs.Bool("v", false, "")
	err := ParseError(fs, fs.Parse([]string{"-D", "a=1", "-D", "k.secret:hunter2", "-v"}))
	require.ErrorIs(t, err, ErrSyntax)
	require.Contains(t, err.Error(), `"k.secret…"`)
	require.NotContains(t, err.Error(), "hunter2")
	require.Equal(t, []string{"a=1"}, d.Values)

	fs2 := flag.NewFlagSet("y", flag.ContinueOnError)
	fs2.SetOutput(io.Discard)
	fs2.Var(&DynamicFlag{}, "D", "")
	other := fs2.Parse([]string{"--nope"})
	require.Equal(t, other, ParseError(fs2, other))
	require.NoError(t, ParseError(fs2, nil))
	require.False(t, errors.Is(ParseError(fs2, other), ErrSyntax))
}

// Issue 41: what a failing program prints about its own credentials
// ("token=abc" on stderr) was shown as it was. A name=value word, or
// "name:" and the next word, whose name is secret is hidden; other
// assignments and paths are not.
func TestRedactOutputHidesSecretAssignments(t *testing.T) {
	out := "auth failed: token=abc123 password=pw-1 client_secret=s3 key=K3Y AWS_SECRET_ACCESS_KEY=aws1 apiKey=ak1 Token: tk1 " +
		"gpu=0 mode=exclusive /a/b=c url=https://h/?x=1 yarn.io/gpu=2"
	got := RedactOutput(out, nil)
	for _, s := range []string{"abc123", "pw-1", "s3", "K3Y", "aws1", "ak1", "tk1"} {
		require.NotContains(t, got, s)
	}
	for _, s := range []string{"token=(hidden)", "key=(hidden)", "Token: (hidden)", "gpu=0", "mode=exclusive", "/a/b=c", "yarn.io/gpu=2"} {
		require.Contains(t, got, s)
	}
}
