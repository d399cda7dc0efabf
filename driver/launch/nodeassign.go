package launch

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/xres/xres/driver"
	"github.com/xres/xres/resources"
)

// nodeAssignmentTimeout bounds check's and probe's question to the
// NodeManager.
const nodeAssignmentTimeout = 10 * time.Second

// nodeAssignment asks spec's factory, where it reads a node-side
// assignment (driver.AssignmentReporter: the GPU driver under YARN's GPU
// plugin), which mode this host is in and what the launcher does there;
// nil for other factories.
func (l *Launcher) nodeAssignment(ctx context.Context, spec resources.Spec) *driver.NodeAssignment {
	f, _, err := l.factory(spec)
	if err != nil || f == nil {
		return nil
	}
	ar, ok := f.(driver.AssignmentReporter)
	if !ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, nodeAssignmentTimeout)
	defer cancel()
	na, err := ar.NodeAssignment(ctx, driver.Options{Resource: spec.Name, Params: copyParams(spec.Params), Log: l.log(),
		Getenv: l.Getenv, Timeout: l.DriverTimeout, YarnKey: spec.YarnKey, DryRun: true})
	if err != nil {
		na = driver.NodeAssignment{Mode: driver.NodeModeUnknown, Problem: err.Error()}
	}
	return &na
}

// writeNodeAssignment prints na as probe and check show it.
func writeNodeAssignment(w io.Writer, indent string, na *driver.NodeAssignment) {
	if na == nil {
		return
	}
	what := na.Mode
	if na.YarnResource != "" {
		what += ", " + na.YarnResource
	}
	if na.URL != "" {
		what += " via " + na.URL
	}
	fmt.Fprintf(w, "%snode mode: %s\n", indent, what)
	if len(na.Assigned) > 0 {
		fmt.Fprintf(w, "%s  assigned to %s: %s (of %d)\n", indent, na.Container, strings.Join(na.Assigned, ", "), na.Total)
	}
	fmt.Fprintf(w, "%s  the launcher: %s\n", indent, na.Action)
	if na.Problem != "" {
		fmt.Fprintf(w, "%s  problem: %s\n", indent, na.Problem)
	}
}
