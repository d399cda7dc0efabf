package amstatus

import (
	"time"

	"github.com/xres/xres/resources/contract"
)

// The idle-GPU rule's defaults (xres.metrics.idle-threshold,
// xres.metrics.idle-window): a granted GPU whose utilisation stays under
// 5 % for 10 minutes is listed as idle.
const (
	DefaultIdleThreshold = 5.0
	DefaultIdleWindow    = 10 * time.Minute
)

// IsSamples reports whether r is a samples report: GPU samples and
// nothing else (no devices, port or timeline marks).
func IsSamples(r contract.DeviceReport) bool {
	return len(r.GPU) > 0 && len(r.Resources) == 0 && r.Port == 0 &&
		r.CommandStarted.IsZero() && r.Reserved.IsZero() && r.LauncherStarted.IsZero()
}

// IdleRule says when a GPU is idle: its utilisation under Threshold
// percent in every sample for at least Window.
type IdleRule struct {
	Threshold float64
	Window    time.Duration
}

// OrDefault is r with the defaults where it has none.
func (r IdleRule) OrDefault() IdleRule {
	if r.Threshold <= 0 {
		r.Threshold = DefaultIdleThreshold
	}
	if r.Window <= 0 {
		r.Window = DefaultIdleWindow
	}
	return r
}

// IdleGPU is a granted GPU in Status.IdleGPUs: under the idle threshold
// for IdleFor (at least the window), on its host's clock.
type IdleGPU struct {
	Container string        `json:"container"`
	Group     string        `json:"group,omitempty"`
	Host      string        `json:"host"`
	GPU       string        `json:"gpu"`
	UUID      string        `json:"uuid,omitempty"`
	Util      float64       `json:"util"` // percent, in the latest sample
	IdleFor   time.Duration `json:"-"`
	IdleForS  int64         `json:"idle-for-s"`
}

// HistoryLen is how many points of each GPU's history a worker keeps for
// the page's drawing: the whole run, coarser as it grows (two points are
// merged into one when it is full), so a worker's memory stays bounded.
const HistoryLen = 32

// GPUPoint is one point of a GPU's history: seconds since the GPU's first
// sample, utilisation (percent) and memory used (MiB).
type GPUPoint struct {
	At     uint32
	Util   uint8
	MemMiB uint32
}

// GPUTrack is what one worker's samples say of its GPUs: the latest
// sample of each, since when each has been under the idle threshold, and
// its history. The AM keeps one per worker that sent samples.
type GPUTrack struct {
	GPUs []GPUState
}

// GPUState is one GPU of a GPUTrack.
type GPUState struct {
	Last       contract.GPUSample
	UnderSince int64 // the first sample of the current run under the threshold (Unix s); 0: over
	First      int64 // the first sample's time (Unix s)
	History    [HistoryLen]GPUPoint
	N          int   // points in History
	stride     int64 // seconds between kept points (grows as History fills)
}

// Add takes a samples report's samples under rule.
func (t *GPUTrack) Add(samples []contract.GPUSample, rule IdleRule) {
	for _, s := range samples {
		g := t.gpu(s.Index)
		if g.Last.At != 0 && s.At < g.Last.At {
			continue // older than what was taken
		}
		if g.First == 0 {
			g.First = s.At
		}
		g.Last = s
		switch {
		case s.Util >= rule.Threshold:
			g.UnderSince = 0
		case g.UnderSince == 0:
			g.UnderSince = s.At
		}
		g.record(s)
	}
}

func (t *GPUTrack) gpu(index string) *GPUState {
	for i := range t.GPUs {
		if t.GPUs[i].Last.Index == index {
			return &t.GPUs[i]
		}
	}
	t.GPUs = append(t.GPUs, GPUState{Last: contract.GPUSample{Index: index}})
	return &t.GPUs[len(t.GPUs)-1]
}

// record keeps s in the history: a point at least stride after the last
// kept; a full history is halved (every other point kept) and its stride
// doubled.
func (g *GPUState) record(s contract.GPUSample) {
	at := s.At - g.First
	if g.N > 0 && at < int64(g.History[g.N-1].At)+g.stride {
		return
	}
	if g.N == HistoryLen {
		for i := 0; i < HistoryLen/2; i++ {
			g.History[i] = g.History[2*i]
		}
		g.N = HistoryLen / 2
		g.stride = max(2*g.stride, 2*(at/HistoryLen))
	}
	g.History[g.N] = GPUPoint{At: uint32(max(at, 0)), Util: uint8(min(max(s.Util, 0), 100)), MemMiB: uint32(max(s.MemMiB, 0))}
	g.N++
}

// IdleFor is how long g has been under the threshold, by its samples; 0
// when its latest sample is over it.
func (g *GPUState) IdleFor() time.Duration {
	if g.UnderSince == 0 {
		return 0
	}
	return time.Duration(g.Last.At-g.UnderSince) * time.Second
}

// Idle lists t's GPUs idle under rule, for the worker ws names.
func (t *GPUTrack) Idle(rule IdleRule, container, group, host string) []IdleGPU {
	var out []IdleGPU
	for i := range t.GPUs {
		g := &t.GPUs[i]
		if d := g.IdleFor(); g.UnderSince != 0 && d >= rule.Window {
			out = append(out, IdleGPU{Container: container, Group: group, Host: host, GPU: g.Last.Index, UUID: g.Last.UUID,
				Util: g.Last.Util, IdleFor: d, IdleForS: int64(d / time.Second)})
		}
	}
	return out
}

// WorkerGPUs is one running worker's GPUs as /metrics and the page show
// them.
type WorkerGPUs struct {
	Container, Group, Host string
	Rank                   int // -1: none
	GPUs                   []GPUState
}
