package amstatus

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/resources/contract"
)

// A launcher's health report lands on its worker's timeline, and
// CollectDeviceEvents lists it with the host and the replacement: the first
// worker of the same group allocated after the event (not one of another
// group, not one allocated before); a notify event has no replacement.
func TestCollectDeviceEvents(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 1, 0, 0, 0, time.UTC)
	ev := contract.HealthEvent{Resource: "gpu", Device: "GPU-a", Event: "xid", XID: 94, Reason: "Xid 94 (contained ECC error) on GPU-a (index 0)", Action: "replace", Time: t0.Add(10 * time.Second)}
	var bad Marks
	bad.Set(MarkAllocated, t0)
	bad.Reported(contract.DeviceReport{Container: "c2", CommandStarted: t0.Add(time.Second)})
	bad.Reported(contract.DeviceReport{Container: "c2", Health: []contract.HealthEvent{ev}})
	tl := bad.Timeline()
	require.Equal(t, []contract.HealthEvent{ev}, tl.DeviceEvents)
	require.Equal(t, t0.Add(time.Second), tl.CommandStarted, "a health report keeps the marks")

	at := func(d time.Duration) *Timeline { return &Timeline{Allocated: t0.Add(d)} }
	notify := ev
	notify.Action, notify.Time, notify.Device = "notify", t0.Add(20*time.Second), "GPU-b"
	st := Status{Containers: []WorkerStatus{
		{Container: "c1", Host: "h1", Group: "g", Timeline: at(0)},
		{Container: "c2", Host: "h2", Group: "g", Timeline: tl},
		{Container: "c4", Host: "h1", Group: "g", Timeline: at(15 * time.Second)},
		{Container: "c3", Host: "h1", Group: "other", Timeline: at(11 * time.Second)},
		{Container: "c5", Host: "h2", Group: "g", Timeline: at(12 * time.Second)},
		{Container: "c6", Host: "h3", Group: "g", Timeline: &Timeline{Allocated: t0, DeviceEvents: []contract.HealthEvent{notify}}},
		{Container: "c7", Host: "h3", Group: "g"},
	}}
	st.CollectDeviceEvents()
	require.Equal(t, []DeviceEvent{
		{HealthEvent: ev, Container: "c2", Host: "h2", Group: "g", ReplacedBy: "c5"},
		{HealthEvent: notify, Container: "c6", Host: "h3", Group: "g"},
	}, st.DeviceEvents)

	st.Containers = st.Containers[:1]
	st.CollectDeviceEvents()
	require.Empty(t, st.DeviceEvents, "recomputed from the listed workers")
}

// A launcher reporting event after event keeps the first maxHealthEvents.
func TestMarksKeepFewHealthEvents(t *testing.T) {
	var m Marks
	m.Set(MarkAllocated, time.Unix(1, 0))
	for i := 0; i < 3*maxHealthEvents; i++ {
		m.Reported(contract.DeviceReport{Health: []contract.HealthEvent{{XID: uint64(i)}}})
	}
	evs := m.Timeline().DeviceEvents
	require.Len(t, evs, maxHealthEvents)
	require.Equal(t, uint64(0), evs[0].XID)
}

// A health report is counted apart from the full ones: a port report signed
// just before it and arriving after it is still taken; a replayed health
// report is refused.
func TestReportSeqsHealthApart(t *testing.T) {
	var s ReportSeqs
	health := contract.DeviceReport{Container: "c", Seq: 10, Health: []contract.HealthEvent{{XID: 94}}}
	require.NoError(t, s.Take(health))
	require.NoError(t, s.Take(contract.DeviceReport{Container: "c", Seq: 9, Port: 4000}), "the port report signed first")
	require.ErrorIs(t, s.Take(health), ErrStaleReport)
}
