// Package amstatus is the ApplicationMaster's status as its tracking
// server serves it: the application, its groups and its workers (Status),
// a page of them (Page), their starts (Timeline, Phase) and what a worker
// reads of them (WorkerCount). The allocate loop (yarn/am) fills it in;
// the tracking server (yarn/amweb) and the drawing (yarn/amdraw) read it.
package amstatus

import (
	"errors"
	"time"

	"github.com/xres/xres/resources"
	"github.com/xres/xres/resources/contract"
	"github.com/xres/xres/yarn"
)

// ErrUnknownContainer is returned by ReportDevices for a container id that
// is not one of this application's.
var ErrUnknownContainer = errors.New("unknown container")

// ErrStaleReport is returned by ReportDevices for a report whose Seq is
// not above the last one taken of its kind for the container: a replay,
// or one overtaken by a newer report.
var ErrStaleReport = errors.New("stale device report")

// WorkerStatus is one worker container in Status.
type WorkerStatus struct {
	Container   string                            `json:"container"`
	Node        string                            `json:"node"`
	NodeHTTP    string                            `json:"node-http,omitempty"`
	Host        string                            `json:"host"`
	Group       string                            `json:"group,omitempty"`
	Rank        *int                              `json:"rank,omitempty"` // in its group, while it holds one
	State       string                            `json:"state"`
	Spare       bool                              `json:"spare,omitempty"`    // a standby spare (STARTING or STANDBY)
	Promoted    *time.Time                        `json:"promoted,omitempty"` // when this spare took a lost worker's rank
	ExitStatus  *int                              `json:"exit-status,omitempty"`
	Diagnostics string                            `json:"diagnostics,omitempty"`
	Devices     map[string][]resources.Properties `json:"devices,omitempty"`
	Timeline    *Timeline                         `json:"timeline,omitempty"` // its start, step by step
}

// GroupStatus is one worker group in Status.
type GroupStatus struct {
	Name      string        `json:"name"`
	Workers   int           `json:"workers"` // wanted (the target)
	Minimum   int           `json:"minimum"` // needed running: Workers, or xres.reactive.min-workers
	Reactive  bool          `json:"reactive,omitempty"`
	Pending   int           `json:"pending"`
	Starting  int           `json:"starting"`
	Running   int           `json:"running"`
	Succeeded int           `json:"succeeded"`
	Failed    int           `json:"failed"`
	Restarts  int           `json:"restarts"`
	MaxFailed int           `json:"max-failed-containers"`
	Profile   yarn.Resource `json:"profile"`
	// Spares is how many standby spares it keeps (wanted), Standby how
	// many stand by now, Promotions how many took a lost worker's rank.
	Spares     int `json:"spares,omitempty"`
	Standby    int `json:"standby,omitempty"`
	Promotions int `json:"promotions,omitempty"`
	// Addresses, for a group with a port: each rank's host:port, in rank
	// order ("" for a rank whose worker has not reported one yet).
	Addresses []string `json:"addresses,omitempty"`
}

// Status is a snapshot of the application, served by the tracking server.
// Workers, Pending and the other counts are over every group.
type Status struct {
	App         string         `json:"app"`
	State       string         `json:"state"`
	Workers     int            `json:"workers"`
	Minimum     int            `json:"minimum"` // workers needed running (less than Workers under scheduler-mode: reactive)
	Pending     int            `json:"pending"`
	Running     int            `json:"running"`
	Starting    int            `json:"starting"`
	Standby     int            `json:"standby,omitempty"` // standby spares whose container runs
	Succeeded   int            `json:"succeeded"`
	Failed      int            `json:"failed"`
	Restarts    int            `json:"restarts"`
	MaxFailed   int            `json:"max-failed-containers"`
	Profile     yarn.Resource  `json:"profile"` // the first group's
	Groups      []GroupStatus  `json:"groups"`
	Hosts       []string       `json:"hosts"`
	Blacklist   []string       `json:"blacklist,omitempty"`
	Diagnostics string         `json:"diagnostics,omitempty"`
	Unplaceable string         `json:"unplaceable,omitempty"` // why pending workers cannot be placed (xres.placement.max-workers-per-node)
	Containers  []WorkerStatus `json:"containers"`
	// ContainersTotal is how many containers the page was taken from
	// (those in the asked state, or all); Offset is where it starts.
	ContainersTotal int `json:"containers-total"`
	Offset          int `json:"offset,omitempty"`
	// ContainersForgotten is how many finished workers are no longer
	// listed (the AM keeps the newest Config.FinishedHistory); the counts
	// above include them.
	ContainersForgotten int `json:"containers-forgotten,omitempty"`
	// SubmitTime and AllRunningTime (RFC 3339) and AllRunningAfterMS: when
	// the application was submitted, when every wanted worker was first
	// running, and the time between (when both are known). MinRunningTime
	// is when each group's minimum first ran (AllRunningTime unless under
	// scheduler-mode: reactive).
	SubmitTime        *time.Time `json:"submit-time,omitempty"`
	MinRunningTime    *time.Time `json:"min-running-time,omitempty"`
	AllRunningTime    *time.Time `json:"all-running-time,omitempty"`
	AllRunningAfterMS int64      `json:"all-running-after-ms,omitempty"`
	// FirstAsk is when this AM attempt sent its first ask for workers: 0 s
	// of the tracking page's timeline.
	FirstAsk *time.Time `json:"first-ask,omitempty"`
	// AMPeakRSSKiB is the AM process's peak resident memory.
	AMPeakRSSKiB int64 `json:"am-peak-rss-kib,omitempty"`
	// Phases is the distribution of each step of the workers' starts
	// over every listed worker (when the page asks for it: Page.Phases).
	Phases []Phase `json:"phases,omitempty"`
	// IdleGPUs are the running workers' granted GPUs under the idle
	// threshold for longer than the idle window (GPU samples; IdleRule).
	IdleGPUs []IdleGPU `json:"idle-gpus,omitempty"`
	// DeviceEvents are the critical device events the listed workers'
	// launchers reported, oldest first, each with the worker that replaced
	// its worker (CollectDeviceEvents; docs/gpu-health.md).
	DeviceEvents []DeviceEvent `json:"device-events,omitempty"`
}

// Page selects the containers a Status lists: those in State (all when
// empty), from Offset, at most Limit of them (all when 0, none when
// negative).
type Page struct {
	Offset, Limit int
	State         string
	Phases        bool // with Status.Phases (O(workers) more work)
	Idle          bool // with Status.IdleGPUs (the page, api/status; not the workers' counts)
}

// Worker states in Status.
const (
	StateStarting  = "STARTING"
	StateRunning   = "RUNNING"
	StateSucceeded = "SUCCEEDED"
	StateFailed    = "FAILED"
	// StateStandby is a standby spare (slotmanager.redundant-taskmanager-num)
	// whose container runs: its launcher holds the devices and waits in
	// the rendezvous, running no command until a worker fails.
	StateStandby = "STANDBY"
)

// WorkerCount is how many workers the application has now: wanted
// (Target), needed (Minimum: less than Target under scheduler-mode:
// reactive) and running, in all and per group.
type WorkerCount struct {
	Target  int                `json:"target"`
	Minimum int                `json:"minimum"`
	Running int                `json:"running"`
	Groups  []GroupWorkerCount `json:"groups"`
}

// GroupWorkerCount is one group's part of WorkerCount.
type GroupWorkerCount struct {
	Name    string `json:"name"`
	Target  int    `json:"target"`
	Minimum int    `json:"minimum"`
	Running int    `json:"running"`
	// Addresses: GroupStatus.Addresses (a group with a port).
	Addresses []string `json:"addresses,omitempty"`
}

// Count is s as a WorkerCount.
func (s Status) Count() WorkerCount {
	c := WorkerCount{Target: s.Workers, Minimum: s.Minimum, Running: s.Running, Groups: []GroupWorkerCount{}}
	for _, g := range s.Groups {
		c.Groups = append(c.Groups, GroupWorkerCount{Name: g.Name, Target: g.Workers, Minimum: g.Minimum, Running: g.Running, Addresses: g.Addresses})
	}
	return c
}

// Timeline is a worker's timeline in Status (RFC 3339 times; a mark not
// known is left out): the first four as the AM saw them, the launcher's on
// its host's clock. AskHeartbeats is how many heartbeats after the one that
// carried the ask brought the container (0: its own answer).
type Timeline struct {
	Asked           time.Time `json:"asked,omitzero"`
	AskHeartbeats   int       `json:"ask-heartbeats,omitempty"`
	Allocated       time.Time `json:"allocated,omitzero"`
	StartSent       time.Time `json:"start-sent,omitzero"`
	StartAnswered   time.Time `json:"start-answered,omitzero"`
	LauncherStarted time.Time `json:"launcher-started,omitzero"`
	DevicesReserved time.Time `json:"devices-reserved,omitzero"`
	CommandStarted  time.Time `json:"command-started,omitzero"`
	// DeviceEvents are the critical events on the worker's devices its
	// launcher reported (docs/gpu-health.md), on its host's clock.
	DeviceEvents []contract.HealthEvent `json:"device-events,omitempty"`
}

// Phase is the distribution of one step of the workers' starts over the
// workers whose timeline has both its marks: milliseconds, or heartbeats
// for the ask's wait (Unit).
type Phase struct {
	Name  string  `json:"name"`
	Unit  string  `json:"unit"`
	Count int     `json:"count"`
	P50   float64 `json:"p50"`
	P90   float64 `json:"p90"`
	Max   float64 `json:"max"`
}

// The phases of the workers' starts Status lists (Phase.Name), each from
// one Timeline mark to another: the six steps in order, then two spans.
const (
	PhaseScheduling   = "asked → allocated (the RM's scheduling)"
	PhaseStartQueue   = "allocated → start sent (the AM's start queue)"
	PhaseStartCall    = "start sent → answered (NodeManager StartContainers)"
	PhaseLocalization = "answered → launcher started (localization, launch script)"
	PhaseReservation  = "launcher started → devices reserved"
	PhaseRendezvous   = "devices reserved → command started (report, rendezvous)"
	PhaseStart        = "allocated → start answered"
	PhaseAll          = "asked → command started (all)"
)

// AskHeartbeatsPhase names the phase of the heartbeats an ask waited.
const AskHeartbeatsPhase = "heartbeats from ask to allocation"
