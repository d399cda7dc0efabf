package amdraw

import (
	"encoding/xml"
	"fmt"
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/yarn/amstatus"
)

// The drawing stays readable at 64 workers (the SVG grows a row each) and
// the axis has at most ten ticks at any span.
func TestTimelineSizes(t *testing.T) {
	t0 := time.Date(2026, 12, 5, 11, 0, 0, 0, time.UTC)
	at := func(sec float64) time.Time { return t0.Add(time.Duration(sec * float64(time.Second))) }
	for _, n := range []int{1, 64, 100} {
		st := amstatus.Status{App: "application_1_0001"}
		for i := range n {
			st.Containers = append(st.Containers, amstatus.WorkerStatus{Container: fmt.Sprintf("container_1_0001_01_%06d", i+2), NodeHTTP: "nm1:8042",
				State: amstatus.StateRunning, Timeline: &amstatus.Timeline{Asked: at(0), Allocated: at(float64(i) / 10), CommandStarted: at(float64(i)/10 + 1)}})
		}
		v := Draw(st, NodeLogs{})
		require.NotNil(t, v)
		var svg struct {
			Height string `xml:"height,attr"`
		}
		require.NoError(t, xml.Unmarshal([]byte(v.SVG), &svg))
		h, err := strconv.ParseFloat(svg.Height, 64)
		require.NoError(t, err)
		require.Equal(t, float64(svgTop+n*svgRowH+svgBottom), h)
	}
	for _, span := range []float64{0.001, 0.7, 1, 3, 9.99, 10, 37, 600, 86400} {
		step := tickStep(span)
		require.LessOrEqual(t, math.Ceil(span/step-1e-9), 10.0, "span %g step %g", span, step)
		require.Greater(t, step*10, span-1e-9)
	}
}
