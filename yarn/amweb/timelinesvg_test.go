package amweb

import (
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/resources/contract"
	"github.com/xres/xres/yarn/amdraw"
	"github.com/xres/xres/yarn/amstatus"
	"github.com/xres/xres/yarn/amweb/amwebtest"
)

type xnode = amwebtest.Node

var (
	byClass     = amwebtest.ByClass
	timelineSVG = amwebtest.TimelineSVG
)

// getPage serves src's tracking page and returns it.
func getPage(t *testing.T, src StatusSource, opts ...TrackerOption) string {
	return amwebtest.GetPage(t, NewTracker(src, nil, opts...))
}

// tickX maps the axis' tick labels ("2 s") to their x.
func tickX(t *testing.T, svg xnode) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for _, txt := range svg.All(byClass("text", "")) {
		if strings.HasSuffix(txt.Text, " s") && txt.Attr("text-anchor") == "middle" {
			out[txt.Text] = txt.Num(t, "x")
		}
	}
	return out
}

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

var t0 = time.Date(2026, 12, 5, 11, 0, 0, 0, time.UTC)

func at(sec float64) time.Time { return t0.Add(time.Duration(sec * float64(time.Second))) }

// threeStarts is a page of three containers: one started completely, one
// still starting, one adopted (no timeline); first is the first ask.
func threeStarts() (staticSource, time.Time) {
	first := at(0)
	full := &amstatus.Timeline{Asked: at(0.5), AskHeartbeats: 1, Allocated: at(1.5), StartSent: at(1.75), StartAnswered: at(2),
		LauncherStarted: at(3), DevicesReserved: at(3.5), CommandStarted: at(4)}
	return staticSource{amstatus.Status{App: "application_1_0001", State: "RUNNING", FirstAsk: &first, Containers: []amstatus.WorkerStatus{
		{Container: "container_1_0001_01_000002", NodeHTTP: "nm1:8042", Host: "nm1", State: amstatus.StateRunning, Timeline: full},
		{Container: "container_1_0001_01_000003", NodeHTTP: "nm2:8042", Host: "nm2", State: amstatus.StateStarting,
			Timeline: &amstatus.Timeline{Asked: at(0.5), Allocated: at(1.5), StartSent: at(1.75)}},
		{Container: "container_1_0001_01_000004", NodeHTTP: "nm1:8042", Host: "nm1", State: amstatus.StateRunning},
	}}}, first
}

// The drawing of threeStarts, whole, against testdata/timeline.golden.svg
// (go test -update rewrites it; open it in a browser to look at it).
func TestTrackingPageTimelineGolden(t *testing.T) {
	src, _ := threeStarts()
	v := amdraw.Draw(src.st, amdraw.NodeLogs{Scheme: "http", User: "alice"})
	require.NotNil(t, v)
	got := string(v.SVG) + "\n"
	path := filepath.Join("testdata", "timeline.golden.svg")
	if *update {
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test -update to create %s", path)
	require.Equal(t, string(want), got, "the drawing changed: go test -update rewrites %s", path)
}

// A page of three containers: one started completely, one still starting
// (its phases so far), one adopted from an earlier attempt (no timeline).
// Each is one bar, in the page's order, its label linked to its logs on its
// NodeManager; the complete one has its six phases in order, each as wide
// as it lasted on the axis the ticks label.
func TestTrackingPageTimeline(t *testing.T) {
	src, first := threeStarts()
	full := src.st.Containers[0].Timeline
	page := getPage(t, src, WithNodeLogLinks("http", "alice"))
	svg := timelineSVG(t, page)

	bars := svg.All(byClass("g", "worker"))
	require.Len(t, bars, 3, "one bar per container of the page")
	for i, b := range bars {
		c := src.st.Containers[i]
		require.Equal(t, c.Container, b.Attr("data-container"))
		a := b.Child("a")
		require.Equal(t, "http://"+c.NodeHTTP+"/node/containerlogs/"+c.Container+"/alice", a.Attr("href"), "the label links to its NodeManager logs")
		require.Equal(t, c.Container, a.Child("text").Text)
	}

	ticks := tickX(t, svg)
	require.Contains(t, ticks, "0 s")
	require.Contains(t, ticks, "4 s")
	pxPerSec := (ticks["4 s"] - ticks["0 s"]) / 4

	segs := bars[0].All(byClass("rect", "phase"))
	require.Len(t, segs, 6, "the complete start: six phases")
	marks := []time.Time{full.Asked, full.Allocated, full.StartSent, full.StartAnswered, full.LauncherStarted, full.DevicesReserved, full.CommandStarted}
	legends := []string{"RM scheduling", "AM start queue", "NodeManager start call", "localization, launch", "device reservation", "report, rendezvous, exec"}
	for k, s := range segs {
		require.Equal(t, "phase-"+strconv.Itoa(k), s.Attr("class"), "phases in order")
		from, to := marks[k].Sub(first).Seconds(), marks[k+1].Sub(first).Seconds()
		require.InDelta(t, ticks["0 s"]+from*pxPerSec, s.Num(t, "x"), 0.11, "phase %d starts at its mark", k)
		require.InDelta(t, (to-from)*pxPerSec, s.Num(t, "width"), 0.11, "phase %d is as wide as it lasted", k)
		require.True(t, strings.HasPrefix(s.Child("title").Text, legends[k]+": "), s.Child("title").Text)
	}
	require.Contains(t, segs[0].Child("title").Text, "1000 ms", "the tooltip has the phase's time")
	require.Contains(t, segs[0].Child("title").Text, "+0.500 s → +1.500 s")
	require.InDelta(t, ticks["4 s"], segs[5].Num(t, "x")+segs[5].Num(t, "width"), 0.11, "the command starts at 4 s on the axis")
	barTitle := bars[0].Child("title").Text
	require.Contains(t, barTitle, "container_1_0001_01_000002 on nm1, RUNNING")
	require.Contains(t, barTitle, "allocated 1 heartbeat after the one that asked")

	starting := bars[1].All(byClass("rect", "phase"))
	require.Len(t, starting, 2, "a starting worker draws its phases so far")
	require.Equal(t, "phase-0", starting[0].Attr("class"))
	require.Equal(t, "phase-1", starting[1].Attr("class"))
	require.Equal(t, "starting", bars[1].All(byClass("text", "note"))[0].Text)

	require.Empty(t, bars[2].All(byClass("rect", "phase")), "no timeline, no phases")
	require.Contains(t, bars[2].All(byClass("text", "note"))[0].Text, "adopted from an earlier AM attempt")

	legend := svg.All(byClass("g", "legend"))
	require.Len(t, legend, 1)
	require.Len(t, legend[0].All(byClass("rect", "phase")), 6, "a legend entry per phase")

	height := svg.Num(t, "height")
	for _, r := range svg.All(byClass("rect", "phase")) {
		require.LessOrEqual(t, r.Num(t, "y")+r.Num(t, "height"), height, "the drawing holds every bar")
	}
	require.Contains(t, page, "0 s is the application's first ask (2026-12-05 11:00:00.000 UTC)")
}

// Without a known owner the label links to the container's page on its
// NodeManager; a container without its NodeManager's web address is
// labelled without a link; with HTTPS_ONLY the link is https.
func TestTrackingPageTimelineLinks(t *testing.T) {
	src := staticSource{amstatus.Status{App: "application_1_0001", Containers: []amstatus.WorkerStatus{
		{Container: "container_1_0001_01_000002", NodeHTTP: "nm1:8042", Host: "nm1", State: amstatus.StateRunning, Timeline: &amstatus.Timeline{Allocated: at(1)}},
		{Container: "container_1_0001_01_000003", Host: "nm2", State: amstatus.StateRunning, Timeline: &amstatus.Timeline{Allocated: at(1)}},
	}}}
	bars := timelineSVG(t, getPage(t, src)).All(byClass("g", "worker"))
	require.Len(t, bars, 2)
	require.Equal(t, "http://nm1:8042/node/container/container_1_0001_01_000002", bars[0].Child("a").Attr("href"))
	require.Empty(t, bars[1].All(byClass("a", "")), "no NodeManager web address, no link")
	require.Equal(t, "container_1_0001_01_000003", bars[1].Child("text").Text)

	bars = timelineSVG(t, getPage(t, src, WithNodeLogLinks("https", "bob"))).All(byClass("g", "worker"))
	require.Equal(t, "https://nm1:8042/node/containerlogs/container_1_0001_01_000002/bob", bars[0].Child("a").Attr("href"))
}

// No container on the page: no drawing, and the page still renders.
func TestTrackingPageTimelineNoWorkers(t *testing.T) {
	page := getPage(t, staticSource{amstatus.Status{App: "application_1_0001", State: "RUNNING", Containers: []amstatus.WorkerStatus{}}})
	require.NotContains(t, page, "<svg")
	require.Contains(t, page, "xres application application_1_0001")
	require.Contains(t, page, "Containers: 0")
}

// What a cluster sends is escaped: a host or container id with markup is
// text in the SVG, never markup, and the drawing stays well-formed.
func TestTrackingPageTimelineEscapes(t *testing.T) {
	evil := `container_1"><script>alert(1)</script>`
	src := staticSource{amstatus.Status{App: "application_1_0001", Containers: []amstatus.WorkerStatus{
		{Container: evil, NodeHTTP: `nm1:8042"><script>x</script>`, Host: `<b>nm1</b>`, State: amstatus.StateRunning, Timeline: &amstatus.Timeline{Allocated: at(1), StartSent: at(2)}},
	}}}
	page := getPage(t, src, WithNodeLogLinks("http", `al"ice`))
	require.NotContains(t, page, "<script>alert")
	require.NotContains(t, page, "<script>x")
	require.NotContains(t, page, "<b>nm1")
	bars := timelineSVG(t, page).All(byClass("g", "worker"))
	require.Len(t, bars, 1)
	require.Equal(t, evil, bars[0].Attr("data-container"))
	require.Contains(t, bars[0].Child("title").Text, "on <b>nm1</b>")
}

// A launcher that reported no start mark: its reservation joins the
// NodeManager's answer; a launcher's host clock behind the AM's draws a
// mark no earlier than the one before it (width 0, never negative); the
// axis starts at the earliest mark when the first ask is not known.
func TestTrackingPageTimelineGapsAndSkew(t *testing.T) {
	src := staticSource{amstatus.Status{App: "application_1_0001", Containers: []amstatus.WorkerStatus{
		{Container: "container_1_0001_01_000002", NodeHTTP: "nm1:8042", State: amstatus.StateRunning,
			Timeline: &amstatus.Timeline{Asked: at(1), Allocated: at(2), StartSent: at(2), StartAnswered: at(3), DevicesReserved: at(5)}},
		{Container: "container_1_0001_01_000003", NodeHTTP: "nm1:8042", State: amstatus.StateRunning,
			Timeline: &amstatus.Timeline{Asked: at(1), Allocated: at(2), StartSent: at(2), StartAnswered: at(3), LauncherStarted: at(2.5), DevicesReserved: at(4)}},
	}}}
	page := getPage(t, src)
	require.Contains(t, page, "0 s is the earliest step shown (2026-12-05 11:00:01.000 UTC)")
	svg := timelineSVG(t, page)
	ticks := tickX(t, svg)
	pxPerSec := (ticks["4 s"] - ticks["0 s"]) / 4
	bars := svg.All(byClass("g", "worker"))

	gap := bars[0].All(byClass("rect", "phase"))
	require.Len(t, gap, 4)
	require.Equal(t, "phase-1", gap[1].Attr("class"))
	require.Zero(t, gap[1].Num(t, "width"), "allocated and sent at once")
	require.Equal(t, "phase-4", gap[3].Attr("class"), "the reservation, from the answer on")
	require.Contains(t, gap[3].Child("title").Text, "start answered → devices reserved: 2000 ms")
	require.InDelta(t, ticks["2 s"], gap[3].Num(t, "x"), 0.11)
	require.InDelta(t, 2*pxPerSec, gap[3].Num(t, "width"), 0.11)

	skew := bars[1].All(byClass("rect", "phase"))
	require.Len(t, skew, 5)
	require.Zero(t, skew[3].Num(t, "width"), "launcher started before the answer (host clock): no width")
	require.InDelta(t, ticks["2 s"], skew[4].Num(t, "x"), 0.11, "the reservation drawn from the answer")
	require.InDelta(t, pxPerSec, skew[4].Num(t, "width"), 0.11)
	for _, s := range append(gap, skew...) {
		require.GreaterOrEqual(t, s.Num(t, "width"), 0.0)
	}
}

// The page draws one bar per container at 1, 64 and 100 workers.
func TestTrackingPageTimelineSizes(t *testing.T) {
	for _, n := range []int{1, 64, 100} {
		st := amstatus.Status{App: "application_1_0001"}
		for i := range n {
			st.Containers = append(st.Containers, amstatus.WorkerStatus{Container: fmt.Sprintf("container_1_0001_01_%06d", i+2), NodeHTTP: "nm1:8042",
				State: amstatus.StateRunning, Timeline: &amstatus.Timeline{Asked: at(0), Allocated: at(float64(i) / 10), CommandStarted: at(float64(i)/10 + 1)}})
		}
		svg := timelineSVG(t, getPage(t, staticSource{st}))
		require.Len(t, svg.All(byClass("g", "worker")), n)
	}
}

// BenchmarkTrackingPage renders the tracking page of N started workers,
// all on one page (?limit=N), and reports its size. Run on the commit
// before the timeline drawing, it is the peer the drawing's cost is
// measured against (README).
func BenchmarkTrackingPage(b *testing.B) {
	for _, n := range []int{100, 1000} {
		b.Run(fmt.Sprintf("workers=%d", n), func(b *testing.B) {
			st := amstatus.Status{App: "application_1733390000000_0001", State: "RUNNING", Workers: n, Running: n}
			for i := range n {
				a := at(0.02)
				ms := func(k int) time.Duration { return time.Duration((i*37+k*101)%900+50) * time.Millisecond }
				al := a.Add(ms(1) + time.Second)
				ss, sa := al.Add(ms(2)/4), al.Add(ms(2)/3)
				ls := sa.Add(ms(3))
				dr, cs := ls.Add(ms(4)/10), ls.Add(ms(4)/10+ms(5)/2)
				st.Containers = append(st.Containers, amstatus.WorkerStatus{Container: fmt.Sprintf("container_1733390000000_0001_01_%06d", i+2),
					Node: "127.0.0.2:45454", NodeHTTP: "127.0.0.2:8042", Host: "127.0.0.2", State: amstatus.StateRunning,
					Timeline: &amstatus.Timeline{Asked: a, AskHeartbeats: 1, Allocated: al, StartSent: ss, StartAnswered: sa, LauncherStarted: ls, DevicesReserved: dr, CommandStarted: cs}})
			}
			h := NewTracker(staticSource{st}, nil)
			req := httptest.NewRequest(http.MethodGet, "/?limit="+strconv.Itoa(n), nil)
			var size int
			b.ReportAllocs()
			for b.Loop() {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					b.Fatal(rec.Code)
				}
				size = rec.Body.Len()
			}
			b.ReportMetric(float64(size)/1024, "KiB/page")
		})
	}
}

// A critical device event a worker's launcher reported is a red tick
// across that worker's bar, at its time, its tooltip naming the Xid, its
// meaning and the action; the page lists it under device events with the
// worker that replaced it.
func TestTrackingPageTimelineDeviceEvent(t *testing.T) {
	src, first := threeStarts()
	tl := *src.st.Containers[0].Timeline
	tl.DeviceEvents = []contract.HealthEvent{{Resource: "gpu", Device: "GPU-a", Event: "xid", XID: 94,
		Reason: "Xid 94 (contained ECC error) on GPU-a (index 0)", Action: "replace", Time: first.Add(3 * time.Second)}}
	src.st.Containers[0].Timeline = &tl
	src.st.Containers[1].Group = src.st.Containers[0].Group
	src.st.Containers[1].Timeline.Allocated = first.Add(3500 * time.Millisecond)
	page := getPage(t, src)
	svg := timelineSVG(t, page)
	bars := svg.All(byClass("g", "worker"))
	require.Len(t, bars, 3)
	ev := bars[0].All(byClass("path", "device-event"))
	require.Len(t, ev, 1, "a mark on the worker's bar")
	require.Empty(t, bars[1].All(byClass("path", "device-event")))
	require.Equal(t, "Xid 94 (contained ECC error) on GPU-a (index 0), action replace (+3.000 s)", ev[0].Child("title").Text)
	ticks := tickX(t, svg)
	pxPerSec := (ticks["4 s"] - ticks["0 s"]) / 4
	d := strings.Fields(ev[0].Attr("d"))
	x, err := strconv.ParseFloat(strings.TrimPrefix(d[0], "M"), 64)
	require.NoError(t, err)
	require.InDelta(t, ticks["0 s"]+3*pxPerSec, x, 0.11, "at the event's time")
	require.Contains(t, page, `<div id="device-events">`)
	require.Contains(t, page, "<td>container_1_0001_01_000003</td></tr>", "the replacement listed")
}
