// Package soakplan draws the soak's fault schedule (integration/soak_test.go, make soak) from
// its seed: which fault comes next and every random choice it makes (how long, which
// NodeManager, which worker), drawn up front and independent of what the cluster does, so that
// a seed's schedule can be read offline (Schedule) and CI's seed checked to draw the faults it
// is meant to (TestCISeed).
package soakplan

import (
	"math/rand/v2"
	"time"
)

// Kind is a fault of the soak.
type Kind int

// The soak's faults, in the order the schedule draws from.
const (
	RMDown     Kind = iota // the active RM down for Fault.Down, then back
	RMFailover             // failover to the standby RM
	NMKill                 // NodeManager Fault.NM killed, started again after Fault.Down
	AMKill                 // the newest AM container killed (the next attempt adopts the workers)
	WorkerKill             // a launcher or worker killed -9 (Fault.Victim, Fault.Launcher)
	SlowNM                 // NodeManager 3 answering Fault.Lag late for Fault.Down
	Partition              // the AM cut from the RMs for Fault.Down
	nKinds
)

var names = [nKinds]string{
	RMDown:     "rm-down 5-120 s",
	RMFailover: "rm-failover",
	NMKill:     "nm-kill, nm-start",
	AMKill:     "AM container killed",
	WorkerKill: "launcher or worker kill -9",
	SlowNM:     "slow NodeManager 20-60 s",
	Partition:  "AM<->RM partition 5-60 s",
}

// String is the fault's name in the soak's report.
func (k Kind) String() string {
	if k < 0 || k >= nKinds {
		return "unknown fault"
	}
	return names[k]
}

// Kinds are all faults, in order.
func Kinds() []Kind {
	out := make([]Kind, nKinds)
	for i := range out {
		out[i] = Kind(i)
	}
	return out
}

// Fault is one fault of the schedule with its random choices.
type Fault struct {
	Kind Kind
	// Down: how long RMDown's RM is down, NMKill's NodeManager is gone, SlowNM is slow,
	// Partition lasts.
	Down time.Duration
	NM   int           // NMKill: which NodeManager (0-3)
	Lag  time.Duration // SlowNM: how late each chunk is
	// Victim picks WorkerKill's worker among the live ones at injection (Victim mod their
	// number); Launcher: its launcher rather than the worker.
	Victim   int
	Launcher bool
	// Pause is the wait after the fault healed and every worker runs again.
	Pause time.Duration
}

// Schedule is a seed's sequence of faults.
type Schedule struct{ rng *rand.Rand }

// New is seed's schedule.
func New(seed int64) *Schedule {
	return &Schedule{rng: rand.New(rand.NewPCG(uint64(seed), uint64(seed)>>1|1))}
}

func (s *Schedule) secs(lo, hi int) time.Duration {
	return time.Duration(lo+s.rng.IntN(hi-lo+1)) * time.Second
}

// Next draws the next fault.
func (s *Schedule) Next() Fault {
	f := Fault{Kind: Kind(s.rng.IntN(int(nKinds)))}
	switch f.Kind {
	case RMDown:
		f.Down = s.secs(5, 120)
	case NMKill:
		f.NM = s.rng.IntN(4)
		f.Down = s.secs(0, 30)
	case WorkerKill:
		f.Victim = s.rng.IntN(1 << 30)
		f.Launcher = s.rng.IntN(2) == 0
	case SlowNM:
		f.Down, f.Lag = s.secs(20, 60), s.secs(1, 3)
	case Partition:
		f.Down = s.secs(5, 60)
	}
	f.Pause = s.secs(2, 10)
	return f
}

// First is the schedule's first n faults.
func First(seed int64, n int) []Fault {
	s := New(seed)
	out := make([]Fault, n)
	for i := range out {
		out[i] = s.Next()
	}
	return out
}
