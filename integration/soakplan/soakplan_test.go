package soakplan

import (
	"os"
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// CI's soak (.ci/run: SOAK_S=120 SOAK_SEED=…) must inject an AM kill and a launcher or worker
// kill -9, the faults a short soak otherwise may never draw (SOAK_SEED=1 drew neither). Both
// are among its first two faults: the first starts at once, the second once the first healed,
// the workers all run again and its pause (at most 10 s) passed, well within 120 s for these
// two (a kill -9 is replaced in seconds; the next AM attempt adopts the workers).
func TestCISeed(t *testing.T) {
	b, err := os.ReadFile("../../.ci/run")
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^SOAK_S=(\d+) SOAK_SEED=(\d+) make soak$`).FindSubmatch(b)
	require.NotNil(t, m, ".ci/run runs the soak as SOAK_S=<s> SOAK_SEED=<seed> make soak")
	seed, err := strconv.ParseInt(string(m[2]), 10, 64)
	require.NoError(t, err)
	first := First(seed, 6)
	for i, f := range first {
		t.Logf("SOAK_SEED=%d fault %d: %s %+v", seed, i+1, f.Kind, f)
	}
	got := map[Kind]bool{first[0].Kind: true, first[1].Kind: true}
	require.True(t, got[AMKill] && got[WorkerKill], "SOAK_SEED=%d's first two faults are %s and %s, not an AM kill and a kill -9",
		seed, first[0].Kind, first[1].Kind)
}

// A seed's schedule is the same every time, and the draws cover every fault and every choice's
// range.
func TestSchedule(t *testing.T) {
	require.Equal(t, First(42, 50), First(42, 50))
	require.NotEqual(t, First(42, 50), First(43, 50))
	seen := map[Kind]bool{}
	for _, f := range First(1, 2000) {
		seen[f.Kind] = true
		require.NotEqual(t, "unknown fault", f.Kind.String())
		require.True(t, f.Pause >= 2e9 && f.Pause <= 10e9, "pause %s", f.Pause)
		switch f.Kind {
		case RMDown:
			require.True(t, f.Down >= 5e9 && f.Down <= 120e9, "%+v", f)
		case NMKill:
			require.True(t, f.NM >= 0 && f.NM < 4 && f.Down <= 30e9, "%+v", f)
		case SlowNM:
			require.True(t, f.Down >= 20e9 && f.Down <= 60e9 && f.Lag >= 1e9 && f.Lag <= 3e9, "%+v", f)
		case Partition:
			require.True(t, f.Down >= 5e9 && f.Down <= 60e9, "%+v", f)
		case WorkerKill:
			require.GreaterOrEqual(t, f.Victim, 0)
		}
	}
	require.Len(t, seen, len(Kinds()), "every fault is drawn")
}
