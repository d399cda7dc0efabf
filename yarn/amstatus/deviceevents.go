package amstatus

import (
	"sort"

	"github.com/xres/xres/resources/contract"
)

// DeviceEvent is one critical device event a worker's launcher reported
// (docs/gpu-health.md), where it happened, and the worker that replaced
// the one it stopped.
type DeviceEvent struct {
	contract.HealthEvent
	Container string `json:"container"`
	Host      string `json:"host"`
	Group     string `json:"group,omitempty"`
	// ReplacedBy is the replacement: the first worker of the same group
	// allocated after the event ("" while none is, or with action notify).
	ReplacedBy string `json:"replaced-by,omitempty"`
}

// CollectDeviceEvents fills s.DeviceEvents from the listed containers'
// timelines: O(containers). Events of workers not listed (another page,
// forgotten) are not shown.
func (s *Status) CollectDeviceEvents() {
	s.DeviceEvents = nil
	for _, w := range s.Containers {
		if w.Timeline == nil {
			continue
		}
		for _, e := range w.Timeline.DeviceEvents {
			d := DeviceEvent{HealthEvent: e, Container: w.Container, Host: w.Host, Group: w.Group}
			if e.Action != "notify" {
				d.ReplacedBy = replacementOf(s.Containers, w, e)
			}
			s.DeviceEvents = append(s.DeviceEvents, d)
		}
	}
	sort.SliceStable(s.DeviceEvents, func(i, j int) bool { return s.DeviceEvents[i].Time.Before(s.DeviceEvents[j].Time) })
}

// replacementOf is the first worker of w's group allocated after e, but w.
func replacementOf(cs []WorkerStatus, w WorkerStatus, e contract.HealthEvent) string {
	best, at := "", e.Time
	for _, c := range cs {
		if c.Container == w.Container || c.Group != w.Group || c.Timeline == nil || c.Spare {
			continue
		}
		a := c.Timeline.Allocated
		if a.Before(e.Time) || (best != "" && !a.Before(at)) {
			continue
		}
		best, at = c.Container, a
	}
	return best
}
