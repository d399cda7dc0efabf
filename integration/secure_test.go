//go:build integration

package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/hadoopproto/hadoopyarn"
	"github.com/xres/xres/integration/harness"
	"github.com/xres/xres/yarn"
)

// TestSecureRPCPrivacy runs against a second minicluster whose RPC servers demand
// hadoop.rpc.protection=privacy (SASL qop auth-conf): every TOKEN connection, the tiny
// AM's AMRMToken to the RM and its NMTokens to the NodeManager, must then negotiate
// DIGEST-MD5 with a security layer and wrap every packet after it. The client calls
// use SIMPLE, which the protection level does not touch, and must work as well.
func TestSecureRPCPrivacy(t *testing.T) {
	c := harness.StartExtra(t, map[string]string{
		"XRES_RPC_PROTECTION":           "privacy",
		"XRES_MINICLUSTER_NODEMANAGERS": "1",
	})
	require.Equal(t, "privacy", c.Conf("hadoop.rpc.protection"), "the written core-site.xml")
	require.Equal(t, "privacy", c.Env["XRES_RPC_PROTECTION"], "cluster.env")
	cl := rpcClient(t, c)
	ctx := rpcCtx(t, 3*time.Minute)

	t.Run("getClusterMetrics", func(t *testing.T) {
		m, err := cl.GetClusterMetrics(ctx)
		require.NoError(t, err)
		require.Equal(t, int32(1), m.GetNumNodeManagers())
		require.Equal(t, int32(1), m.GetNumActiveNms())
	})
	t.Run("getClusterNodes", func(t *testing.T) {
		nodes, err := cl.GetClusterNodes(ctx, hadoopyarn.NodeStateProto_NS_RUNNING)
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
