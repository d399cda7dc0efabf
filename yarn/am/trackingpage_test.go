package am

import (
	"encoding/xml"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/xres/xres/resources/contract"
	"github.com/xres/xres/yarn"
	"github.com/xres/xres/yarn/amplan"
	"github.com/xres/xres/yarn/amstatus"
	"github.com/xres/xres/yarn/amweb"
)

// xnode is any element of the page's SVG, parsed with encoding/xml.
type xnode struct {
	XMLName xml.Name
	Attrs   []xml.Attr `xml:",any,attr"`
	Nodes   []xnode    `xml:",any"`
	Text    string     `xml:",chardata"`
}

func (n xnode) attr(name string) string {
	for _, a := range n.Attrs {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

func (n xnode) num(t *testing.T, name string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(n.attr(name), 64)
	require.NoError(t, err, "<%s %s=%q>", n.XMLName.Local, name, n.attr(name))
	return v
}

// all returns the elements under n (n too) that match.
func (n xnode) all(match func(xnode) bool) []xnode {
	var out []xnode
	if match(n) {
		out = append(out, n)
	}
	for _, c := range n.Nodes {
		out = append(out, c.all(match)...)
	}
	return out
}

func byClass(local, class string) func(xnode) bool {
	return func(n xnode) bool {
		if n.XMLName.Local != local {
			return false
		}
		for _, c := range strings.Fields(n.attr("class")) {
			if class == "" || c == class || strings.HasPrefix(c, class+"-") {
				return true
			}
		}
		return class == ""
	}
}

// getPage serves src's tracking page and returns it.
func getPage(t *testing.T, src amweb.StatusSource, opts ...amweb.TrackerOption) string {
	t.Helper()
	srv := httptest.NewServer(amweb.NewTracker(src, nil, opts...))
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL + "/")
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	return string(body)
}

// timelineSVG parses the page's timeline drawing: it must be well-formed XML.
func timelineSVG(t *testing.T, page string) xnode {
	t.Helper()
	i := strings.Index(page, `<svg id="timeline-svg"`)
	require.GreaterOrEqual(t, i, 0, "no timeline SVG in the page:\n%s", page)
	j := strings.Index(page[i:], "</svg>")
	require.Greater(t, j, 0, "the SVG does not end")
	var svg xnode
	require.NoError(t, xml.Unmarshal([]byte(page[i:i+j+len("</svg>")]), &svg), page[i:i+j+len("</svg>")])
	return svg
}

// A restarted worker: the failed container keeps its bar (marked failed),
// and its replacement's bar is its own, newer start, from the ask that
// followed the failure, on the same axis.
func TestTrackingPageTimelineRestartedWorker(t *testing.T) {
	var mu sync.Mutex
	clock := time.Date(2026, 12, 5, 11, 0, 0, 0, time.UTC)
	now := func() time.Time { // each reading 100 ms later: heartbeats are apart
		mu.Lock()
		defer mu.Unlock()
		clock = clock.Add(100 * time.Millisecond)
		return clock
	}
	c2, c3 := ctr(2, "nm1"), ctr(3, "nm2")
	var page string
	res, _, _ := runRV(t, []amplan.Group{rvGroup("", 1, amplan.Plan{MaxFailedContainers: 2})}, now,
		func(*AM) (yarn.AllocateResponse, error) { return yarn.AllocateResponse{}, nil },
		allocRV(c2),
		complete2(done(c2, 1)),
		func(*AM) (yarn.AllocateResponse, error) { return yarn.AllocateResponse{}, nil },
		allocRV(c3),
		func(a *AM) (yarn.AllocateResponse, error) {
			require.Eventually(t, func() bool { return a.Status().Running == 1 }, 5*time.Second, time.Millisecond)
			require.NoError(t, a.ReportDevices(contract.DeviceReport{Container: c3.ID, LauncherStarted: now(), Reserved: now()}))
			page = getPage(t, a)
			return yarn.AllocateResponse{}, nil
		},
		doneAll(c3),
	)
	require.Equal(t, yarn.StatusSucceeded, res.Status, res.Diagnostics)
	bars := timelineSVG(t, page).all(byClass("g", "worker"))
	require.Len(t, bars, 2)
	require.Equal(t, c2.ID, bars[0].attr("data-container"))
	require.Equal(t, amstatus.StateFailed, bars[0].attr("data-state"))
	require.Equal(t, "failed", bars[0].all(byClass("text", "note"))[0].Text)
	require.Equal(t, c3.ID, bars[1].attr("data-container"))
	old, repl := bars[0].all(byClass("rect", "phase")), bars[1].all(byClass("rect", "phase"))
	require.NotEmpty(t, old)
	require.Len(t, repl, 5, "the replacement: asked … devices reserved")
	require.Equal(t, "phase-0", repl[0].attr("class"))
	oldEnd := old[len(old)-1].num(t, "x") + old[len(old)-1].num(t, "width")
	require.Greater(t, repl[0].num(t, "x"), oldEnd, "the replacement was asked after the failed start's last step")
}
