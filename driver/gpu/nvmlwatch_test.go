//go:build cgo && linux

package gpu

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/stretchr/testify/require"
)

type waitResult struct {
	data nvml.EventData
	ret  nvml.Return
}

// watchNVML runs nvmlWatch over devices whose event set answers waits in
// turn (then the watch is cancelled), and returns the lines it wrote.
func watchNVML(t *testing.T, devices []*mock.Device, waits []waitResult) ([]HealthEvent, error, map[*mock.Device]uint64) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	registered := map[*mock.Device]uint64{}
	set := &mock.EventSet{
		FreeFunc: func() nvml.Return { return nvml.SUCCESS },
		WaitFunc: func(uint32) (nvml.EventData, nvml.Return) {
			if len(waits) == 0 {
				cancel()
				return nvml.EventData{}, nvml.ERROR_TIMEOUT
			}
			w := waits[0]
			waits = waits[1:]
			return w.data, w.ret
		},
	}
	var devs []nvml.Device
	for _, d := range devices {
		d := d
		if d.RegisterEventsFunc == nil {
			d.RegisterEventsFunc = func(types uint64, s nvml.EventSet) nvml.Return {
				require.Same(t, set, s)
				registered[d] = types
				return nvml.SUCCESS
			}
		}
		if d.GetSupportedEventTypesFunc == nil {
			d.GetSupportedEventTypesFunc = func() (uint64, nvml.Return) { return nvml.EventTypeAll, nvml.SUCCESS }
		}
		devs = append(devs, d)
	}
	lib, shutdowns := fakeNVML(nvml.SUCCESS, devs...)
	w := &mockWatchLib{Interface: lib, set: set}
	var out bytes.Buffer
	at := time.Date(2026, 12, 7, 1, 0, 0, 0, time.UTC)
	err := nvmlWatch(ctx, w, &out, func() time.Time { return at })
	require.Equal(t, 1, *shutdowns, "NVML is shut down")
	var got []HealthEvent
	rerr := ReadHealthEvents(&out, func(e HealthEvent) error { got = append(got, e); return nil })
	require.ErrorIs(t, rerr, ErrWatchLost)
	return got, err, registered
}

type mockWatchLib struct {
	*mock.Interface
	set nvml.EventSet
}

func (m *mockWatchLib) EventSetCreate() (nvml.EventSet, nvml.Return) { return m.set, nvml.SUCCESS }

func TestNVMLWatch(t *testing.T) {
	gpu0, gpu1 := fakeH100(0), fakeH100(1)
	noEvents := fakeH100(2)
	noEvents.GetSupportedEventTypesFunc = func() (uint64, nvml.Return) { return nvml.EventTypePState, nvml.SUCCESS }
	got, err, reg := watchNVML(t, []*mock.Device{gpu0, gpu1, noEvents}, []waitResult{
		{ret: nvml.ERROR_TIMEOUT},
		{data: nvml.EventData{Device: gpu1, EventType: nvml.EventTypeXidCriticalError, EventData: 79}},
		{data: nvml.EventData{Device: gpu0, EventType: nvml.EventTypeDoubleBitEccError}},
		{data: nvml.EventData{Device: gpu0, EventType: nvml.EventTypeXidCriticalError, EventData: 13}},
		{ret: nvml.ERROR_GPU_IS_LOST},
	})
	require.NoError(t, err)
	require.Equal(t, map[*mock.Device]uint64{gpu0: watchedEvents, gpu1: watchedEvents}, reg, "Xid and double-bit ECC events on each GPU that has them")
	require.Len(t, got, 5)
	require.Equal(t, EventReady, got[0].Type)
	require.Equal(t, []string{"GPU-h100-0", "GPU-h100-1"}, got[0].Watched)
	require.Equal(t, []string{"GPU-h100-2"}, got[0].Unwatched, "a GPU without Xid events is said to be unwatched")
	require.Equal(t, HealthEvent{Type: EventXID, UUID: "GPU-h100-1", Index: 1, Minor: 3, XID: 79, Time: got[1].Time}, got[1])
	require.Equal(t, HealthEvent{Type: EventDoubleBitECC, UUID: "GPU-h100-0", Index: 0, Minor: 1, Time: got[2].Time}, got[2])
	require.Equal(t, uint64(13), got[3].XID, "application Xids are streamed too: the reader's param decides")
	require.Equal(t, HealthEvent{Type: EventGPULost, Index: -1, Minor: -1, Time: got[4].Time}, got[4], "lost, and no GPU says it is")
}

func TestNVMLWatchGPULost(t *testing.T) {
	gpu0, gpu1 := fakeH100(0), fakeH100(1)
	gpu1.GetMemoryInfoFunc = func() (nvml.Memory, nvml.Return) { return nvml.Memory{}, nvml.ERROR_GPU_IS_LOST }
	got, err, _ := watchNVML(t, []*mock.Device{gpu0, gpu1}, []waitResult{{ret: nvml.ERROR_GPU_IS_LOST}})
	require.NoError(t, err)
	require.Len(t, got, 2)
	require.Equal(t, HealthEvent{Type: EventGPULost, UUID: "GPU-h100-1", Index: 1, Minor: 3, Time: got[1].Time}, got[1])

	// NVML cannot say which: every GPU may be (the reader quarantines all).
	got, err, _ = watchNVML(t, []*mock.Device{fakeH100(0)}, []waitResult{{ret: nvml.ERROR_GPU_IS_LOST}})
	require.NoError(t, err)
	require.Equal(t, EventGPULost, got[1].Type)
	require.Empty(t, got[1].UUID)
}

// NVML failing under the watch is reported (an error line, an error), never
// a quiet end that reads as "no events".
func TestNVMLWatchFails(t *testing.T) {
	got, err, _ := watchNVML(t, []*mock.Device{fakeH100(0)}, []waitResult{{ret: nvml.ERROR_UNKNOWN}})
	require.ErrorContains(t, err, "nvml event wait: ERROR_UNKNOWN")
	require.Len(t, got, 1, "ready; then the error line ends the stream")

	bad := fakeH100(0)
	bad.RegisterEventsFunc = func(uint64, nvml.EventSet) nvml.Return { return nvml.ERROR_UNKNOWN }
	got, err, _ = watchNVML(t, []*mock.Device{bad}, nil)
	require.ErrorContains(t, err, "nvml device 0 (GPU-h100-0): register events: ERROR_UNKNOWN")
	require.Empty(t, got)

	lib, _ := fakeNVML(nvml.ERROR_LIBRARY_NOT_FOUND)
	var out bytes.Buffer
	err = nvmlWatch(context.Background(), &mockWatchLib{Interface: lib}, &out, time.Now)
	require.ErrorIs(t, err, ErrNVMLUnavailable)
	require.Contains(t, out.String(), `"type":"error"`)
}
