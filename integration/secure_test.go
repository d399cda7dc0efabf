//go:build integration

package integration

import (
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/colinmarc/hdfs/v2"
	"github.com/jcmturner/gokrb5/v8/iana/etypeID"
	"github.com/jcmturner/gokrb5/v8/keytab"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/xres/xres/hadoopproto/hadoopyarn"
	"github.com/xres/xres/integration/harness"
	"github.com/xres/xres/yarn"
	"github.com/xres/xres/yarn/rest"
)

// TestSecureRPCProtection runs against a second minicluster whose RPC servers demand
// hadoop.rpc.protection=privacy (SASL qop auth-conf), then a third with integrity
// (auth-int): every TOKEN connection, the tiny AM's AMRMToken to the RM and its NMTokens
// to the NodeManager, must then negotiate DIGEST-MD5 with a security layer and wrap
// every packet after it. The client calls use SIMPLE, which the protection level does
// not touch, and must work as well.
func TestSecureRPCProtection(t *testing.T) {
	for _, tc := range []struct{ protection, qop string }{
		{"privacy", "auth-conf"},
		{"integrity", "auth-int"},
	} {
		t.Run(tc.protection, func(t *testing.T) {
			c := harness.StartExtra(t, map[string]string{
				"XRES_RPC_PROTECTION":           tc.protection,
				"XRES_MINICLUSTER_NODEMANAGERS": "1",
			})
			require.Equal(t, tc.protection, c.Conf("hadoop.rpc.protection"), "the written core-site.xml")
			require.Equal(t, tc.protection, c.Env["XRES_RPC_PROTECTION"], "cluster.env")
			cl := rpcClient(t, c)
			ctx := rpcCtx(t, 3*time.Minute)

			t.Run("the scheduler demands qop "+tc.qop, func(t *testing.T) {
				auths := saslOffers(t, rmAddrs(t, c, yarn.RMScheduler)[0])
				tok := offer(auths, "TOKEN")
				require.NotNil(t, tok, "offers: %v", auths)
				require.Equal(t, "DIGEST-MD5", tok.GetMechanism())
				require.Contains(t, string(tok.GetChallenge()), `qop="`+tc.qop+`"`)
			})
			t.Run("getClusterMetrics", func(t *testing.T) {
				m, err := raw(cl).GetClusterMetrics(ctx)
				require.NoError(t, err)
				require.Equal(t, int32(1), m.GetNumNodeManagers())
				require.Equal(t, int32(1), m.GetNumActiveNms())
			})
			t.Run("getClusterNodes", func(t *testing.T) {
				nodes, err := raw(cl).GetClusterNodes(ctx, hadoopyarn.NodeStateProto_NS_RUNNING)
				require.NoError(t, err)
				require.Len(t, nodes, 1)
				require.Equal(t, c.Env["XRES_NM0_ID"], yarn.NodeID(nodes[0].GetNodeId()))
			})
			t.Run("tiny AM over wrapped DIGEST-MD5", func(t *testing.T) {
				r := runTinyAM(t, ctx, c, cl)
				// The AM logs at debug level: its connections to the RM and to the
				// NodeManager ran with a SASL security layer.
				stderr := amStderr(t, c, yarn.ApplicationID(r.GetApplicationId()))
				require.GreaterOrEqual(t, strings.Count(stderr, "sasl security layer in use"), 2, "AM stderr:\n%s", stderr)
			})
		})
	}
}

// amStderr reads the stderr of appID's AM container (its first container) on a
// minicluster.
func amStderr(t *testing.T, c *harness.Cluster, appID string) string {
	t.Helper()
	for _, d := range c.NodeManagerLogDirs() {
		ms, _ := filepath.Glob(filepath.Join(d, appID, "container_*_000001", "stderr"))
		for _, m := range ms {
			b, err := os.ReadFile(m)
			require.NoError(t, err)
			return string(b)
		}
	}
	t.Fatalf("no AM stderr of %s under %v", appID, c.NodeManagerLogDirs())
	return ""
}

// TestSecureKerberos runs against a second minicluster with the secure profile
// (XRES_SECURE=1): a KDC in the cluster's JVM, every RPC server on Kerberos and the RM
// REST API behind SPNEGO. The client logs in from the keytab the cluster wrote.
func TestSecureKerberos(t *testing.T) {
	c := harness.StartExtra(t, map[string]string{
		"XRES_SECURE":                   "1",
		"XRES_MINICLUSTER_NODEMANAGERS": "1",
	})
	require.Equal(t, "kerberos", c.Conf("hadoop.security.authentication"), "the written core-site.xml")
	krb5Conf, keytabPath, principal := c.Env["XRES_KRB5_CONF"], c.Env["XRES_CLIENT_KEYTAB"], c.Env["XRES_CLIENT_PRINCIPAL"]
	require.NotEmpty(t, krb5Conf, "cluster.env: XRES_KRB5_CONF")
	rmPrincipal := c.Conf("yarn.resourcemanager.principal")
	require.NotEmpty(t, rmPrincipal, "yarn-site.xml: yarn.resourcemanager.principal")
	addrs := rmAddrs(t, c, yarn.RMClient)
	ctx := rpcCtx(t, 3*time.Minute)

	krb, err := yarn.NewKerberosFromKeytab(krb5Conf, keytabPath, principal)
	require.NoError(t, err)
	krb.ServicePrincipal = rmPrincipal
	kerberosClient := func(t *testing.T, k *yarn.Kerberos) *yarn.Client {
		cl, err := yarn.NewClient(yarn.ClientConfig{Addrs: addrs, Kerberos: k,
			Backoff: yarn.Backoff{Base: 50 * time.Millisecond, Max: 500 * time.Millisecond}})
		require.NoError(t, err)
		t.Cleanup(func() { cl.Close() })
		return cl
	}

	t.Run("the RM offers KERBEROS, not SIMPLE", func(t *testing.T) {
		auths := saslOffers(t, addrs[0])
		require.Nil(t, offer(auths, "SIMPLE"), "offers: %v", auths)
		k := offer(auths, "KERBEROS")
		require.NotNil(t, k, "offers: %v", auths)
		require.Equal(t, "GSSAPI", k.GetMechanism())
		// The server's principal, split: hadoop/localhost.
		require.Equal(t, c.Env["XRES_SERVICE_PRINCIPAL"], k.GetProtocol()+"/"+k.GetServerId()+"@"+c.Env["XRES_REALM"])
	})
	t.Run("KERBEROS getClusterMetrics", func(t *testing.T) {
		m, err := raw(kerberosClient(t, krb)).GetClusterMetrics(ctx)
		require.NoError(t, err)
		require.Equal(t, int32(1), m.GetNumNodeManagers())
	})
	t.Run("KERBEROS getNewApplication", func(t *testing.T) {
		app, err := raw(kerberosClient(t, krb)).GetNewApplication(ctx)
		require.NoError(t, err)
		require.True(t, strings.HasPrefix(yarn.ApplicationID(app.GetApplicationId()), "application_"))
		gpus, ok := yarn.ResourceValue(app.GetMaximumCapability(), "yarn.io/gpu")
		require.True(t, ok)
		require.Positive(t, gpus)
	})
	t.Run("KERBEROS submit, report, kill as the client user", func(t *testing.T) {
		cl := kerberosClient(t, krb)
		id := submitSleep(t, ctx, c, cl, "xres-kerberos", nil)
		r, err := raw(cl).GetApplicationReport(ctx, id)
		require.NoError(t, err)
		// The RM maps client@EXAMPLE.COM to its short name (auth_to_local).
		require.Equal(t, strings.Split(principal, "@")[0], r.GetUser())
		require.Equal(t, "xres-kerberos", r.GetName())
		require.NoError(t, raw(cl).KillApplication(ctx, id, "killed by xres kerberos test"))
		r, err = raw(cl).GetApplicationReport(ctx, id)
		require.NoError(t, err)
		require.Equal(t, hadoopyarn.YarnApplicationStateProto_KILLED, r.GetYarnApplicationState())
	})
	t.Run("KERBEROS with the server's offered principal", func(t *testing.T) {
		k, err := yarn.NewKerberosFromKeytab(krb5Conf, keytabPath, principal)
		require.NoError(t, err)
		_, err = raw(kerberosClient(t, k)).GetClusterMetrics(ctx)
		require.NoError(t, err)
	})
	t.Run("SIMPLE is refused", func(t *testing.T) {
		_, err := raw(rpcClient(t, c)).GetClusterMetrics(ctx)
		require.ErrorIs(t, err, yarn.ErrAccessControl)
		require.ErrorContains(t, err, "SIMPLE authentication is not enabled")
	})
	t.Run("wrong service principal", func(t *testing.T) {
		k, err := yarn.NewKerberosFromKeytab(krb5Conf, keytabPath, principal)
		require.NoError(t, err)
		k.ServicePrincipal = "nosuch/localhost@" + c.Env["XRES_REALM"]
		start := time.Now()
		_, err = raw(kerberosClient(t, k)).GetClusterMetrics(ctx)
		require.ErrorIs(t, err, yarn.ErrKerberos)
		require.ErrorContains(t, err, "nosuch/localhost")
		require.Less(t, time.Since(start), 30*time.Second)
		t.Logf("wrong service principal: %v", err)
	})
	t.Run("wrong keytab", func(t *testing.T) {
		// A keytab for the right principal with a key the KDC does not know.
		kt := keytab.New()
		user, realm, _ := strings.Cut(principal, "@")
		require.NoError(t, kt.AddEntry(user, realm, "not-the-password", time.Now(), 1, etypeID.AES128_CTS_HMAC_SHA1_96))
		b, err := kt.Marshal()
		require.NoError(t, err)
		bad := filepath.Join(t.TempDir(), "wrong.keytab")
		require.NoError(t, os.WriteFile(bad, b, 0o600))
		_, err = yarn.NewKerberosFromKeytab(krb5Conf, bad, principal)
		require.Error(t, err)
		require.ErrorContains(t, err, "login as "+principal)
		require.ErrorContains(t, err, bad)
		require.NotContains(t, err.Error(), "not-the-password")
		t.Logf("wrong keytab: %v", err)
	})
	t.Run("principal not in the keytab", func(t *testing.T) {
		_, err := yarn.NewKerberosFromKeytab(krb5Conf, keytabPath, "nobody@"+c.Env["XRES_REALM"])
		require.Error(t, err)
		require.ErrorContains(t, err, "login as nobody@"+c.Env["XRES_REALM"])
		t.Logf("principal not in the keytab: %v", err)
	})
	t.Run("REST with SPNEGO", func(t *testing.T) {
		rc, err := rest.New(rest.Config{Endpoints: []string{c.RMWebURL}, Auth: rest.SPNEGO(krb.Client, "HTTP/localhost")})
		require.NoError(t, err)
		info, err := rc.ClusterInfo(ctx)
		require.NoError(t, err)
		require.Equal(t, "STARTED", info.State)
		nodes, err := rc.Nodes(ctx)
		require.NoError(t, err)
		require.Len(t, nodes, 1)
		require.Equal(t, c.Env["XRES_NM0_ID"], nodes[0].ID)
		gpus, ok := nodes[0].Total("yarn.io/gpu")
		require.True(t, ok)
		require.Equal(t, envInt(t, "XRES_MINICLUSTER_GPUS", 2), gpus)
		// A write: the user comes from the Kerberos ticket, not from ?user.name=.
		app, err := rc.NewApplication(ctx)
		require.NoError(t, err)
		require.True(t, strings.HasPrefix(app.ApplicationID, "application_"), app.ApplicationID)
	})
	t.Run("HDFS over KERBEROS", func(t *testing.T) {
		// What staging on a secure cluster needs: the NameNode over KERBEROS, the
		// DataNode over SASL data transfer (dfs.data.transfer.protection).
		fs, err := hdfs.NewClient(hdfs.ClientOptions{Addresses: []string{c.NameNode}, KerberosClient: krb.Client,
			KerberosServicePrincipleName: strings.Split(c.Conf("dfs.namenode.kerberos.principal"), "@")[0],
			DataTransferProtection:       c.Conf("dfs.data.transfer.protection")})
		require.NoError(t, err)
		defer fs.Close()
		dir := "/tmp/xres-kerberos-" + strconv.FormatInt(time.Now().UnixNano(), 36)
		require.NoError(t, fs.MkdirAll(dir, 0o755))
		fi, err := fs.Stat(dir)
		require.NoError(t, err)
		require.Equal(t, strings.Split(principal, "@")[0], fi.(*hdfs.FileInfo).Owner(), "the NameNode names the Kerberos user")
		w, err := fs.Create(dir + "/hello")
		require.NoError(t, err)
		_, err = w.Write([]byte("hello over kerberos"))
		require.NoError(t, err)
		require.NoError(t, closeWriter(w))
		b, err := fs.ReadFile(dir + "/hello")
		require.NoError(t, err)
		require.Equal(t, "hello over kerberos", string(b))
	})
	t.Run("REST without credentials is 401", func(t *testing.T) {
		rc, err := rest.New(rest.Config{Endpoints: []string{c.RMWebURL}, User: c.User})
		require.NoError(t, err)
		_, err = rc.ClusterInfo(ctx)
		require.ErrorIs(t, err, rest.ErrUnauthorized)
		var re *rest.RemoteError
		require.ErrorAs(t, err, &re)
		require.Equal(t, http.StatusUnauthorized, re.StatusCode)
	})
}

// TestSecureKerberosPrivacy: secure clusters that demand hadoop.rpc.protection=privacy,
// then integrity. KERBEROS (GSSAPI) must negotiate the matching SASL security layer
// (RFC 4752 bitmask) and wrap every packet after it in RFC 4121 wrap tokens, sealed at
// privacy and signed at integrity; calls made side by side on one connection must all
// come back. SPNEGO on the REST API is not affected by the RPC setting.
func TestSecureKerberosPrivacy(t *testing.T) {
	for _, protection := range []string{"privacy", "integrity"} {
		t.Run(protection, func(t *testing.T) {
			c := harness.StartExtra(t, map[string]string{
				"XRES_SECURE":                   "1",
				"XRES_RPC_PROTECTION":           protection,
				"XRES_MINICLUSTER_NODEMANAGERS": "1",
			})
			require.Equal(t, protection, c.Conf("hadoop.rpc.protection"))
			ctx := rpcCtx(t, 2*time.Minute)
			krb, err := yarn.NewKerberosFromKeytab(c.Env["XRES_KRB5_CONF"], c.Env["XRES_CLIENT_KEYTAB"], c.Env["XRES_CLIENT_PRINCIPAL"])
			require.NoError(t, err)
			krb.ServicePrincipal = c.Conf("yarn.resourcemanager.principal")
			cl, err := yarn.NewClient(yarn.ClientConfig{Addrs: rmAddrs(t, c, yarn.RMClient), Kerberos: krb,
				Backoff: yarn.Backoff{Base: 50 * time.Millisecond, Max: 500 * time.Millisecond}})
			require.NoError(t, err)
			t.Cleanup(func() { cl.Close() })

			t.Run("KERBEROS getClusterMetrics", func(t *testing.T) {
				start := time.Now()
				m, err := raw(cl).GetClusterMetrics(ctx)
				require.NoError(t, err)
				require.Equal(t, int32(1), m.GetNumNodeManagers())
				require.Less(t, time.Since(start), 30*time.Second)
			})
			t.Run("KERBEROS getClusterNodes", func(t *testing.T) {
				nodes, err := raw(cl).GetClusterNodes(ctx)
				require.NoError(t, err)
				require.Len(t, nodes, 1)
			})
			t.Run("KERBEROS 16 calls side by side", func(t *testing.T) {
				errs := make(chan error, 16)
				for range 16 {
					go func() {
						_, err := raw(cl).GetClusterMetrics(ctx)
						errs <- err
					}()
				}
				for range 16 {
					require.NoError(t, <-errs)
				}
			})
			t.Run("KERBEROS getNewApplication", func(t *testing.T) {
				app, err := raw(cl).GetNewApplication(ctx)
				require.NoError(t, err)
				require.True(t, strings.HasPrefix(yarn.ApplicationID(app.GetApplicationId()), "application_"))
			})
			// A request and a response larger than one wrap token (the RM's 64 KiB
			// buffer): the request goes out as several WRAP messages.
			t.Run("KERBEROS submit and kill with 300 KB messages", func(t *testing.T) {
				big := strings.Repeat("0123456789abcdef", 300<<10/16)
				id := submitSleep(t, ctx, c, cl, "xres-"+protection,
					[]*hadoopyarn.StringStringMapProto{{Key: proto.String("XRES_BIG"), Value: proto.String(big)}})
				require.NoError(t, raw(cl).KillApplication(ctx, id, "killed: "+big))
				r, err := raw(cl).GetApplicationReport(ctx, id)
				require.NoError(t, err)
				require.Equal(t, "xres-"+protection, r.GetName())
				require.Equal(t, hadoopyarn.YarnApplicationStateProto_KILLED, r.GetYarnApplicationState())
				require.Greater(t, len(r.GetDiagnostics()), 256<<10, "the kill diagnostics, beyond one 64 KiB token")
				require.Contains(t, r.GetDiagnostics(), big[:4096])
			})
			t.Run("REST with SPNEGO", func(t *testing.T) {
				rc, err := rest.New(rest.Config{Endpoints: []string{c.RMWebURL}, Auth: rest.SPNEGO(krb.Client, "HTTP/localhost")})
				require.NoError(t, err)
				m, err := rc.ClusterMetrics(ctx)
				require.NoError(t, err)
				require.Equal(t, int64(1), int64(m.ActiveNodes))
			})
		})
	}
}
