package amdraw

import (
	"math"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/xres/xres/yarn/amstatus"
)

// The tracking page draws the listed workers' starts as an inline SVG:
//
//	 ■ RM scheduling ■ AM start queue ■ NodeManager start call ■ …   (legend)
//	                    0 s      1 s      2 s      3 s                (axis, seconds)
//	 container_…_000002 ███▓▓▒▒░░                                     one bar per listed
//	 container_…_000003 ████▓▓▒░░░░ starting                          container, its phases
//	                                                                  coloured in order
//
// The x axis is shared: 0 is the application's first ask (Status.FirstAsk)
// or, when it is not known (an AM restarted, a static source), the
// earliest mark drawn. Each bar is one container of the page (a restarted
// worker is its replacement container, with its own start); its label
// links to the container's logs on its NodeManager, and each phase's
// tooltip says how long it took and when.
//
// The drawing is written here, not by html/template actions: with one
// action per attribute the page took 13 times as long to render
// (BenchmarkTrackingPage). Every string from the cluster (container id,
// host, link) goes through htmlEscaper, as html/template escapes text and
// quoted attributes; `am` links no html/template (yarn/amweb/page.go says
// why).

// Timeline drawing geometry (SVG user units, CSS pixels at zoom 1).
const (
	svgLabelW = 270 // the container id column, right-aligned to it
	svgChartW = 760 // the time axis
	svgRightM = 30  // room for the last tick's label
	svgAxisY  = 38  // the axis line; tick labels above it
	svgTop    = 44  // the first bar's row
	svgRowH   = 11  // row pitch: 64 workers make a 754-unit drawing
	svgBarH   = 8
	svgBottom = 6
)

// svgPhases are the drawn phases, one per pair of consecutive marks, with
// their legend name and colour, and their full name as Status lists it.
var svgPhases = [nMarks - 1]struct{ legend, color, name string }{
	{"RM scheduling", "#4e79a7", amstatus.PhaseScheduling},
	{"AM start queue", "#f28e2b", amstatus.PhaseStartQueue},
	{"NodeManager start call", "#e15759", amstatus.PhaseStartCall},
	{"localization, launch", "#76b7b2", amstatus.PhaseLocalization},
	{"device reservation", "#59a14f", amstatus.PhaseReservation},
	{"report, rendezvous, exec", "#b07aa1", amstatus.PhaseRendezvous},
}

// markNames name the marks in a tooltip.
var markNames = [nMarks]string{"asked", "allocated", "start sent", "start answered",
	"launcher started", "devices reserved", "command started"}

// NodeLogs makes the link from a container to its logs on its NodeManager's
// web UI: /node/containerlogs/<container>/<user>, or the container's page
// (/node/container/<container>, which links its logs) when the user is not
// known.
type NodeLogs struct {
	Scheme, User string
}

func (n NodeLogs) link(ws *amstatus.WorkerStatus) string {
	if ws.NodeHTTP == "" || ws.Container == "" {
		return ""
	}
	scheme := n.Scheme
	if scheme == "" {
		scheme = "http"
	}
	p := "/node/container/" + url.PathEscape(ws.Container)
	if n.User != "" {
		p = "/node/containerlogs/" + url.PathEscape(ws.Container) + "/" + url.PathEscape(n.User)
	}
	return (&url.URL{Scheme: scheme, Host: ws.NodeHTTP, Path: p}).String()
}

// View is the page's drawing: the SVG and what its caption says.
type View struct {
	SVG         string // escaped where drawn: written into the page as it is
	Origin      string // 0 s, as a UTC time
	OriginIsAsk bool   // 0 is the first ask (else the earliest mark drawn)
}

// nMarks is how many marks an amstatus.Timeline has (marksOf).
const nMarks = 7

// marksOf lists a timeline's marks in order (zero: not known).
func marksOf(tl *amstatus.Timeline) [nMarks]time.Time {
	return [nMarks]time.Time{tl.Asked, tl.Allocated, tl.StartSent, tl.StartAnswered,
		tl.LauncherStarted, tl.DevicesReserved, tl.CommandStarted}
}

// svgWriter appends SVG text; numbers are written to a tenth of a unit.
type svgWriter struct{ b []byte }

func (w *svgWriter) s(parts ...string) {
	for _, p := range parts {
		w.b = append(w.b, p...)
	}
}

// htmlEscaper escapes as html/template's HTMLEscapeString: & < > ' " and NUL.
var htmlEscaper = strings.NewReplacer("\x00", "\uFFFD", `"`, "&#34;", "&", "&amp;", "'", "&#39;", "<", "&lt;", ">", "&gt;")

// esc writes s escaped for HTML text or a quoted attribute.
func (w *svgWriter) esc(s string) {
	if strings.ContainsAny(s, "<>&'\"\x00") {
		s = htmlEscaper.Replace(s)
	}
	w.b = append(w.b, s...)
}

func (w *svgWriter) num(v float64) { w.b = strconv.AppendFloat(w.b, math.Round(v*10)/10, 'f', -1, 64) }

func (w *svgWriter) int(v int) { w.b = strconv.AppendInt(w.b, int64(v), 10) }

// sec writes the offset of t from origin, "+1.234 s".
func (w *svgWriter) sec(t, origin time.Time) {
	w.b = append(w.b, '+')
	w.b = strconv.AppendFloat(w.b, t.Sub(origin).Seconds(), 'f', 3, 64)
	w.b = append(w.b, " s"...)
}

// Draw draws the containers of s (the page); nil when there are
// none. O(containers), about 1.2 KiB of SVG each.
func Draw(s amstatus.Status, links NodeLogs) *View {
	if len(s.Containers) == 0 {
		return nil
	}
	origin, last, fromAsk := extent(s)
	ax := newAxis(origin, last, len(s.Containers))
	w := &svgWriter{b: make([]byte, 0, 2048+len(s.Containers)*1280)}
	w.header(ax)
	w.legend()
	w.axis(ax)
	for i := range s.Containers {
		w.row(&s.Containers[i], svgTop+i*svgRowH, ax, links)
	}
	w.s("</svg>")

	v := &View{SVG: string(w.b), OriginIsAsk: fromAsk}
	if !origin.IsZero() {
		v.Origin = origin.UTC().Format("2006-01-02 15:04:05.000 MST")
	}
	return v
}

// extent is the drawing's 0 s (the first ask when known, else the earliest
// mark) and its last mark.
func extent(s amstatus.Status) (origin, last time.Time, fromAsk bool) {
	if s.FirstAsk != nil {
		origin = *s.FirstAsk
	}
	fromAsk = !origin.IsZero()
	for i := range s.Containers {
		tl := s.Containers[i].Timeline
		if tl == nil {
			continue
		}
		for _, m := range marksOf(tl) {
			if m.IsZero() {
				continue
			}
			if !fromAsk && (origin.IsZero() || m.Before(origin)) {
				origin = m
			}
			if m.After(last) {
				last = m
			}
		}
	}
	return origin, last, fromAsk
}

// axis is the time axis: from origin, a tick every step seconds up to end,
// scale pixels a second; bottom is the y below the last row.
type axis struct {
	origin           time.Time
	step, end, scale float64
	bottom           int
}

func newAxis(origin, last time.Time, rows int) axis {
	span := last.Sub(origin).Seconds()
	if origin.IsZero() || last.IsZero() || span < 1 {
		span = 1
	}
	step := tickStep(span)
	// The axis ends on a tick, so the last mark is never at the very edge.
	end := math.Ceil(span/step-1e-9) * step
	return axis{origin: origin, step: step, end: end, scale: svgChartW / end, bottom: svgTop + rows*svgRowH}
}

// x is t's position on the axis (t before 0 s at 0 s).
func (ax axis) x(t time.Time) float64 {
	return svgLabelW + math.Max(t.Sub(ax.origin).Seconds(), 0)*ax.scale
}

// header opens the SVG with its size and the phases' colours.
func (w *svgWriter) header(ax axis) {
	width, bottom := svgLabelW+svgChartW+svgRightM, ax.bottom
	w.s(`<svg id="timeline-svg" xmlns="http://www.w3.org/2000/svg" width="`)
	w.int(width)
	w.s(`" height="`)
	w.int(bottom + svgBottom)
	w.s(`" viewBox="0 0 `)
	w.int(width)
	w.s(" ")
	w.int(bottom + svgBottom)
	w.s(`" font-family="sans-serif" font-size="10"><style>`)
	for k, p := range svgPhases {
		w.s(".phase-", strconv.Itoa(k), "{fill:", p.color, "}")
	}
	w.s(`.label{font-family:monospace;fill:#0645ad}.failed .label{fill:#b00020}.note{fill:#777}a:hover .label{text-decoration:underline}</style>`, "\n")
}

// legend names each phase's colour; its title is the phase as Status names it.
func (w *svgWriter) legend() {
	w.s(`<g class="legend">`)
	lx := 4.0
	for k, p := range svgPhases {
		w.s(`<g><rect class="phase-`, strconv.Itoa(k), `" x="`)
		w.num(lx)
		w.s(`" y="4" width="10" height="10"/><text x="`)
		w.num(lx + 14)
		w.s(`" y="13">`, p.legend, `</text><title>`)
		w.esc(p.name)
		w.s(`</title></g>`)
		lx += 14 + 6.2*float64(len([]rune(p.legend))) + 18
	}
	w.s("</g>\n")
}

// axis draws the ticks in seconds and the grid lines through the bars.
func (w *svgWriter) axis(ax axis) {
	step, end, scale, bottom := ax.step, ax.end, ax.scale, ax.bottom
	w.s(`<g class="axis"><line x1="`)
	w.int(svgLabelW)
	w.s(`" y1="`)
	w.int(svgAxisY)
	w.s(`" x2="`)
	w.int(svgLabelW + svgChartW)
	w.s(`" y2="`)
	w.int(svgAxisY)
	w.s(`" stroke="#999"/>`)
	decimals := max(0, int(-math.Floor(math.Log10(step)+1e-9)))
	p10 := math.Pow(10, float64(decimals))
	for i := 0; float64(i)*step <= end+1e-9; i++ {
		sec := float64(i) * step
		x := svgLabelW + sec*scale
		w.s(`<line x1="`)
		w.num(x)
		w.s(`" y1="`)
		w.int(svgAxisY)
		w.s(`" x2="`)
		w.num(x)
		w.s(`" y2="`)
		w.int(bottom)
		w.s(`" stroke="#e4e4e4"/><text x="`)
		w.num(x)
		w.s(`" y="`)
		w.int(svgAxisY - 4)
		w.s(`" text-anchor="middle">`)
		w.b = strconv.AppendFloat(w.b, math.Round(sec*p10)/p10, 'f', -1, 64) // 0.5 s, 1 s; never 0.30000000000000004
		w.s(" s</text>")
	}
	w.s("</g>\n")
}

// row draws one container at y: its label (linked to its logs), a bar per
// phase between its known marks, and a note for a start not complete.
func (w *svgWriter) row(ws *amstatus.WorkerStatus, y int, ax axis, links NodeLogs) {
	barY, textY := y+(svgRowH-svgBarH)/2, y+svgRowH-2
	w.s(`<g class="worker`)
	if ws.State == amstatus.StateFailed {
		w.s(" failed")
	}
	w.s(`" data-container="`)
	w.esc(ws.Container)
	w.s(`" data-state="`)
	w.esc(ws.State)
	w.s(`"><title>`)
	w.esc(ws.Container)
	w.s(" on ")
	w.esc(ws.Host)
	w.s(", ")
	w.esc(ws.State)
	if ws.Timeline == nil {
		w.s("; no start timeline (adopted from an earlier AM attempt)")
	} else if b := ws.Timeline.AskHeartbeats; b > 0 {
		w.s("; allocated ", strconv.Itoa(b), " heartbeat", plural(b), " after the one that asked")
	}
	w.s("</title>")
	href := links.link(ws)
	if href != "" {
		w.s(`<a href="`)
		w.esc(href)
		w.s(`" target="_blank">`)
	}
	w.s(`<text class="label" x="`)
	w.int(svgLabelW - 6)
	w.s(`" y="`)
	w.int(textY)
	w.s(`" text-anchor="end">`)
	w.esc(ws.Container)
	w.s("</text>")
	if href != "" {
		w.s("</a>")
	}

	noteX := float64(svgLabelW + 4)
	if ws.Timeline != nil {
		noteX = w.bars(ws.Timeline, barY, ax)
		w.deviceEvents(ws.Timeline, barY, ax)
	}
	note := ""
	switch {
	case ws.Timeline == nil:
		note = "no start timeline (adopted from an earlier AM attempt)"
	case ws.State == amstatus.StateStarting:
		note = "starting"
	case ws.State == amstatus.StateFailed:
		note = "failed"
	}
	if note != "" {
		w.s(`<text class="note" x="`)
		w.num(noteX)
		w.s(`" y="`)
		w.int(textY)
		w.s(`">`, note, "</text>")
	}
	w.s("</g>\n")
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// roundDur rounds d for a tooltip: ms below 10 s, else tenths of a second.
func roundDur(d time.Duration) string {
	if d < 10*time.Second && d > -10*time.Second {
		return strconv.FormatInt(d.Milliseconds(), 10) + " ms"
	}
	return d.Round(100 * time.Millisecond).String()
}

// tickStep is the axis' tick step in seconds for a span: 1, 2 or 5 times
// a power of ten, at most 10 ticks.
func tickStep(span float64) float64 {
	raw := span / 10
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, f := range []float64{1, 2, 5, 10} {
		if f*p >= raw-1e-12 {
			return f * p
		}
	}
	return 10 * p
}

// deviceEvents draws a red tick across the bar at each critical device
// event its launcher reported (docs/gpu-health.md), on its host's clock.
func (w *svgWriter) deviceEvents(tl *amstatus.Timeline, barY int, ax axis) {
	for _, e := range tl.DeviceEvents {
		w.s(`<path class="device-event" stroke="#b00020" stroke-width="3" d="M`)
		w.num(math.Min(ax.x(e.Time), svgLabelW+svgChartW))
		w.s(" ")
		w.int(barY - 3)
		w.s(" v ")
		w.int(svgBarH + 6)
		w.s(`"><title>`)
		w.esc(e.Reason)
		w.s(", action ")
		w.esc(e.Action)
		w.s(" (")
		w.sec(e.Time, ax.origin)
		w.s(")</title></path>")
	}
}

// bars draws a bar per phase of tl between its known marks, at barY; it
// returns where a note after them may start.
func (w *svgWriter) bars(tl *amstatus.Timeline, barY int, ax axis) (noteX float64) {
	origin, xOf := ax.origin, ax.x
	noteX = float64(svgLabelW + 4)
	marks := marksOf(tl)
	prev, prevX := -1, 0.0
	for m, at := range marks {
		if at.IsZero() {
			continue
		}
		// A launcher's host clock may lag the AM's: a mark is drawn
		// no earlier than the one before it.
		x := math.Max(xOf(at), prevX)
		if prev >= 0 {
			k := m - 1 // the phase ending at this mark (a skipped mark joins its neighbour)
			w.s(`<rect class="phase-`, strconv.Itoa(k), `" x="`)
			w.num(prevX)
			w.s(`" y="`)
			w.int(barY)
			w.s(`" width="`)
			w.num(math.Round(x*10)/10 - math.Round(prevX*10)/10)
			w.s(`" height="`)
			w.int(svgBarH)
			w.s(`"><title>`)
			if prev == m-1 {
				w.s(svgPhases[k].legend)
			} else {
				w.s(markNames[prev], " → ", markNames[m])
			}
			w.s(": ", roundDur(at.Sub(marks[prev])), " (")
			w.sec(marks[prev], origin)
			w.s(" → ")
			w.sec(at, origin)
			w.s(")</title></rect>")
			noteX = x + 4
		}
		prev, prevX = m, x
	}
	return noteX
}
