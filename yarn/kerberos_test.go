package yarn

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jcmturner/gofork/encoding/asn1"
	krbclient "github.com/jcmturner/gokrb5/v8/client"
	krbconfig "github.com/jcmturner/gokrb5/v8/config"
	"github.com/jcmturner/gokrb5/v8/iana/etypeID"
	"github.com/jcmturner/gokrb5/v8/iana/nametype"
	"github.com/jcmturner/gokrb5/v8/keytab"
	"github.com/jcmturner/gokrb5/v8/messages"
	krbtypes "github.com/jcmturner/gokrb5/v8/types"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/xres/xres/hadoopproto/hadoopyarn"
	"github.com/xres/xres/yarn/yarntest"
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

// A KERBEROS handshake end to end against the fake RM: AP-REQ checked with
// the service keytab, security-layer exchange, and the principal as the
// connection's effective user. Tickets are made locally (no KDC).
func TestKerberosClient(t *testing.T) {
	const realm = "EXAMPLE.COM"
	kt := keytab.New()
	require.NoError(t, kt.AddEntry("rm/localhost", realm, "service-secret", time.Now(), 1, etypeID.AES256_CTS_HMAC_SHA1_96))
	// The "KDC" also knows rm/127.0.0.1, which the RM's keytab lacks.
	kdc := keytab.New()
	require.NoError(t, kdc.AddEntry("rm/localhost", realm, "service-secret", time.Now(), 1, etypeID.AES256_CTS_HMAC_SHA1_96))
	require.NoError(t, kdc.AddEntry("rm/127.0.0.1", realm, "other-secret", time.Now(), 1, etypeID.AES256_CTS_HMAC_SHA1_96))
	srv := yarntest.NewServer(t, yarntest.Options{Keytab: kt, Principal: "rm/localhost"})
	srv.Handle("getClusterMetrics", func(ctx context.Context, c *yarntest.Call) (proto.Message, error) {
		if c.Conn.Principal != "alice@"+realm || c.Conn.User != "alice@"+realm {
			return nil, &yarntest.Exception{Class: "org.apache.hadoop.security.AccessControlException",
				Message: "principal " + c.Conn.Principal + ", effective user " + c.Conn.User}
		}
		return &hadoopyarn.GetClusterMetricsResponseProto{ClusterMetrics: &hadoopyarn.YarnClusterMetricsProto{NumNodeManagers: proto.Int32(2)}}, nil
	})
	cfg, err := krbconfig.NewFromString("[libdefaults]\n default_realm = " + realm + "\n")
	require.NoError(t, err)
	cl := krbclient.NewWithPassword("alice", realm, "user-secret", cfg, krbclient.DisablePAFXFAST(true))
	makeTicket := func(spn string) (messages.Ticket, krbtypes.EncryptionKey, error) {
		now := time.Now().UTC()
		return messages.NewTicket(krbtypes.NewPrincipalName(nametype.KRB_NT_PRINCIPAL, "alice"), realm,
			krbtypes.NewPrincipalName(nametype.KRB_NT_PRINCIPAL, spn), realm,
			asn1.BitString{Bytes: make([]byte, 4), BitLength: 32}, kdc, etypeID.AES256_CTS_HMAC_SHA1_96, 1,
			now, now, now.Add(time.Hour), now.Add(time.Hour))
	}
	tests := []struct {
		name      string
		principal string
		wantErr   error
	}{
		{"principal offered by the server", "", nil},
		{"configured principal with _HOST", "rm/_HOST@" + realm, ErrUnauthorized}, // rm/127.0.0.1 is not the RM's
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := NewClient(ClientConfig{Addrs: []string{srv.Addr}, Backoff: Backoff{Attempts: 1},
				Kerberos: &Kerberos{Client: cl, ServicePrincipal: tt.principal, getTicket: makeTicket}})
			require.NoError(t, err)
			defer c.Close()
			m, err := c.GetClusterMetrics(testCtx(t))
			if tt.wantErr != nil {
				require.ErrorIs(t, err, tt.wantErr)
				require.NotContains(t, err.Error(), "secret")
				return
			}
			require.NoError(t, err)
			require.Equal(t, 2, m.NodeManagers)
		})
	}
}
