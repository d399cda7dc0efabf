package contract

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestReportSignature(t *testing.T) {
	secret := []byte("0123456789abcdef0123456789abcdef")
	body := []byte(`{"container":"container_1_0001_01_000002","resources":{"gpu":[{"index":"0"}]}}`)
	sig := SignReport(secret, body)
	require.True(t, strings.HasPrefix(sig, ReportSignaturePrefix), sig)
	require.Len(t, sig, len(ReportSignaturePrefix)+64)
	require.True(t, VerifyReport(secret, body, sig))
	require.NotContains(t, sig, string(secret))

	other := []byte(`{"container":"container_1_0001_01_000003","resources":{"gpu":[{"index":"0"}]}}`)
	for name, tc := range map[string]struct {
		secret, body []byte
		sig          string
	}{
		"no signature":                  {secret, body, ""},
		"another container's signature": {secret, other, sig},
		"another secret":                {[]byte("another secret, 32 bytes long.."), body, sig},
		"no secret on the AM's side":    {nil, body, SignReport(nil, body)},
		"not hex":                       {secret, body, ReportSignaturePrefix + "zz"},
		"no prefix":                     {secret, body, strings.TrimPrefix(sig, ReportSignaturePrefix)},
		"truncated":                     {secret, body, sig[:len(sig)-2]},
	} {
		t.Run(name, func(t *testing.T) {
			require.False(t, VerifyReport(tc.secret, tc.body, tc.sig))
		})
	}
}

// Hand-built token storage files; yarn/security's tests check the same
// against files it writes itself.
func TestReportSecretFromCredentials(t *testing.T) {
	text := func(s string) string { return string(rune(len(s))) + s }
	secret := strings.Repeat("s", 32)
	tests := []struct {
		name, file string
		want       string
		err        string
	}{
		{name: "writable, token and secrets", file: "HDTS\x00\x01" + text("a") + text("id") + text("pw") + text("KIND") + text("svc") +
			"\x02" + text("other") + text("x") + text(ReportSecretAlias) + text(secret), want: secret},
		{name: "writable, no secrets", file: "HDTS\x00\x00\x00"},
		{name: "protobuf", file: "HDTS\x01" + proto1(t, secret), want: secret},
		{name: "no magic", file: "HDTX\x00\x00\x00", err: "no HDTS magic"},
		{name: "unknown version", file: "HDTS\x07", err: "unknown format version 7"},
		{name: "writable, truncated", file: "HDTS\x00\x00\x01" + text(ReportSecretAlias) + "\x20abc", err: "out of range"},
		{name: "protobuf, bad length", file: "HDTS\x01\x7f\x0a", err: "bad protobuf length"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ReportSecret([]byte(tc.file))
			if tc.err != "" {
				require.ErrorIs(t, err, ErrCredentials)
				require.ErrorContains(t, err, tc.err)
				require.NotContains(t, err.Error(), secret)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, string(got))
		})
	}
}

// proto1 is a length-delimited CredentialsProto with one token and the
// report secret: tokens = 1 {alias = 1, token = 2 {…}}, secrets = 2
// {alias = 1, secret = 3}.
func proto1(t *testing.T, secret string) string {
	t.Helper()
	ld := func(num byte, s string) string { return string(rune(num<<3|2)) + string(rune(len(s))) + s }
	tok := ld(1, "a") + ld(2, ld(1, "id")+ld(2, "pw")+ld(3, "KIND")+ld(4, "svc"))
	sec := ld(1, ReportSecretAlias) + ld(3, secret)
	msg := ld(1, tok) + ld(2, sec)
	require.Less(t, len(msg), 128)
	return string(rune(len(msg))) + msg
}
