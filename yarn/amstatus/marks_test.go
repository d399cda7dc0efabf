package amstatus

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/resources/contract"
)

func TestPhasesNearestRank(t *testing.T) {
	v := []float64{5, 1, 4, 2, 3, 6, 7, 8, 9, 10}
	p := Phases(PhaseSamples{v})
	require.Equal(t, []Phase{{Name: PhaseScheduling, Unit: "ms", Count: 10, P50: 5, P90: 9, Max: 10}}, p)
}

// A later AM attempt reads the kept report file (no signature, perhaps no
// seq): taken while none newer was; an older one than taken is stale.
func TestReportSeqsOfKeptReports(t *testing.T) {
	var s ReportSeqs
	require.NoError(t, s.Take(contract.DeviceReport{Container: "c"}), "a kept report of an older launcher")
	require.NoError(t, s.Take(contract.DeviceReport{Container: "c", Seq: 5}))
	require.ErrorIs(t, s.Take(contract.DeviceReport{Container: "c", Seq: 5}), ErrStaleReport)
	require.ErrorIs(t, s.Take(contract.DeviceReport{Container: "c"}), ErrStaleReport)
	require.NoError(t, s.Take(contract.DeviceReport{Container: "c", Seq: 4, CommandStarted: time.Unix(1, 0)}), "the other kind")
}
