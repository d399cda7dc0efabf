package am

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/resources"
	"github.com/xres/xres/resources/contract"
	"github.com/xres/xres/yarn"
	"github.com/xres/xres/yarn/amplan"
	"github.com/xres/xres/yarn/amstatus"
)

// Each worker's timeline has its marks in order: the ask's heartbeat, the
// one that brought the container (one later here), the start sent and
// answered, then the launcher's own marks from its reports; the phases
// are over both workers, and a command-started report keeps the devices.
func TestTimelineMarksAndPhases(t *testing.T) {
	c2, c3 := ctr(2, "nm1"), ctr(3, "nm2")
	var st amstatus.Status
	res, _, _ := runRV(t, []amplan.Group{rvGroup("", 2, amplan.Plan{})}, nil,
		func(*AM) (yarn.AllocateResponse, error) { return yarn.AllocateResponse{}, nil }, // carries the ask
		allocRV(c2, c3),
		func(a *AM) (yarn.AllocateResponse, error) {
			require.Eventually(t, func() bool { return a.Status().Running == 2 }, 5*time.Second, time.Millisecond)
			for _, c := range []yarn.Container{c2, c3} {
				now := time.Now()
				require.NoError(t, a.ReportDevices(contract.DeviceReport{Container: c.ID,
					Resources:       map[string][]resources.Properties{"gpu": {{"index": "0"}}},
					LauncherStarted: now, Reserved: now.Add(3 * time.Millisecond)}))
				require.NoError(t, a.ReportDevices(contract.DeviceReport{Container: c.ID, CommandStarted: now.Add(5 * time.Millisecond)}))
			}
			st = a.StatusPage(amstatus.Page{Phases: true})
			return yarn.AllocateResponse{}, nil
		},
		doneAll(c2, c3),
	)
	require.Equal(t, yarn.StatusSucceeded, res.Status, res.Diagnostics)
	require.Len(t, st.Containers, 2)
	for _, w := range st.Containers {
		tl := w.Timeline
		require.NotNil(t, tl, w.Container)
		marks := []time.Time{tl.Asked, tl.Allocated, tl.StartSent, tl.StartAnswered}
		for i, m := range marks {
			require.False(t, m.IsZero(), "%s: mark %d unknown: %+v", w.Container, i, tl)
			if i > 0 {
				require.False(t, m.Before(marks[i-1]), "%s: mark %d before %d: %+v", w.Container, i, i-1, tl)
			}
		}
		require.Equal(t, 1, tl.AskHeartbeats, "the heartbeat after the ask's brought it")
		require.NotNil(t, st.FirstAsk, "the first ask, 0 s of the tracking page's timeline")
		require.True(t, st.FirstAsk.Equal(tl.Asked), "both were asked in the first ask: %v, %v", st.FirstAsk, tl.Asked)
		require.Equal(t, 3*time.Millisecond, tl.DevicesReserved.Sub(tl.LauncherStarted))
		require.Equal(t, 2*time.Millisecond, tl.CommandStarted.Sub(tl.DevicesReserved))
		require.Equal(t, map[string][]resources.Properties{"gpu": {{"index": "0"}}}, w.Devices, "the command-started report keeps the devices")
	}
	byName := map[string]amstatus.Phase{}
	for _, p := range st.Phases {
		byName[p.Name] = p
	}
	reserve := byName["launcher started → devices reserved"]
	require.Equal(t, amstatus.Phase{Name: "launcher started → devices reserved", Unit: "ms", Count: 2, P50: 3, P90: 3, Max: 3}, reserve)
	require.Equal(t, amstatus.Phase{Name: amstatus.AskHeartbeatsPhase, Unit: "heartbeats", Count: 2, P50: 1, P90: 1, Max: 1}, byName[amstatus.AskHeartbeatsPhase])
	require.Equal(t, 2, byName["asked → command started (all)"].Count)
	require.Empty(t, amstatus.Status{}.Phases)
}
