package yarn

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jcmturner/gokrb5/v8/iana/etypeID"
	"github.com/jcmturner/gokrb5/v8/keytab"
	"github.com/stretchr/testify/require"
)

// A KDC that refuses connections: login must fail fast, naming the
// principal and the keytab.
const deadKDCConf = `[libdefaults]
 default_realm = EXAMPLE.COM
 dns_lookup_kdc = false
 dns_lookup_realm = false
[realms]
 EXAMPLE.COM = {
  kdc = 127.0.0.1:1
 }
`

func TestKerberosLoginErrors(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "krb5.conf")
	require.NoError(t, os.WriteFile(conf, []byte(deadKDCConf), 0o600))
	kt := keytab.New()
	require.NoError(t, kt.AddEntry("alice", "EXAMPLE.COM", "secret-password", time.Now(), 1, etypeID.AES256_CTS_HMAC_SHA1_96))
	b, err := kt.Marshal()
	require.NoError(t, err)
	ktPath := filepath.Join(dir, "alice.keytab")
	require.NoError(t, os.WriteFile(ktPath, b, 0o600))

	tests := []struct {
		name                    string
		conf, keytab, principal string
		want                    []string
	}{
		{"dead kdc", conf, ktPath, "alice@EXAMPLE.COM", []string{"alice@EXAMPLE.COM", ktPath}},
		{"bad principal", conf, ktPath, "alice", []string{`"alice"`, "user@REALM"}},
		{"missing keytab", conf, filepath.Join(dir, "none"), "alice@EXAMPLE.COM", []string{filepath.Join(dir, "none")}},
		{"missing krb5.conf", filepath.Join(dir, "no.conf"), ktPath, "alice@EXAMPLE.COM", []string{"no.conf"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewKerberosFromKeytab(tt.conf, tt.keytab, tt.principal)
			require.Error(t, err)
			for _, w := range tt.want {
				require.ErrorContains(t, err, w)
			}
			require.NotContains(t, err.Error(), "secret-password")
		})
	}
	_, err = NewKerberosFromCCache(conf, filepath.Join(dir, "no-ccache"))
	require.ErrorContains(t, err, "no-ccache")
}

func TestKerberosServicePrincipal(t *testing.T) {
	k := &Kerberos{ServicePrincipal: "rm/_HOST@EXAMPLE.COM"}
	require.Equal(t, "rm/rm1.example.com", k.servicePrincipal("RM1.example.com:8032"))
	require.Equal(t, "", (&Kerberos{}).servicePrincipal("h:1"))
}
