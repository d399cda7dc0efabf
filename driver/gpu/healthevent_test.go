package gpu

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/driver"
)

func TestParseHealthEvent(t *testing.T) {
	at := time.Date(2026, 12, 7, 1, 2, 3, 456e6, time.UTC)
	for _, tc := range []struct {
		name, line string
		want       HealthEvent
		err        string
	}{
		{"xid", `{"type":"xid","uuid":"GPU-a","index":1,"minor":3,"xid":79,"time":"2026-12-07T01:02:03.456Z"}`,
			HealthEvent{Type: EventXID, UUID: "GPU-a", Index: 1, Minor: 3, XID: 79, Time: at}, ""},
		{"ecc", `{"type":"ecc-double-bit","uuid":"GPU-a","index":0,"minor":0,"time":"2026-12-07T01:02:03.456Z"}`,
			HealthEvent{Type: EventDoubleBitECC, UUID: "GPU-a", Time: at}, ""},
		{"unknown field from a newer helper", `{"type":"gpu-lost","index":-1,"minor":-1,"time":"2026-12-07T01:02:03.456Z","new":1}`,
			HealthEvent{Type: EventGPULost, Index: -1, Minor: -1, Time: at}, ""},
		{"unknown type", `{"type":"sbe","uuid":"GPU-a","time":"2026-12-07T01:02:03.456Z"}`, HealthEvent{}, `unknown type "sbe"`},
		{"xid without uuid", `{"type":"xid","xid":79,"time":"2026-12-07T01:02:03.456Z"}`, HealthEvent{}, "xid event without a uuid"},
		{"xid without xid", `{"type":"xid","uuid":"GPU-a","time":"2026-12-07T01:02:03.456Z"}`, HealthEvent{}, "xid event without an xid"},
		{"no time", `{"type":"xid","uuid":"GPU-a","xid":48}`, HealthEvent{}, "without a time"},
		{"garbage", `Segmentation fault`, HealthEvent{}, "not a JSON object"},
		{"bad json", `{"type":`, HealthEvent{}, "unexpected end"},
		{"negative minor", `{"type":"xid","uuid":"GPU-a","xid":48,"minor":-7,"time":"2026-12-07T01:02:03.456Z"}`, HealthEvent{}, "negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseHealthEvent([]byte(tc.line))
			if tc.err != "" {
				require.ErrorIs(t, err, ErrHealthStream)
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.True(t, tc.want.Time.Equal(got.Time))
			got.Time = tc.want.Time
			require.Equal(t, tc.want, got)
		})
	}
}

// Each critical Xid takes its GPU out of service; the application's
// (NVIDIA's device plugin's default list) do not, nor do they once the
// param lists others.
func TestCriticalXIDs(t *testing.T) {
	app, err := ParseXIDs("k", DefaultAppXIDs)
	require.NoError(t, err)
	require.Equal(t, XIDSet{13, 31, 43, 45, 68, 109}, app)
	for _, x := range []uint64{48, 63, 64, 74, 79, 92, 94, 95, 119, 120} {
		require.True(t, app.Critical(HealthEvent{Type: EventXID, XID: x}), "Xid %d", x)
	}
	for _, x := range app {
		require.False(t, app.Critical(HealthEvent{Type: EventXID, XID: x}), "application Xid %d", x)
	}
	require.True(t, app.Critical(HealthEvent{Type: EventDoubleBitECC}))
	require.True(t, app.Critical(HealthEvent{Type: EventGPULost}))
	require.False(t, app.Critical(HealthEvent{Type: EventReady}))

	mine, err := ParseXIDs("k", " 94, 13 ,94")
	require.NoError(t, err)
	require.Equal(t, XIDSet{13, 94}, mine)
	require.False(t, mine.Critical(HealthEvent{Type: EventXID, XID: 94}))
	require.True(t, mine.Critical(HealthEvent{Type: EventXID, XID: 31}))
	none, err := ParseXIDs("k", "")
	require.NoError(t, err)
	require.True(t, none.Critical(HealthEvent{Type: EventXID, XID: 13}))

	_, err = ParseXIDs("external-resource.gpu.param.health.application-xids", "13,x")
	require.EqualError(t, err, `external-resource.gpu.param.health.application-xids: "x" is not an Xid (a positive number)`)

	require.Equal(t, "Xid 79 (GPU has fallen off the bus) on GPU-a (index 2)", HealthEvent{Type: EventXID, XID: 79, UUID: "GPU-a", Index: 2}.Describe())
}

// A stream never ends well: its end, an unreadable line or an error line is
// the watch lost, said with what broke.
func TestReadHealthEvents(t *testing.T) {
	ready := `{"type":"ready","index":-1,"minor":-1,"time":"2026-12-07T01:02:03Z","watched":["GPU-a"]}` + "\n"
	xid := `{"type":"xid","uuid":"GPU-a","index":0,"minor":0,"xid":48,"time":"2026-12-07T01:02:04Z"}` + "\n"
	var got []HealthEvent
	collect := func(e HealthEvent) error { got = append(got, e); return nil }

	err := ReadHealthEvents(strings.NewReader(ready+"\n"+xid), collect)
	require.ErrorIs(t, err, ErrWatchLost)
	require.ErrorContains(t, err, "the stream ended after 3 lines")
	require.Len(t, got, 2)
	require.Equal(t, uint64(48), got[1].XID)

	err = ReadHealthEvents(strings.NewReader(ready+"panic: oops\n"+xid), collect)
	require.ErrorIs(t, err, ErrWatchLost)
	require.ErrorIs(t, err, ErrHealthStream)
	require.ErrorContains(t, err, "line 2")

	err = ReadHealthEvents(strings.NewReader(ready+`{"type":"error","index":-1,"minor":-1,"time":"2026-12-07T01:02:03Z","detail":"nvml event wait: ERROR_UNKNOWN"}`+"\n"+xid), collect)
	require.ErrorIs(t, err, ErrWatchLost)
	require.ErrorContains(t, err, "nvml event wait: ERROR_UNKNOWN")
}

// FuzzHealthEvent: any line is read or refused cleanly; what is read
// survives MarshalLine and a second read unchanged.
func FuzzHealthEvent(f *testing.F) {
	f.Add([]byte(`{"type":"xid","uuid":"GPU-a","index":1,"minor":3,"xid":79,"time":"2026-12-07T01:02:03.456Z"}`))
	f.Add([]byte(`{"type":"ready","index":-1,"minor":-1,"time":"2026-12-07T01:02:03Z","watched":["GPU-a"],"unwatched":["GPU-b"]}`))
	f.Add([]byte(`{"type":"gpu-lost","index":-1,"minor":-1,"time":"2026-12-07T01:02:03Z"}`))
	f.Add([]byte(`{"type":"error","index":-1,"minor":-1,"time":"2026-12-07T01:02:03Z","detail":"x"}`))
	f.Add([]byte(`{"type":"xid","uuid":"","xid":18446744073709551615,"time":"0001-01-01T00:00:00Z"}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		e, err := ParseHealthEvent(line)
		if err != nil {
			require.ErrorIs(t, err, ErrHealthStream)
			return
		}
		again, err := ParseHealthEvent(e.MarshalLine())
		require.NoError(t, err)
		require.True(t, e.Time.Equal(again.Time))
		again.Time = e.Time
		require.Equal(t, e, again)
		_ = e.Describe()
	})
}

// What the launcher acts on: critical or not by health.application-xids
// (a bad value names the key), Xid 79 and a lost GPU back only once seen.
func TestDeviceEvent(t *testing.T) {
	app, err := appXIDs(driver.Options{Resource: "gpu"})
	require.NoError(t, err)
	at := time.Date(2026, 12, 7, 1, 0, 0, 0, time.UTC)
	e := deviceEvent(HealthEvent{Type: EventXID, UUID: "GPU-a", XID: 79, Time: at}, app)
	require.Equal(t, driver.DeviceEvent{Key: "GPU-a", Critical: true, Event: "xid", XID: 79, Reason: "Xid 79 (GPU has fallen off the bus) on GPU-a (index 0)", UntilSeen: true, Time: at}, e)
	require.False(t, deviceEvent(HealthEvent{Type: EventXID, UUID: "GPU-a", XID: 31, Time: at}, app).Critical)
	e = deviceEvent(HealthEvent{Type: EventXID, UUID: "GPU-a", XID: 48, Time: at}, app)
	require.True(t, e.Critical)
	require.False(t, e.UntilSeen)
	require.True(t, deviceEvent(HealthEvent{Type: EventGPULost, Time: at}, app).UntilSeen)

	_, err = appXIDs(driver.Options{Resource: "gpu", Params: map[string]string{"health.application-xids": "13,zero"}})
	require.ErrorIs(t, err, driver.ErrInvalidParam)
	require.ErrorContains(t, err, "external-resource.gpu.param.health.application-xids")
}

// A bad health.action or health.application-xids is refused by the
// factory's check (am submit, every launcher: exit 211), naming the key.
func TestHealthParamsChecked(t *testing.T) {
	require.NoError(t, CheckParams("gpu", map[string]string{"health.action": "notify", "health.application-xids": "13"}))
	err := CheckParams("gpu", map[string]string{"health.action": "reboot"})
	require.ErrorIs(t, err, driver.ErrInvalidParam)
	require.ErrorContains(t, err, "external-resource.gpu.param.health.action")
	err = CheckParams("gpu", map[string]string{"health.application-xids": "x"})
	require.ErrorIs(t, err, driver.ErrInvalidParam)
	require.ErrorContains(t, err, "external-resource.gpu.param.health.application-xids")
}
