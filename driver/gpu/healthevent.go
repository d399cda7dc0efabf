package gpu

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
)

// HealthEvent is one line of `xres-nvml watch`'s stream: something NVML
// reported about a GPU while workers ran on it (see docs/gpu-health.md).
//
//	{"type":"xid","uuid":"GPU-3f1c…","index":0,"minor":0,"xid":79,"time":"2026-12-07T01:02:03.456Z"}
//
// The first line of a stream is {"type":"ready",…}: the watch registered
// its event set on every GPU it names in "watched" (and could not on
// "unwatched"). A stream that ends, or a line that cannot be read, is the
// watch lost: the caller reports it, it never means "all is well".
type HealthEvent struct {
	Type  string `json:"type"`
	UUID  string `json:"uuid,omitempty"`
	Index int    `json:"index"`
	Minor int    `json:"minor"`
	// XID is NVML's event data for an "xid" event (the Xid number).
	XID  uint64    `json:"xid,omitempty"`
	Time time.Time `json:"time"`
	// Watched and Unwatched: the ready line's GPUs (uuids).
	Watched   []string `json:"watched,omitempty"`
	Unwatched []string `json:"unwatched,omitempty"`
	// Detail: what NVML said, for people (an "error" line's message).
	Detail string `json:"detail,omitempty"`
}

// Health event types.
const (
	EventReady = "ready"
	// EventXID: an Xid critical error (NVML's EventTypeXidCriticalError).
	EventXID = "xid"
	// EventDoubleBitECC: an uncorrectable memory error
	// (EventTypeDoubleBitEccError).
	EventDoubleBitECC = "ecc-double-bit"
	// EventGPULost: NVML answered ERROR_GPU_IS_LOST (the GPU fell off the
	// bus); UUID "" when NVML could not say which GPU.
	EventGPULost = "gpu-lost"
	// EventError: the watch itself failed (NVML gone); the stream ends.
	EventError = "error"
)

// XIDFallenOffBus is Xid 79: the GPU has fallen off the bus. Its
// quarantine lasts until the GPU is seen again, never just a quiet period.
const XIDFallenOffBus = 79

// DefaultAppXIDs are the Xids caused by the application, not the GPU
// (NVIDIA's Kubernetes device plugin skips the same ones by default):
// 13 graphics engine exception, 31 GPU memory page fault, 43 GPU stopped
// processing, 45 preemptive cleanup, 68 video processor exception, 109
// context switch timeout.
const DefaultAppXIDs = "13,31,43,45,68,109"

// ErrHealthStream marks a watch stream that cannot be read.
var ErrHealthStream = errors.New("unreadable health event")

// ParseHealthEvent reads one line of the stream. Unknown fields are
// ignored (a newer helper may add some); an unknown type, a missing time,
// or an event without its device is an error wrapping ErrHealthStream.
func ParseHealthEvent(line []byte) (HealthEvent, error) {
	var e HealthEvent
	line = bytes.TrimSpace(line)
	if len(line) == 0 || line[0] != '{' {
		return e, fmt.Errorf("%w: not a JSON object: %.80q", ErrHealthStream, line)
	}
	if err := json.Unmarshal(line, &e); err != nil {
		return HealthEvent{}, fmt.Errorf("%w: %v", ErrHealthStream, err)
	}
	switch e.Type {
	case EventReady, EventError, EventGPULost:
	case EventXID, EventDoubleBitECC:
		if e.UUID == "" {
			return HealthEvent{}, fmt.Errorf("%w: %s event without a uuid", ErrHealthStream, e.Type)
		}
		if e.Type == EventXID && e.XID == 0 {
			return HealthEvent{}, fmt.Errorf("%w: xid event without an xid", ErrHealthStream)
		}
	default:
		return HealthEvent{}, fmt.Errorf("%w: unknown type %q", ErrHealthStream, e.Type)
	}
	if e.Time.IsZero() {
		return HealthEvent{}, fmt.Errorf("%w: %s event without a time", ErrHealthStream, e.Type)
	}
	if len(e.Watched) == 0 {
		e.Watched = nil // "watched":[] is none, as an absent one
	}
	if len(e.Unwatched) == 0 {
		e.Unwatched = nil
	}
	if e.Index < -1 || e.Minor < -1 {
		return HealthEvent{}, fmt.Errorf("%w: negative index or minor", ErrHealthStream)
	}
	return e, nil
}

// MarshalLine is e as one line of the stream.
func (e HealthEvent) MarshalLine() []byte {
	b, _ := json.Marshal(e) // only strings, numbers and a time: cannot fail
	return append(b, '\n')
}

// ErrWatchLost: the stream ended or broke; the devices are unwatched.
var ErrWatchLost = errors.New("GPU health watch lost")

// ReadHealthEvents calls fn with each event of r until r ends (which is
// ErrWatchLost: a watch never ends by itself), a line cannot be read, an
// "error" event arrives (ErrWatchLost with its detail), or fn fails.
func ReadHealthEvents(r io.Reader, fn func(HealthEvent) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		e, err := ParseHealthEvent(sc.Bytes())
		if err != nil {
			return fmt.Errorf("%w: line %d: %w", ErrWatchLost, n, err)
		}
		if e.Type == EventError {
			return fmt.Errorf("%w: %s", ErrWatchLost, e.Detail)
		}
		if err := fn(e); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%w: line %d: %w", ErrWatchLost, n+1, err)
	}
	return fmt.Errorf("%w: the stream ended after %d lines", ErrWatchLost, n)
}

// XIDSet is a set of Xids (the application Xids param).
type XIDSet []uint64

// ParseXIDs reads a comma-separated list of Xids ("13,31,43"); "" is the
// empty set. key names the param in errors.
func ParseXIDs(key, s string) (XIDSet, error) {
	var set XIDSet
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		x, err := strconv.ParseUint(f, 10, 32)
		if err != nil || x == 0 {
			return nil, fmt.Errorf("%s: %q is not an Xid (a positive number)", key, f)
		}
		if !slices.Contains(set, x) {
			set = append(set, x)
		}
	}
	slices.Sort(set)
	return set, nil
}

// Critical says whether e takes its GPU out of service: every double-bit
// ECC error and lost GPU, and every Xid but the application's.
func (app XIDSet) Critical(e HealthEvent) bool {
	switch e.Type {
	case EventDoubleBitECC, EventGPULost:
		return true
	case EventXID:
		return !slices.Contains(app, e.XID)
	}
	return false
}

// XIDMeaning names the Xids a GPU health event is most often about, for
// the log line and `container-launcher probe`; "" for others.
func XIDMeaning(xid uint64) string {
	switch xid {
	case 13:
		return "graphics engine exception (application)"
	case 31:
		return "GPU memory page fault (application)"
	case 43:
		return "GPU stopped processing (application)"
	case 45:
		return "preemptive cleanup (application)"
	case 48:
		return "double-bit ECC error"
	case 63:
		return "row remapping event (ECC page retirement)"
	case 64:
		return "row remapping failure"
	case 68:
		return "video processor exception (application)"
	case 74:
		return "NVLink error"
	case 79:
		return "GPU has fallen off the bus"
	case 92:
		return "high single-bit ECC error rate"
	case 94:
		return "contained ECC error"
	case 95:
		return "uncontained ECC error"
	case 109:
		return "context switch timeout (application)"
	case 119:
		return "GSP RPC timeout"
	case 120:
		return "GSP error"
	}
	return ""
}

// Describe says what e is, for logs and reasons: "Xid 79 (GPU has fallen
// off the bus) on GPU-… (index 0)".
func (e HealthEvent) Describe() string {
	var what string
	switch e.Type {
	case EventXID:
		what = "Xid " + strconv.FormatUint(e.XID, 10)
		if m := XIDMeaning(e.XID); m != "" {
			what += " (" + m + ")"
		}
	case EventDoubleBitECC:
		what = "double-bit ECC error"
	case EventGPULost:
		what = "GPU lost (NVML: ERROR_GPU_IS_LOST)"
	default:
		what = e.Type
	}
	if e.UUID == "" {
		return what
	}
	return fmt.Sprintf("%s on %s (index %d)", what, e.UUID, e.Index)
}
