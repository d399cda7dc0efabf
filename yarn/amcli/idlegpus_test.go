package amcli

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/yarn/amstatus"
)

// am status lists the idle GPUs the AM reports, with worker, host and
// how long; none listed, no section.
func TestStatusPrintsIdleGPUs(t *testing.T) {
	var b bytes.Buffer
	st := &amstatus.Status{Workers: 2, Running: 2, IdleGPUs: []amstatus.IdleGPU{
		{Container: "container_1_0001_01_000003", Host: "nm2", GPU: "1", UUID: "GPU-abc", Util: 4, IdleForS: 601},
	}}
	printStatusWorkers(&b, st, nil)
	require.Contains(t, b.String(), "idle GPUs (granted, unused):\n")
	require.Regexp(t, `container_1_0001_01_000003\s+nm2\s+1\s+GPU-abc\s+4%\s+10m1s\n`, b.String())

	b.Reset()
	st.IdleGPUs = nil
	printStatusWorkers(&b, st, nil)
	require.NotContains(t, b.String(), "idle GPUs")
}
