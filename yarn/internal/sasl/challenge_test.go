package sasl

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseDirectives(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want Directives
	}{
		{"hadoop challenge", `realm="default",nonce="abc+/=",qop="auth",charset=utf-8,algorithm=md5-sess`,
			Directives{"realm": {"default"}, "nonce": {"abc+/="}, "qop": {"auth"}, "charset": {"utf-8"}, "algorithm": {"md5-sess"}}},
		{"spaces and empty elements", ` realm = "a" ,, nonce=b , `, Directives{"realm": {"a"}, "nonce": {"b"}}},
		{"escaped quote", `realm="a\"b\\c"`, Directives{"realm": {`a"b\c`}}},
		{"repeated realm", `realm="a",realm="b"`, Directives{"realm": {"a", "b"}}},
		{"qop list", `qop="auth,auth-int"`, Directives{"qop": {"auth,auth-int"}}},
		{"upper-case key", `NONCE="x"`, Directives{"nonce": {"x"}}},
		{"empty", ``, Directives{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseDirectives([]byte(tt.in))
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestParseDirectivesErrors(t *testing.T) {
	for _, in := range []string{`=x`, `realm`, `realm="x`, `a=b c=d`} {
		t.Run(in, func(t *testing.T) {
			_, err := ParseDirectives([]byte(in))
			require.ErrorIs(t, err, ErrBadChallenge)
		})
	}
}

// FuzzParseDirectives checks the parser never panics and that whatever it
// accepts survives a re-encode.
func FuzzParseDirectives(f *testing.F) {
	seeds, err := filepath.Glob("testdata/challenges/*")
	require.NoError(f, err)
	for _, s := range seeds {
		b, err := os.ReadFile(s)
		require.NoError(f, err)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := ParseDirectives(b)
		if err != nil {
			return
		}
		var enc []byte
		for k, vs := range d {
			for _, v := range vs {
				enc = append(enc, []byte(k+"="+quote(v)+",")...)
			}
		}
		d2, err := ParseDirectives(enc)
		require.NoError(t, err)
		for k, vs := range d {
			require.ElementsMatch(t, vs, d2[k])
		}
	})
}
