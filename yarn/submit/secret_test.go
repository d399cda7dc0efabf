package submit

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/resources/contract"
	"github.com/xres/xres/yarn/security"
)

func TestWithReportSecret(t *testing.T) {
	// An insecure cluster: no credentials before, one secret after.
	b, err := WithReportSecret(nil)
	require.NoError(t, err)
	creds, err := security.ParseCredentials(b)
	require.NoError(t, err)
	secret := creds.Secret(contract.ReportSecretAlias)
	require.Len(t, secret, contract.ReportSecretBytes)
	require.Empty(t, creds.Aliases())

	// Each application its own.
	b2, err := WithReportSecret(nil)
	require.NoError(t, err)
	other, err := security.ParseCredentials(b2)
	require.NoError(t, err)
	require.NotEqual(t, secret, other.Secret(contract.ReportSecretAlias))

	// A Kerberized submission: the delegation token kept beside it, and a
	// secret already there kept.
	var c security.Credentials
	c.AddToken("nn:8020", &security.Token{Identifier: []byte("id"), Password: []byte("pw"), Kind: security.KindHDFSDelegation, Service: "nn:8020"})
	in, err := c.Marshal(security.FormatProtobuf)
	require.NoError(t, err)
	out, err := WithReportSecret(in)
	require.NoError(t, err)
	got, err := security.ParseCredentials(out)
	require.NoError(t, err)
	require.Equal(t, []string{"nn:8020"}, got.Aliases())
	again, err := WithReportSecret(out)
	require.NoError(t, err)
	kept, err := security.ParseCredentials(again)
	require.NoError(t, err)
	require.Equal(t, got.Secret(contract.ReportSecretAlias), kept.Secret(contract.ReportSecretAlias))

	_, err = WithReportSecret([]byte("nope!"))
	require.ErrorIs(t, err, security.ErrTokenFile)
}
