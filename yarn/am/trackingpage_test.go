package am

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/xres/xres/resources/contract"
	"github.com/xres/xres/yarn"
	"github.com/xres/xres/yarn/amplan"
	"github.com/xres/xres/yarn/amstatus"
	"github.com/xres/xres/yarn/amweb"
	"github.com/xres/xres/yarn/amweb/amwebtest"
)

type xnode = amwebtest.Node

var (
	byClass     = amwebtest.ByClass
	timelineSVG = amwebtest.TimelineSVG
)

// getPage serves src's tracking page and returns it.
func getPage(t *testing.T, src amweb.StatusSource, opts ...amweb.TrackerOption) string {
	return amwebtest.GetPage(t, amweb.NewTracker(src, nil, opts...))
}

func TestTrackingPageTimelineRestartedWorker(t *testing.T) {
	var mu sync.Mutex
	clock := time.Date(2026, 12, 5, 11, 0, 0, 0, time.UTC)
	now := func() time.Time { // each reading 100 ms later: heartbeats are apart
		mu.Lock()
		defer mu.Unlock()
		clock = clock.Add(100 * time.Millisecond)
		return clock
	}
	c2, c3 := ctr(2, "nm1"), ctr(3, "nm2")
	var page string
	res, _, _ := runRV(t, []amplan.Group{rvGroup("", 1, amplan.Plan{MaxFailedContainers: 2})}, now,
		func(*AM) (yarn.AllocateResponse, error) { return yarn.AllocateResponse{}, nil },
		allocRV(c2),
		complete2(done(c2, 1)),
		func(*AM) (yarn.AllocateResponse, error) { return yarn.AllocateResponse{}, nil },
		allocRV(c3),
		func(a *AM) (yarn.AllocateResponse, error) {
			require.Eventually(t, func() bool { return a.Status().Running == 1 }, 5*time.Second, time.Millisecond)
			require.NoError(t, a.ReportDevices(contract.DeviceReport{Container: c3.ID, LauncherStarted: now(), Reserved: now()}))
			page = getPage(t, a)
			return yarn.AllocateResponse{}, nil
		},
		doneAll(c3),
	)
	require.Equal(t, yarn.StatusSucceeded, res.Status, res.Diagnostics)
	bars := timelineSVG(t, page).All(byClass("g", "worker"))
	require.Len(t, bars, 2)
	require.Equal(t, c2.ID, bars[0].Attr("data-container"))
	require.Equal(t, amstatus.StateFailed, bars[0].Attr("data-state"))
	require.Equal(t, "failed", bars[0].All(byClass("text", "note"))[0].Text)
	require.Equal(t, c3.ID, bars[1].Attr("data-container"))
	old, repl := bars[0].All(byClass("rect", "phase")), bars[1].All(byClass("rect", "phase"))
	require.NotEmpty(t, old)
	require.Len(t, repl, 5, "the replacement: asked … devices reserved")
	require.Equal(t, "phase-0", repl[0].Attr("class"))
	oldEnd := old[len(old)-1].Num(t, "x") + old[len(old)-1].Num(t, "width")
	require.Greater(t, repl[0].Num(t, "x"), oldEnd, "the replacement was asked after the failed start's last step")
}
