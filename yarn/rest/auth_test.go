package rest

import (
	"net/http"
	"testing"

	"github.com/jcmturner/gokrb5/v8/client"
	"github.com/jcmturner/gokrb5/v8/config"
	"github.com/stretchr/testify/require"
)

// Without a KDC the SPNEGO authenticator must fail the call cleanly, name
// the RM host, and never show the password.
func TestSPNEGOWithoutKDC(t *testing.T) {
	cfg := config.New()
	cfg.LibDefaults.DefaultRealm = "EXAMPLE.COM"
	kc := client.NewWithPassword("alice", "EXAMPLE.COM", "hunter2-secret", cfg, client.DisablePAFXFAST(true))
	auth := SPNEGO(kc, "HTTP/rm.example.com")
	require.NotContains(t, auth.(interface{ String() string }).String(), "hunter2")

	rm := newFakeRM(t, map[string]http.HandlerFunc{"GET /ws/v1/cluster/info": serve(t, 200, "info.json")})
	c := newClient(t, Config{Endpoints: []string{rm.URL}, Auth: auth, Retries: -1})
	_, err := c.ClusterInfo(testCtx(t))
	require.Error(t, err)
	require.ErrorContains(t, err, "spnego 127.0.0.1")
	require.NotContains(t, err.Error(), "hunter2")
	require.Empty(t, rm.requests(), "no request goes out without credentials")
}
