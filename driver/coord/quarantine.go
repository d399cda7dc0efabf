package coord

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/xres/xres/driver"
	"github.com/xres/xres/resources/jsonfile"
	"github.com/xres/xres/resources/params"
)

// Quarantine records that a device is unfit (docs/gpu-health.md): a
// critical GPU health event seen while a worker ran (xres-nvml watch), or
// discovery's health checks. While the state holds it, the device is
// granted to nobody on the host: launches, the discovery bridge and the
// grants written to Flink's coordination file all go through choose.
type Quarantine struct {
	// Reason says why, for people: "Xid 79 (GPU has fallen off the bus)".
	Reason string `json:"reason"`
	// Event is what reported it: a HealthEvent type ("xid",
	// "ecc-double-bit", "gpu-lost") or "health-check" (discovery).
	Event string `json:"event,omitempty"`
	XID   uint64 `json:"xid,omitempty"`
	// Last is when the last critical event came (the quiet period runs
	// from it); the entry's Since is the first.
	Last time.Time `json:"last"`
	// Return is how it ends by itself: ReturnQuiet, ReturnSeen or
	// ReturnSeenGone.
	Return string `json:"return"`
}

// How a quarantine ends by itself (besides probe --clear).
const (
	// ReturnQuiet: once the quiet period has passed since its last event
	// and the device is seen healthy.
	ReturnQuiet = "quiet"
	// ReturnSeen (Xid 79, a GPU fallen off the bus): only once the device
	// has been seen gone (not listed, or lost) and then healthy again,
	// never by the quiet period alone.
	ReturnSeen = "seen"
	// ReturnSeenGone: ReturnSeen, and a discovery has seen it gone.
	ReturnSeenGone = "seen-gone"
)

// untilSeen: the quarantine returns only once the device is seen again.
func (q Quarantine) untilSeen() bool { return q.Return == ReturnSeen || q.Return == ReturnSeenGone }

// EventHealthCheck is the Event of a quarantine that discovery's health
// checks (param.health.enabled) recorded.
const EventHealthCheck = "health-check"

// ErrQuarantined is matched, beside ErrNoDevicesLeft, by a Reserve that
// failed because a candidate is quarantined.
var ErrQuarantined = errors.New("device quarantined")

type quarantinedErr struct{ err error }

func (q quarantinedErr) Error() string   { return q.err.Error() }
func (q quarantinedErr) Unwrap() []error { return []error{q.err, ErrQuarantined} }

// ErrNotQuarantined: ClearQuarantine found no quarantine of the device.
var ErrNotQuarantined = errors.New("device is not quarantined")

func appendQuarantine(b []byte, q Quarantine) []byte {
	b = append(b, `{"reason":`...)
	b = jsonfile.AppendString(b, q.Reason)
	if q.Event != "" {
		b = append(b, `,"event":`...)
		b = jsonfile.AppendString(b, q.Event)
	}
	if q.XID != 0 {
		b = append(b, `,"xid":`...)
		b = strconv.AppendUint(b, q.XID, 10)
	}
	b = append(b, `,"last":`...)
	b = jsonfile.AppendTime(b, q.Last)
	b = append(b, `,"return":`...)
	b = jsonfile.AppendString(b, q.Return)
	return append(b, '}')
}

func readQuarantine(r *jsonfile.Reader) (*Quarantine, error) {
	if null, err := r.Null(); null || err != nil {
		return nil, err
	}
	q := &Quarantine{}
	err := r.Object(func(key string) (err error) {
		switch key {
		case "reason":
			q.Reason, err = r.String()
		case "event":
			q.Event, err = r.String()
		case "xid":
			q.XID, err = r.Uint64()
		case "last":
			q.Last, err = r.Time()
		case "return":
			q.Return, err = r.String()
		default:
			err = jsonfile.Unknown(key)
		}
		return err
	})
	return q, err
}

// QuarantineDevice records (or renews: Last, Reason) the quarantine of the
// device key of resource, under the lock. A device held by a worker stays
// held by it; it is granted to no one else, nor again once freed.
func (h *Host) QuarantineDevice(ctx context.Context, resource, key string, q Quarantine) error {
	if key == "" || q.Reason == "" {
		return fmt.Errorf("quarantine %s: a device key and a reason are needed", resource)
	}
	now := h.now().UTC()
	if q.Last.IsZero() {
		q.Last = now
	}
	if q.Return == "" {
		q.Return = ReturnQuiet
	}
	err := h.locked(ctx, func() error {
		entries, err := h.read()
		if err != nil {
			return err
		}
		for i, e := range entries {
			if e.Quarantine != nil && e.Key == key {
				if old := *e.Quarantine; old.untilSeen() && !q.untilSeen() {
					q.Return = old.Return // a later event does not shorten an Xid 79's
				} else if old.Return == ReturnSeenGone && q.Return == ReturnSeen {
					q.Return = ReturnSeenGone
				}
				entries[i].Quarantine = &q
				return h.write(entries)
			}
		}
		entries = append(entries, Entry{Resource: resource, Key: key, Owner: h.owner, Since: now.Truncate(time.Second), Quarantine: &q})
		return h.write(entries)
	})
	if err != nil {
		return fmt.Errorf("quarantine %s %s: %w", resource, key, err)
	}
	h.log.WithFields(logrus.Fields{"resource": resource, "device": key, "reason": q.Reason, "state_file": h.state}).Warn("device quarantined host-wide: granted to no one until it returns")
	return nil
}

// Quarantines lists the quarantined devices (entries with Quarantine set),
// without the lock.
func (h *Host) Quarantines() ([]Entry, error) {
	entries, err := h.readUnlocked(context.Background())
	if err != nil {
		return nil, err
	}
	var out []Entry
	for _, e := range entries {
		if e.Quarantine != nil {
			out = append(out, e)
		}
	}
	return out, nil
}

// ClearQuarantine ends the quarantine of key (`container-launcher probe
// --clear`): the device is granted again. ErrNotQuarantined when there was
// none.
func (h *Host) ClearQuarantine(ctx context.Context, key string) error {
	found := false
	err := h.modify(ctx, func(entries []Entry) ([]Entry, bool) {
		keep := entries[:0:0]
		for _, e := range entries {
			if e.Quarantine != nil && e.Key == key {
				found = true
				continue
			}
			keep = append(keep, e)
		}
		return keep, found
	}, nil)
	if err != nil {
		return fmt.Errorf("clear quarantine of %s: %w", key, err)
	}
	if !found {
		return fmt.Errorf("clear quarantine of %s: %w (state file %s)", key, ErrNotQuarantined, h.state)
	}
	h.log.WithFields(logrus.Fields{"device": key, "state_file": h.state}).Info("device quarantine cleared")
	return nil
}

// returnDecision: whether q returns now (back), or, an Xid 79's, is now
// seen gone (gone).
func returnDecision(q Quarantine, s Sighting, now time.Time, quiet time.Duration) (back, gone bool) {
	switch {
	case q.Return == ReturnSeen && s == SeenGone:
		return false, true
	case s == SeenHealthy && (q.Return == ReturnSeenGone || !q.untilSeen() && now.Sub(q.Last) >= quiet):
		return true, false
	}
	return false, false
}

// Sighting is what one discovery saw of a quarantined device.
type Sighting int

const (
	// SeenGone: not listed, or listed as lost.
	SeenGone Sighting = iota
	// SeenUnhealthy: listed, and a health check fails.
	SeenUnhealthy
	// SeenHealthy: listed, and every health check passes (the probe).
	SeenHealthy
)

// ReturnQuarantined ends the quarantines that have earned it, given what a
// discovery saw of each device (sight; a device it does not name counts as
// gone): a quarantine returns once quiet has passed since its last event
// and the device is seen healthy; one ReturnSeen (Xid 79) returns only once
// it was seen gone and then healthy, whatever the quiet period. quiet <= 0
// returns nothing (only probe --clear does). It returns the keys returned.
func (h *Host) ReturnQuarantined(ctx context.Context, resource string, sight func(key string) Sighting, quiet time.Duration) ([]string, error) {
	if quiet <= 0 {
		return nil, nil
	}
	now := h.now()
	var back []string
	err := h.modify(ctx, func(entries []Entry) ([]Entry, bool) {
		changed := false
		keep := entries[:0:0]
		for _, e := range entries {
			q := e.Quarantine
			if q == nil || e.Resource != resource {
				keep = append(keep, e)
				continue
			}
			switch ret, gone := returnDecision(*q, sight(e.Key), now, quiet); {
			case gone:
				qq := *q
				qq.Return = ReturnSeenGone
				e.Quarantine = &qq
				changed = true
			case ret:
				back = append(back, e.Key)
				changed = true
				continue
			}
			keep = append(keep, e)
		}
		return keep, changed
	}, nil)
	if err != nil {
		return nil, fmt.Errorf("return quarantined %s: %w", resource, err)
	}
	for _, k := range back {
		h.log.WithFields(logrus.Fields{"resource": resource, "device": k}).Info("quarantined device returns: quiet period over and its health checks pass")
	}
	return back, nil
}

// Health params every coordinated resource reads (docs/gpu-health.md).
var (
	QuietPeriodParam = driver.Declare(params.HealthQuietPeriod.WithDoc("A quarantined device (a critical GPU health event, or failed " +
		"health checks) returns by itself once this long has passed since its last event (and, with health.quarantine.probe, its " +
		"health checks pass); 0: only `container-launcher probe --clear <device>` ends a quarantine. An Xid 79 (fallen off the bus) " +
		"returns only once the device has been seen gone and then healthy again."))
	ReturnProbedParam = driver.Declare(params.HealthReturnProbed.WithDoc("A quarantined device returns only once discovery lists it " +
		"and its health checks (health.enabled) pass; false: the quiet period alone suffices."))
)

// renewAfter: a device discovery finds unhealthy again and again renews
// its quarantine (its Last) at most this often: not a write per launch.
const renewAfter = time.Minute

// SyncHealth implements driver.HealthSyncer: devices discovery found
// unhealthy (Device.Unhealthy) are quarantined (Event "health-check"; a
// lost GPU as seen gone), and quarantined devices of resource return as
// ret says (ReturnQuarantined). It works from the quarantines this Host's
// last read found (the reservation's: no read of its own) and takes the
// lock only when something is to change.
func (h *Host) SyncHealth(ctx context.Context, resource string, listed []driver.Device, ret driver.QuarantineReturn) ([]string, error) {
	var qs []Entry
	if p := h.seenQ.Load(); p != nil {
		qs = *p
	} else {
		var err error
		if qs, err = h.Quarantines(); err != nil {
			return nil, nil // the reservation reads it too, and fails with its own error
		}
	}
	byKey := map[string]*Quarantine{}
	for _, e := range qs {
		byKey[e.Key] = e.Quarantine
	}
	now := h.now()
	var errs []error
	for _, d := range listed {
		if d.Unhealthy == "" {
			continue
		}
		if q := byKey[d.Key]; q != nil && now.Sub(q.Last) < renewAfter {
			continue
		}
		q := Quarantine{Reason: d.Unhealthy, Event: EventHealthCheck}
		if isLost(d.Unhealthy) {
			q.Return = ReturnSeenGone
		}
		errs = append(errs, h.QuarantineDevice(ctx, resource, d.Key, q))
		byKey[d.Key] = &q
	}
	if len(qs) == 0 || ret.Quiet <= 0 {
		return nil, errors.Join(errs...)
	}
	sight := sightings(listed, ret.Probed)
	due := false
	for _, e := range qs {
		if e.Resource != resource {
			continue
		}
		if back, gone := returnDecision(*e.Quarantine, sight(e.Key), now, ret.Quiet); back || gone {
			due = true
		}
	}
	var back []string
	if due {
		var err error
		back, err = h.ReturnQuarantined(ctx, resource, sight, ret.Quiet)
		errs = append(errs, err)
	}
	return back, errors.Join(errs...)
}

// noteQuarantines keeps the quarantines of a read for SyncHealth.
func (h *Host) noteQuarantines(entries []Entry) {
	qs := []Entry{}
	for _, e := range entries {
		if e.Quarantine != nil {
			qs = append(qs, e)
		}
	}
	h.seenQ.Store(&qs)
}

// isLost: discovery's reason for a GPU that has fallen off the bus.
func isLost(reason string) bool { return strings.Contains(strings.ToLower(reason), "lost") }

// sightings says what a discovery's listing saw of each key: a listed
// device healthy or not (unprobed: listed is enough), a lost one or one not
// listed gone; a whole GPU listed only through its partitions (MIG) is as
// healthy as the least healthy of them.
func sightings(listed []driver.Device, probed bool) func(string) Sighting {
	seen := map[string]Sighting{}
	note := func(k string, s Sighting) {
		if old, ok := seen[k]; !ok || s < old {
			seen[k] = s
		}
	}
	for _, d := range listed {
		s := SeenHealthy
		switch {
		case d.Unhealthy != "" && isLost(d.Unhealthy):
			s = SeenGone
		case d.Unhealthy != "" && probed:
			s = SeenUnhealthy
		}
		note(d.Key, s)
		if d.Parent != "" {
			note(d.Parent, s)
		}
	}
	return func(k string) Sighting {
		if s, ok := seen[k]; ok {
			return s
		}
		return SeenGone
	}
}
