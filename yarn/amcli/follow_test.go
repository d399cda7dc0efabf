package amcli

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/resources"
	"github.com/xres/xres/yarn"
	"github.com/xres/xres/yarn/amstatus"
)

// am submit's progress: state changes with their time, workers
// running/wanted whenever that changes, and the final table of workers,
// NodeManagers and devices.
func TestFollowerProgressAndSummary(t *testing.T) {
	var out strings.Builder
	clock := time.Date(2026, 12, 2, 0, 12, 41, 0, time.UTC)
	statuses := []amstatus.Status{
		{Workers: 4, Running: 2},
		{Workers: 4, Running: 2},
		{Workers: 4, Running: 4, Restarts: 1, Failed: 1},
	}
	n := 0
	f := &follower{w: &out, app: "application_1_0001", now: func() time.Time { clock = clock.Add(time.Second); return clock }, // one second per line printed
		status: func(_ context.Context, u string) *amstatus.Status {
			require.Equal(t, "http://rm/proxy/", u)
			st := statuses[min(n, len(statuses)-1)]
			n++
			return &st
		}}
	ctx := context.Background()
	f.report(ctx, yarn.ApplicationReport{State: "ACCEPTED"})
	f.report(ctx, yarn.ApplicationReport{State: "ACCEPTED"})
	for range 3 {
		f.report(ctx, yarn.ApplicationReport{State: "RUNNING", TrackingURL: "http://rm/proxy/"})
	}
	final := yarn.ApplicationReport{State: "FINISHED", FinalStatus: "SUCCEEDED", Diagnostics: withWorkers("4 workers succeeded (1 replaced)", []amstatus.WorkerStatus{
		{Container: "container_1_0001_01_000002", Node: "127.0.0.2:45454", State: amstatus.StateSucceeded, ExitStatus: exitp(0),
			Devices: map[string][]resources.Properties{"gpu": {{"index": "1"}}}},
		{Container: "container_1_0001_01_000003", Node: "127.0.0.3:45454", State: amstatus.StateFailed, ExitStatus: exitp(212)},
	})}
	f.report(ctx, final)
	diag := f.summary(final)
	require.Equal(t, "4 workers succeeded (1 replaced)", diag)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Equal(t, []string{
		"00:12:42 application_1_0001 ACCEPTED",
		"00:12:43 application_1_0001 RUNNING tracking URL http://rm/proxy/",
		"00:12:44 workers: 2/4 running",
		"00:12:45 workers: 4/4 running, 1 replaced, 1 failed",
		"00:12:46 application_1_0001 FINISHED",
		"workers:",
	}, lines[:6])
	require.Regexp(t, `^  WORKER +NODEMANAGER +STATE +EXIT +DEVICES$`, lines[6])
	require.Regexp(t, `^  container_1_0001_01_000002 +127\.0\.0\.2:45454 +SUCCEEDED +0 +gpu=1$`, lines[7])
	require.Regexp(t, `^  container_1_0001_01_000003 +127\.0\.0\.3:45454 +FAILED +212 +-$`, lines[8])
	require.Contains(t, lines[9], "container_1_0001_01_000003 failed with exit 212: container-launcher: discovery")
}

// With named groups the progress is per group; under reactive mode it
// shows the minimum; the final table has a group column.
func TestFollowerGroupsAndReactive(t *testing.T) {
	gpu := yarn.Resource{MemoryMB: 8192, VCores: 1, Extra: map[string]int64{"yarn.io/gpu": 4}}
	statuses := []amstatus.Status{
		{Workers: 5, Minimum: 5, Running: 4, Groups: []amstatus.GroupStatus{
			{Name: "trainer", Workers: 2, Minimum: 2, Running: 1, Profile: gpu},
			{Name: "prep", Workers: 3, Minimum: 3, Running: 3}}},
		{Workers: 5, Minimum: 3, Running: 5, Restarts: 1, Groups: []amstatus.GroupStatus{
			{Name: "trainer", Workers: 2, Minimum: 1, Reactive: true, Running: 2, Restarts: 1},
			{Name: "prep", Workers: 3, Minimum: 2, Reactive: true, Running: 3}}},
		// No groups, reactive: the one unnamed group.
		{Workers: 4, Minimum: 2, Running: 2, Groups: []amstatus.GroupStatus{{Workers: 4, Minimum: 2, Reactive: true, Running: 2}}},
		// An unnamed group that is not reactive: as before.
		{Workers: 4, Minimum: 4, Running: 3, Groups: []amstatus.GroupStatus{{Workers: 4, Minimum: 4, Running: 3}}},
	}
	var out strings.Builder
	n := 0
	f := &follower{w: &out, app: "application_1_0001", now: func() time.Time { return time.Date(2026, 12, 2, 0, 12, 41, 0, time.UTC) },
		status: func(context.Context, string) *amstatus.Status { st := statuses[n]; n++; return &st }}
	running := yarn.ApplicationReport{State: "RUNNING", TrackingURL: "http://rm/proxy/"}
	for range statuses {
		f.report(context.Background(), running)
	}
	final := yarn.ApplicationReport{State: "FINISHED", FinalStatus: "SUCCEEDED", Diagnostics: withWorkers("5 workers succeeded (1 replaced)", []amstatus.WorkerStatus{
		{Container: "container_1_0001_01_000002", Node: "127.0.0.2:45454", Group: "trainer", State: amstatus.StateSucceeded, ExitStatus: exitp(0),
			Devices: map[string][]resources.Properties{"gpu": {{"index": "0"}, {"index": "1"}}}},
		{Container: "container_1_0001_01_000003", Node: "127.0.0.3:45454", Group: "prep", State: amstatus.StateSucceeded, ExitStatus: exitp(0)},
	})}
	f.report(context.Background(), final)
	require.Equal(t, "5 workers succeeded (1 replaced)", f.summary(final))
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Equal(t, []string{
		"00:12:41 application_1_0001 RUNNING tracking URL http://rm/proxy/",
		"00:12:41 workers: trainer 1/2, prep 3/3 running",
		"00:12:41 workers: trainer 2/2 (minimum 1, reactive), prep 3/3 (minimum 2, reactive) running, 1 replaced",
		"00:12:41 workers: 2/4 running (minimum 2, reactive)",
		"00:12:41 workers: 3/4 running",
		"00:12:41 application_1_0001 FINISHED",
		"workers:",
	}, lines[:7])
	require.Regexp(t, `^  WORKER +GROUP +NODEMANAGER +STATE +EXIT +DEVICES$`, lines[7])
	require.Regexp(t, `^  container_1_0001_01_000002 +trainer +127\.0\.0\.2:45454 +SUCCEEDED +0 +gpu=0,1$`, lines[8])
	require.Regexp(t, `^  container_1_0001_01_000003 +prep +127\.0\.0\.3:45454 +SUCCEEDED +0 +-$`, lines[9])
	require.Len(t, lines, 10)
}
