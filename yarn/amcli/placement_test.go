package amcli

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/yarn"
	"github.com/xres/xres/yarn/amstatus"
)

// am submit, following, says why workers wait when the placement
// constraint cannot place them.
func TestFollowerSaysWhyWorkersCannotBePlaced(t *testing.T) {
	var out bytes.Buffer
	why := "1 worker(s) cannot be placed: xres.placement.max-workers-per-node=1 and the cluster has 4 nodes (room for 4 of the 5 workers); they wait for a node to join"
	f := &follower{w: &out, app: "application_1_0001", now: func() time.Time { return time.Unix(0, 0).UTC() },
		status: func(context.Context, string) *amstatus.Status {
			return &amstatus.Status{Workers: 5, Running: 4, Pending: 1, Unplaceable: why}
		}}
	f.report(context.Background(), yarn.ApplicationReport{State: "RUNNING", TrackingURL: "http://rm/proxy/"})
	require.Contains(t, out.String(), "workers: 4/5 running ("+why+")")
}
