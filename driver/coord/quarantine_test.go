package coord

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/driver"
)

var xid79 = Quarantine{Reason: "Xid 79 (GPU has fallen off the bus)", Event: "xid", XID: 79, Return: ReturnSeen}
var xid48 = Quarantine{Reason: "Xid 48 (double-bit ECC error)", Event: "xid", XID: 48}

// A quarantined device is granted to no one: not by a launch, not in a
// dry run (the bridge's first look), not as a partition of it, not after
// the launcher that recorded it released its devices or died.
func TestQuarantineNeverGranted(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	recorder := newHost(t, state, liveOwner(t))
	require.NoError(t, recorder.QuarantineDevice(ctxT(t), "gpu", "GPU-a", xid48))
	require.NoError(t, recorder.ReleaseAll(ctxT(t)), "the recorder's release is not the quarantine's end")

	h := newHost(t, state, liveOwner(t))
	for _, dry := range []bool{true, false} {
		got, err := h.Reserve(ctxT(t), "gpu", []string{"GPU-a", "GPU-b"}, 1, dry)
		require.NoError(t, err)
		require.Equal(t, []string{"GPU-b"}, got, "dry run %v", dry)
	}
	_, err := h.Reserve(ctxT(t), "gpu", []string{"GPU-a", "GPU-c"}, 2, false)
	require.ErrorIs(t, err, ErrNoDevicesLeft)
	require.ErrorContains(t, err, "GPU-a held by a quarantine since")
	require.ErrorContains(t, err, "Xid 48 (double-bit ECC error)")
	require.ErrorContains(t, err, "container-launcher probe --clear GPU-a")
	_, err = h.ReserveCandidates(ctxT(t), "mig", []driver.Candidate{{Key: "MIG-a0", Parent: "GPU-a"}}, 1, false)
	require.ErrorIs(t, err, ErrNoDevicesLeft, "a partition of a quarantined GPU")

	// Recorded by a process that has since died: still in force.
	state2 := filepath.Join(t.TempDir(), "state")
	require.NoError(t, newHost(t, state2, deadOwner(t)).QuarantineDevice(ctxT(t), "gpu", "GPU-a", xid79))
	got, err := newHost(t, state2, liveOwner(t)).Reserve(ctxT(t), "gpu", []string{"GPU-a", "GPU-b"}, 1, false)
	require.NoError(t, err)
	require.Equal(t, []string{"GPU-b"}, got)
}

// Clearing works both ways: a cleared device is granted again, and the
// device a worker holds when it is quarantined stays the worker's, then
// goes to no one once freed, until cleared.
func TestQuarantineClear(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	worker := newHost(t, state, liveOwner(t))
	got, err := worker.Reserve(ctxT(t), "gpu", []string{"GPU-a"}, 1, false)
	require.NoError(t, err)
	require.Equal(t, []string{"GPU-a"}, got)

	admin := newHost(t, state, liveOwner(t))
	require.NoError(t, admin.QuarantineDevice(ctxT(t), "gpu", "GPU-a", xid48))
	hs, err := admin.Holders()
	require.NoError(t, err)
	require.Len(t, hs, 2, "the worker's grant and the quarantine")
	q, err := admin.Quarantines()
	require.NoError(t, err)
	require.Len(t, q, 1)
	require.Equal(t, "Xid 48 (double-bit ECC error)", q[0].Quarantine.Reason)

	require.NoError(t, worker.Release(ctxT(t), "gpu"))
	other := newHost(t, state, liveOwner(t))
	_, err = other.Reserve(ctxT(t), "gpu", []string{"GPU-a"}, 1, false)
	require.ErrorIs(t, err, ErrNoDevicesLeft, "freed by its worker, still quarantined")

	require.NoError(t, admin.ClearQuarantine(ctxT(t), "GPU-a"))
	got, err = other.Reserve(ctxT(t), "gpu", []string{"GPU-a"}, 1, false)
	require.NoError(t, err)
	require.Equal(t, []string{"GPU-a"}, got, "cleared: granted again")
	err = admin.ClearQuarantine(ctxT(t), "GPU-a")
	require.ErrorIs(t, err, ErrNotQuarantined)
	require.ErrorContains(t, err, state)

	// And back: quarantined again (its holder keeps it), cleared again.
	require.NoError(t, admin.QuarantineDevice(ctxT(t), "gpu", "GPU-a", xid48))
	require.NoError(t, other.Release(ctxT(t), "gpu"))
	_, err = worker.Reserve(ctxT(t), "gpu", []string{"GPU-a"}, 1, false)
	require.ErrorIs(t, err, ErrNoDevicesLeft)
	require.NoError(t, admin.ClearQuarantine(ctxT(t), "GPU-a"))
	_, err = worker.Reserve(ctxT(t), "gpu", []string{"GPU-a"}, 1, false)
	require.NoError(t, err)
}

// A quarantine returns after the quiet period once the device is seen
// healthy; a new event restarts the quiet period; Xid 79 returns only
// after the device was seen gone and then healthy.
func TestQuarantineReturns(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	h := newHost(t, state, liveOwner(t))
	t0 := time.Date(2026, 12, 7, 1, 0, 0, 0, time.UTC)
	clock := t0
	h.now = func() time.Time { return clock }
	require.NoError(t, h.QuarantineDevice(ctxT(t), "gpu", "GPU-a", xid48))
	require.NoError(t, h.QuarantineDevice(ctxT(t), "gpu", "GPU-b", xid79))
	sights := map[string]Sighting{"GPU-a": SeenHealthy, "GPU-b": SeenHealthy}
	sight := func(k string) Sighting { return sights[k] }
	ret := func() []string {
		t.Helper()
		back, err := h.ReturnQuarantined(ctxT(t), "gpu", sight, 10*time.Minute)
		require.NoError(t, err)
		return back
	}

	clock = t0.Add(5 * time.Minute)
	require.Empty(t, ret(), "within the quiet period")
	require.NoError(t, h.QuarantineDevice(ctxT(t), "gpu", "GPU-a", xid48), "a new event")
	clock = t0.Add(12 * time.Minute)
	require.Empty(t, ret(), "the quiet period runs from the last event")
	clock = t0.Add(16 * time.Minute)
	sights["GPU-a"] = SeenUnhealthy
	require.Empty(t, ret(), "quiet, but its health checks fail")
	sights["GPU-a"] = SeenHealthy
	require.Equal(t, []string{"GPU-a"}, ret())

	clock = t0.Add(10 * time.Hour)
	require.Empty(t, ret(), "Xid 79: quiet and listed healthy, but never seen gone")
	sights["GPU-b"] = SeenGone
	require.Empty(t, ret())
	q, err := h.Quarantines()
	require.NoError(t, err)
	require.Equal(t, ReturnSeenGone, q[0].Quarantine.Return)
	sights["GPU-b"] = SeenHealthy
	require.Equal(t, []string{"GPU-b"}, ret(), "seen again")

	back, err := h.ReturnQuarantined(ctxT(t), "gpu", sight, 0)
	require.NoError(t, err)
	require.Empty(t, back, "a quiet period of 0: only probe --clear")
}

// The state file: a quarantine makes it v4 (a v3 reader refuses it, so it
// grants nothing rather than the quarantined device); files without one
// stay in the version they were and read as before; a quarantine in a file
// that claims an older version, or without a reason, is corrupt.
func TestQuarantineStateVersion(t *testing.T) {
	e := Entry{Resource: "gpu", Key: "GPU-a", Owner: Owner{PID: 7, Start: 9}, Since: time.Date(2026, 12, 7, 1, 0, 0, 0, time.UTC)}
	q := e
	q.Quarantine = &Quarantine{Reason: "Xid 79", Event: "xid", XID: 79, Last: e.Since, Return: ReturnSeenGone}
	b := encodeState([]Entry{e, q})
	require.True(t, strings.HasPrefix(string(b), stateMagic+" v4 "), "%s", b)
	got, err := decodeState(b)
	require.NoError(t, err)
	require.Equal(t, []Entry{e, q}, got)
	require.True(t, strings.HasPrefix(string(encodeState([]Entry{e})), stateMagic+" v1 "), "no quarantine: the oldest version")

	old, err := os.ReadFile(filepath.Join("testdata", "state-v1"))
	require.NoError(t, err)
	_, err = decodeState(old)
	require.NoError(t, err, "an old file reads")

	body := b[strings.IndexByte(string(b), '\n')+1:]
	_, err = decodeState(append(headerFor(stateV3, body), body...))
	require.ErrorIs(t, err, errStateFormat)
	require.ErrorContains(t, err, "bad quarantine")

	noReason := strings.Replace(string(body), `"reason":"Xid 79"`, `"reason":""      `, 1)
	_, err = decodeState(append(headerFor(stateV4, []byte(noReason)), noReason...))
	require.ErrorIs(t, err, errStateFormat)

	// A torn v4 file is corrupt: nothing is granted, least of all GPU-a.
	state := filepath.Join(t.TempDir(), "state")
	require.NoError(t, os.WriteFile(state, b[:len(b)-4], 0o644))
	_, err = newHost(t, state, liveOwner(t)).Reserve(ctxT(t), "gpu", []string{"GPU-a", "GPU-b"}, 1, false)
	require.ErrorIs(t, err, ErrCorruptState)
}

type listing []driver.Device

func (l *listing) Enumerate(context.Context) ([]driver.Device, error) { return *l, nil }

// Discovery's health checks feed the same quarantine: a GPU they find
// unhealthy once is granted to no one, even when the next discovery finds
// it healthy, until the quiet period has passed and it is healthy then.
// A dry run (probe) records nothing.
func TestDiscoveryHealthFeedsQuarantine(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	h := newHost(t, state, liveOwner(t))
	t0 := time.Date(2026, 12, 7, 1, 0, 0, 0, time.UTC)
	clock := t0
	h.now = func() time.Time { return clock }
	l := &listing{{Key: "GPU-a"}, {Key: "GPU-b", Unhealthy: "row remapping pending"}}
	ret := driver.QuarantineReturn{Quiet: 10 * time.Minute, Probed: true}

	dry := driver.NewCoordinated("gpu", l, driver.CoordinatedOptions{Reserver: h, DryRun: true, Return: ret})
	_, err := dry.Discover(ctxT(t), 1)
	require.NoError(t, err)
	q, err := h.Quarantines()
	require.NoError(t, err)
	require.Empty(t, q, "a dry run records nothing")

	c := driver.NewCoordinated("gpu", l, driver.CoordinatedOptions{Reserver: h, Return: ret})
	_, err = c.Discover(ctxT(t), 1)
	require.NoError(t, err)
	q, err = h.Quarantines()
	require.NoError(t, err)
	require.Len(t, q, 1)
	require.Equal(t, "GPU-b", q[0].Key)
	require.Equal(t, EventHealthCheck, q[0].Quarantine.Event)
	require.Equal(t, "row remapping pending", q[0].Quarantine.Reason)
	require.NoError(t, c.Release(ctxT(t)))

	(*l)[1].Unhealthy = "" // healthy again, too soon
	h2 := newHost(t, state, liveOwner(t))
	h2.now = func() time.Time { return clock } // the same host's clock: the quiet period counts from t0
	other := driver.NewCoordinated("gpu", l, driver.CoordinatedOptions{Reserver: h2, Return: ret})
	_, err = other.Discover(ctxT(t), 2)
	require.ErrorIs(t, err, ErrNoDevicesLeft)
	require.ErrorContains(t, err, "GPU-b held by a quarantine")

	clock = t0.Add(11 * time.Minute)
	infos, err := c.Discover(ctxT(t), 2)
	require.NoError(t, err, "quiet and healthy: it returns")
	require.Len(t, infos, 2)
	q, err = h.Quarantines()
	require.NoError(t, err)
	require.Empty(t, q)
}
