package security

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/resources/contract"
)

func TestReadTokenFileFixtures(t *testing.T) {
	t.Run("v0 writable", func(t *testing.T) {
		c, err := ReadTokenFile("testdata/v0-two-tokens-one-secret.hdts")
		require.NoError(t, err)
		require.Equal(t, []string{"rm1:8030,rm2:8030", "ha-hdfs:cluster"}, c.Aliases())
		amrm := c.Select(KindAMRMToken, "rm2:8030")
		require.NotNil(t, amrm, "HA service lists match any element")
		require.Len(t, amrm.Identifier, 200)
		require.Equal(t, byte(199), amrm.Identifier[199])
		require.Equal(t, []byte("pw-amrm"), amrm.Password)
		require.Nil(t, c.Select(KindAMRMToken, "rm3:8030"))
		require.Equal(t, "ha-hdfs:cluster", c.Select(KindHDFSDelegation, "").Service)
		require.Equal(t, []byte{0, 1, 2}, c.Secret("my-secret"))
	})
	t.Run("v1 protobuf", func(t *testing.T) {
		c, err := ReadTokenFile("testdata/v1-nmtoken.hdts")
		require.NoError(t, err)
		tok := c.Token("host1:45454")
		require.NotNil(t, tok)
		require.Equal(t, KindNMToken, tok.Kind)
		require.Equal(t, []byte("pw-nm"), tok.Password)
		require.Equal(t, []byte("xyz"), c.Secret("s"))
	})
	t.Run("empty", func(t *testing.T) {
		c, err := ReadTokenFile("testdata/empty-v0.hdts")
		require.NoError(t, err)
		require.Empty(t, c.Aliases())
	})
}

func TestReadTokenFileErrors(t *testing.T) {
	tests := []struct{ file, want string }{
		{"bad-magic.hdts", "no HDTS magic"},
		{"truncated-v0.hdts", "at byte"},
		{"unknown-version.hdts", "unknown format version 7"},
		{"missing.hdts", "no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			path := filepath.Join("testdata", tt.file)
			_, err := ReadTokenFile(path)
			require.ErrorContains(t, err, tt.want)
			require.ErrorContains(t, err, path, "errors name the file")
		})
	}
}

func TestRoundTripBothFormats(t *testing.T) {
	c := &Credentials{}
	c.AddToken("a", &Token{Identifier: bytes.Repeat([]byte{7}, 70000), Password: []byte("p"), Kind: KindAMRMToken, Service: "rm:8030"})
	c.AddToken("b", &Token{Identifier: []byte{}, Password: []byte{}, Kind: KindNMToken, Service: "nm:1"})
	c.AddToken("a", &Token{Identifier: []byte("new"), Password: []byte("p2"), Kind: KindAMRMToken, Service: "rm:8030"})
	c.AddSecret("k", []byte("v"))
	for _, f := range []Format{FormatWritable, FormatProtobuf} {
		t.Run(fmt.Sprint(f), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "tokens")
			require.NoError(t, WriteTokenFile(path, c, f))
			st, err := os.Stat(path)
			require.NoError(t, err)
			require.Equal(t, os.FileMode(0o600), st.Mode().Perm())
			back, err := ReadTokenFile(path)
			require.NoError(t, err)
			require.Equal(t, []string{"a", "b"}, back.Aliases())
			require.Equal(t, []byte("new"), back.Token("a").Identifier, "AddToken replaces by alias")
			require.Equal(t, c.Token("b").Kind, back.Token("b").Kind)
			require.Equal(t, []byte("v"), back.Secret("k"))
		})
	}
	t.Run("writer matches the hand-built fixture", func(t *testing.T) {
		want, err := os.ReadFile("testdata/v0-two-tokens-one-secret.hdts")
		require.NoError(t, err)
		c, err := ParseCredentials(want)
		require.NoError(t, err)
		got, err := c.Marshal(FormatWritable)
		require.NoError(t, err)
		require.Equal(t, want, got)
	})
}

func TestTokenRedaction(t *testing.T) {
	tok := &Token{Identifier: []byte("SECRET-ID"), Password: []byte("SECRET-PW"), Kind: KindAMRMToken, Service: "rm:8030"}
	c := &Credentials{}
	c.AddToken("x", tok)
	for _, s := range []string{tok.String(), fmt.Sprintf("%v %+v %#v %s", tok, tok, tok, tok), c.String(), fmt.Sprint(c)} {
		require.NotContains(t, s, "SECRET")
		require.NotContains(t, s, fmt.Sprint([]byte("SECRET-PW")))
	}
	require.Contains(t, tok.String(), "rm:8030")

	// By value and inside the structs that carry tokens (the AM keeps them
	// by value: one Token type for every use), still redacted.
	holder := struct {
		Node  string
		Token Token
	}{"nm1:45454", *tok}
	for _, s := range []string{fmt.Sprint(*tok), fmt.Sprintf("%v %+v %#v %s", holder, holder, holder, *tok)} {
		require.NotContains(t, s, "SECRET")
		require.NotContains(t, s, fmt.Sprint([]byte("SECRET-ID")))
	}
	var none *Token
	require.Equal(t, "<nil>", fmt.Sprint(none))
}

func TestWithoutKind(t *testing.T) {
	c, err := ReadTokenFile("testdata/v0-two-tokens-one-secret.hdts")
	require.NoError(t, err)
	task := c.WithoutKind(KindAMRMToken)
	require.Equal(t, []string{"ha-hdfs:cluster"}, task.Aliases())
	require.Equal(t, []byte{0, 1, 2}, task.Secret("my-secret"))
	require.Len(t, c.Aliases(), 2, "the original is unchanged")
	b, err := task.Marshal(FormatWritable)
	require.NoError(t, err)
	back, err := ParseCredentials(b)
	require.NoError(t, err)
	require.Nil(t, back.Select(KindAMRMToken, ""))
}

// The launcher reads the report secret with its own small reader
// (resources/contract, as driver/ may not import yarn/): it finds what
// this package writes, in both formats.
func TestReportSecretReadByTheLauncher(t *testing.T) {
	secret := bytes.Repeat([]byte{0xa5}, contract.ReportSecretBytes)
	var c Credentials
	c.AddToken("nn", &Token{Identifier: []byte("id"), Password: bytes.Repeat([]byte("p"), 300), Kind: KindHDFSDelegation, Service: "127.0.0.1:8020"})
	c.AddSecret("other", []byte("x"))
	c.AddSecret(contract.ReportSecretAlias, secret)
	for _, f := range []Format{FormatWritable, FormatProtobuf} {
		b, err := c.Marshal(f)
		require.NoError(t, err)
		got, err := contract.ReportSecret(b)
		require.NoError(t, err, "format %d", f)
		require.Equal(t, secret, got, "format %d", f)
	}
	var none Credentials
	none.AddToken("nn", &Token{Kind: KindHDFSDelegation})
	b, err := none.Marshal(FormatWritable)
	require.NoError(t, err)
	got, err := contract.ReportSecret(b)
	require.NoError(t, err)
	require.Nil(t, got)
}
