//go:build integration && yarnrandom

package integration

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestYARNRandomCluster is make yarn-random-cluster (build tag yarnrandom,
// so make test does not list it; the short form runs inside
// TestYARNAssignedGPUs/plugin).
func TestYARNRandomCluster(t *testing.T) {
	n, err := strconv.Atoi(os.Getenv("XRES_YARN_RANDOM_CLUSTER_LAUNCHES"))
	require.True(t, err == nil && n > 0, "XRES_YARN_RANDOM_CLUSTER_LAUNCHES must be a positive count (make yarn-random-cluster sets it)")
	seed := time.Now().UnixNano() % 1000003
	if v := os.Getenv("XRES_YARN_RANDOM_CLUSTER_SEED"); v != "" {
		seed, err = strconv.ParseInt(v, 10, 64)
		require.NoError(t, err, "XRES_YARN_RANDOM_CLUSTER_SEED")
	}
	modes := []string{"plugin", "isolated", "docker", "pluggable", "plugin-off"}
	if v := os.Getenv("XRES_YARN_RANDOM_CLUSTER_MODES"); v != "" {
		modes = strings.Split(v, ",")
	}
	var figures []randomFigures
	for _, m := range modes {
		// "<mode>-off": the launcher does not ask YARN (the check must fail).
		mode, off := strings.CutSuffix(m, "-off")
		t.Run(m, func(t *testing.T) {
			f := runRandomLaunches(t, gpuClusterFor(t, mode, 1), mode, n, seed, off)
			f.Mode = m
			figures = append(figures, f)
		})
	}
	for _, f := range figures {
		t.Logf("yarn-random-cluster: mode %-9s seed %d launches %d bad %d launcher-failures %d killed %d duration %s",
			f.Mode, f.Seed, f.Launches, f.Bad, f.Failed, f.Killed, f.Duration.Round(time.Second))
	}
}
