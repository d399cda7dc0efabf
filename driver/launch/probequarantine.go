package launch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/xres/xres/driver"
	"github.com/xres/xres/driver/coord"
	"github.com/xres/xres/resources"
)

// ProbeQuarantine is one quarantined device of a resource (docs/gpu-health.md):
// granted to no one on the host until it returns or is cleared.
type ProbeQuarantine struct {
	Device string    `json:"device"`
	Reason string    `json:"reason"`
	Event  string    `json:"event,omitempty"`
	XID    uint64    `json:"xid,omitempty"`
	Since  time.Time `json:"since"`
	Last   time.Time `json:"last"`
	// Return: "quiet" (after the quiet period, once healthy), "seen" or
	// "seen-gone" (Xid 79: once seen gone and then healthy).
	Return string `json:"return"`
}

// readQuarantined lists the quarantines of resource in a state file; a
// file that does not exist holds none.
func readQuarantined(stateFile, resource string) ([]ProbeQuarantine, error) {
	if _, err := os.Stat(stateFile); os.IsNotExist(err) {
		return nil, nil
	}
	h, err := coord.OpenState(stateFile, nil)
	if err != nil {
		return nil, err
	}
	qs, err := h.Quarantines()
	if err != nil {
		return nil, err
	}
	var out []ProbeQuarantine
	for _, e := range qs {
		if e.Resource != resource {
			continue
		}
		q := e.Quarantine
		out = append(out, ProbeQuarantine{Device: e.Key, Reason: q.Reason, Event: q.Event, XID: q.XID, Since: e.Since, Last: q.Last, Return: q.Return})
	}
	return out, nil
}

func writeQuarantined(w io.Writer, qs []ProbeQuarantine) {
	for _, q := range qs {
		ret := "returns after the quiet period once its health checks pass"
		if q.Return != coord.ReturnQuiet {
			ret = "returns once seen again"
		}
		fmt.Fprintf(w, "    %s QUARANTINED since %s: %s (last event %s; %s, or `container-launcher probe --clear %s`)\n",
			q.Device, q.Since.Format(time.RFC3339), q.Reason, q.Last.Format(time.RFC3339), ret, q.Device)
	}
}

// clearQuarantine is `container-launcher probe --clear DEVICE`: it ends
// the device's quarantine in the state file of every configured resource
// coordinated by xres. A device quarantined in none is a usage error.
func (l *Launcher) clearQuarantine(ctx context.Context, specs []resources.Spec, key string, out io.Writer) error {
	seen := map[string]bool{}
	cleared := 0
	for _, spec := range specs {
		c := l.coordinationOf(spec)
		if c.Mode != driver.CoordXres || c.StateFile == "" || seen[c.StateFile] {
			continue
		}
		seen[c.StateFile] = true
		h, err := coord.OpenState(c.StateFile, l.Log)
		if err != nil {
			return err
		}
		switch err := h.ClearQuarantine(ctx, key); {
		case err == nil:
			cleared++
			fmt.Fprintf(out, "%s: quarantine cleared (state file %s)\n", key, c.StateFile)
		case !errors.Is(err, coord.ErrNotQuarantined):
			return err
		}
	}
	if cleared == 0 {
		return classifyf(ErrUsage, "probe --clear %s: no state file of the configured resources quarantines it (see `container-launcher probe`)", key)
	}
	return nil
}
