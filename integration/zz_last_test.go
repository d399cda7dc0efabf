//go:build integration

package integration

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/integration/harness"
)

// TestZZClusterSurvivedSuite runs last (files and tests run in name order): the cluster
// must still be up, with every NodeManager RUNNING, after everything above.
func TestZZClusterSurvivedSuite(t *testing.T) {
	c := harness.Get(t)
	var info struct {
		ClusterInfo struct {
			State   string `json:"state"`
			HAState string `json:"haState"`
		} `json:"clusterInfo"`
	}
	c.GetJSON(t, "/ws/v1/cluster/info", &info)
	require.Equal(t, "STARTED", info.ClusterInfo.State)
	nodes := c.Nodes(t)
	require.Len(t, nodes, int(envInt(t, "XRES_MINICLUSTER_NODEMANAGERS", 2)))
	for _, n := range nodes {
		require.Equal(t, "RUNNING", n.State, "node %s: %s", n.ID, n.HealthReport)
	}
}
