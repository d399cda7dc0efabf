package amweb

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/xres/xres/yarn/amstatus"
)

// The tracking page is written here, not by html/template: text/template
// looks methods up by name at run time (reflect's MethodByName), and a
// binary that can do that keeps every exported method of every type it
// links, since the linker cannot tell which one a template will call. In
// `am` that was ~3 MiB of code and tables, all of it resident in the AM
// (its binary's pages are mapped whole), so the AM's peak RSS at N=64 went
// from 19.9 to ~17 MiB without it (make bench-am-curve). Every value goes
// through escText (text and the title) or escQuery (a link's query); the
// page is byte for byte what the former template wrote
// (TestStatusPageAsTemplate keeps that template as the reference).

// htmlText escapes as html/template does for text: & < > ' " + and NUL.
var htmlText = strings.NewReplacer("\x00", "\uFFFD", `"`, "&#34;", "&", "&amp;", "'", "&#39;", "+", "&#43;", "<", "&lt;", ">", "&gt;")

// pageWriter appends the page; values go through its escaping methods.
type pageWriter struct{ b strings.Builder }

func (w *pageWriter) s(parts ...string) {
	for _, p := range parts {
		w.b.WriteString(p)
	}
}

// t writes v (fmt.Sprint of it) escaped for HTML text.
func (w *pageWriter) t(v any) {
	var s string
	switch x := v.(type) {
	case string:
		s = x
	case int:
		s = strconv.Itoa(x)
	default:
		s = fmt.Sprint(x)
	}
	w.b.WriteString(htmlText.Replace(s))
}

// q writes s escaped for a URL's query inside a quoted attribute: every
// byte but RFC 3986's unreserved ones percent-encoded (lower-case hex, as
// html/template writes it).
func (w *pageWriter) q(s string) {
	const hex = "0123456789abcdef"
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~' {
			w.b.WriteByte(c)
			continue
		}
		w.b.WriteByte('%')
		w.b.WriteByte(hex[c>>4])
		w.b.WriteByte(hex[c&15])
	}
}

// list writes items escaped, ", " between them.
func (w *pageWriter) list(items []string) {
	for i, h := range items {
		if i > 0 {
			w.s(", ")
		}
		w.t(h)
	}
}

// pageDevices is a worker's devices, "gpu: 0 (GPU-…), 1; fpga: 0".
func pageDevices(ws amstatus.WorkerStatus) string {
	var parts []string
	for _, name := range sortedKeys(ws.Devices) {
		var ids []string
		for _, d := range ws.Devices[name] {
			id := d["index"]
			if u := d["uuid"]; u != "" {
				id += " (" + u + ")"
			}
			ids = append(ids, id)
		}
		parts = append(parts, name+": "+strings.Join(ids, ", "))
	}
	return strings.Join(parts, "; ")
}

// pageNamed says whether the application's groups have names (more than
// the one unnamed group).
func pageNamed(gs []amstatus.GroupStatus) bool { return len(gs) > 0 && gs[0].Name != "" }

// pageExit is an exit status, "" when not known.
func pageExit(p *int) string {
	if p == nil {
		return ""
	}
	return strconv.Itoa(*p)
}

// writeStatusPage writes the tracking page of p.
func writeStatusPage(out io.Writer, p htmlPage) error {
	w := &pageWriter{}
	w.s(`<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>xres `)
	w.t(p.App)
	w.s(`</title>
<style>body{font-family:sans-serif}table{border-collapse:collapse}td,th{border:1px solid #999;padding:2px 6px;text-align:left}</style>
</head><body>
<h1>xres application `)
	w.t(p.App)
	w.s(`</h1>
<div id="live">
<p>State: <b>`)
	w.t(p.Status.State)
	w.s(`</b> — <span id="target">running `)
	w.t(p.Running)
	w.s(` of target `)
	w.t(p.Workers)
	if p.Minimum < p.Workers {
		w.s(` (minimum `)
		w.t(p.Minimum)
		w.s(`, scheduler-mode: reactive)`)
	}
	w.s(`</span>, starting `)
	w.t(p.Starting)
	if p.Standby != 0 {
		w.s(`, standby spares `)
		w.t(p.Standby)
	}
	w.s(`, succeeded `)
	w.t(p.Succeeded)
	w.s(`, failed `)
	w.t(p.Failed)
	w.s(`, restarts `)
	w.t(p.Restarts)
	w.s(` (limit `)
	w.t(p.MaxFailed)
	w.s(`), pending `)
	w.t(p.Pending)
	w.s("</p>\n")
	named := pageNamed(p.Groups)
	if named {
		w.s(`<table id="groups"><tr><th>group</th><th>running / target</th><th>minimum</th><th>starting</th><th>pending</th><th>succeeded</th><th>failed (limit)</th><th>restarts</th><th>profile</th></tr>` + "\n")
		for _, g := range p.Groups {
			w.s(`<tr><td>`)
			w.t(g.Name)
			w.s(`</td><td>`)
			w.t(g.Running)
			w.s(` / `)
			w.t(g.Workers)
			w.s(`</td><td>`)
			w.t(g.Minimum)
			w.s(`</td><td>`)
			w.t(g.Starting)
			w.s(`</td><td>`)
			w.t(g.Pending)
			w.s(`</td><td>`)
			w.t(g.Succeeded)
			w.s(`</td><td>`)
			w.t(g.Failed)
			w.s(` (`)
			w.t(g.MaxFailed)
			w.s(`)</td><td>`)
			w.t(g.Restarts)
			w.s(`</td><td>`)
			w.t(g.Profile)
			w.s("</td></tr>\n")
		}
		w.s(`</table>`)
	} else {
		w.s(`<p>Container profile: `)
		w.t(p.Profile)
		w.s(`</p>`)
	}
	w.s("\n<p>Hosts: ")
	w.list(p.Hosts)
	w.s("</p>\n")
	if len(p.Blacklist) > 0 {
		w.s(`<p>Blacklisted nodes: `)
		w.list(p.Blacklist)
		w.s(`</p>`)
	}
	w.s("\n")
	if p.Diagnostics != "" {
		w.s(`<pre>`)
		w.t(p.Diagnostics)
		w.s(`</pre>`)
	}
	w.s("\n")
	if p.Unplaceable != "" {
		w.s(`<p>Waiting: `)
		w.t(p.Unplaceable)
		w.s(`</p>`)
	}
	w.s("\n")
	if tl := p.Timeline(); tl != nil {
		w.s(`<div id="timeline"><p>Start of containers `)
		w.t(p.First())
		w.s(`–`)
		w.t(p.Last())
		w.s(`, one bar each: 0 s is `)
		if tl.OriginIsAsk {
			w.s(`the application's first ask`)
		} else {
			w.s(`the earliest step shown`)
		}
		if tl.Origin != "" {
			w.s(` (`)
			w.t(tl.Origin)
			w.s(`)`)
		}
		w.s("; a launcher's steps are on its host's clock. Each container id links to its logs on its NodeManager; hover for each step's time.</p>\n")
		w.s(tl.SVG) // escaped where it is drawn (amdraw)
		w.s("</div>\n")
	}
	if len(p.IdleGPUs) > 0 {
		w.s(`<div id="idle-gpus"><p>Idle GPUs: granted, and under the idle threshold for longer than the window (xres.metrics.idle-threshold, xres.metrics.idle-window)</p>
<table><tr><th>container</th><th>host</th><th>GPU</th><th>UUID</th><th>utilisation</th><th>idle for</th></tr>
`)
		for _, g := range p.IdleGPUs {
			w.s(`<tr><td>`)
			w.t(g.Container)
			w.s(`</td><td>`)
			w.t(g.Host)
			w.s(`</td><td>`)
			w.t(g.GPU)
			w.s(`</td><td>`)
			w.t(g.UUID)
			w.s(`</td><td>`)
			w.t(g.Util)
			w.s(` %</td><td>`)
			w.t((time.Duration(g.IdleForS) * time.Second).String())
			w.s("</td></tr>\n")
		}
		w.s("</table></div>\n")
	}
	if len(p.DeviceEvents) > 0 {
		w.s(`<div id="device-events"><p>Device events: critical events on the workers' devices as their launchers reported them (replace: the worker was stopped and replaced; notify: it kept running; docs/gpu-health.md)</p>
<table><tr><th>time</th><th>host</th><th>container</th><th>device</th><th>event</th><th>action</th><th>replaced by</th></tr>
`)
		for _, e := range p.DeviceEvents {
			w.s(`<tr><td>`)
			w.t(e.Time.UTC().Format(time.RFC3339Nano))
			w.s(`</td><td>`)
			w.t(e.Host)
			w.s(`</td><td>`)
			w.t(e.Container)
			w.s(`</td><td>`)
			w.t(e.Device)
			w.s(`</td><td>`)
			w.t(e.Reason)
			w.s(`</td><td>`)
			w.t(e.Action)
			w.s(`</td><td>`)
			w.t(e.ReplacedBy)
			w.s("</td></tr>\n")
		}
		w.s("</table></div>\n")
	}
	if d := p.GPUDrawing(); d != "" {
		w.s("<div id=\"gpus\"><p>GPU utilisation and memory of the listed workers, from their launchers' samples:</p>\n")
		w.s(d) // escaped where it is drawn (amdraw)
		w.s("</div>\n")
	}
	w.s(`<p>Containers`)
	if p.State != "" {
		w.s(` `)
		w.t(p.State)
	}
	w.s(`: `)
	if len(p.Containers) > 0 {
		w.t(p.First())
		w.s(`–`)
		w.t(p.Last())
		w.s(` of `)
	}
	w.t(p.ContainersTotal)
	link := func(offset int, text string) {
		w.s(` · <a href="?offset=`)
		w.q(strconv.Itoa(offset))
		w.s(`&amp;limit=`)
		w.q(strconv.Itoa(p.Limit))
		if p.State != "" {
			w.s(`&amp;state=`)
			w.q(p.State)
		}
		w.s(`">`, text, `</a>`)
	}
	if prev := p.Prev(); prev >= 0 {
		link(prev, "previous")
	}
	if next := p.Next(); next >= 0 {
		link(next, "next")
	}
	w.s("\n" + ` · show: <a href="?">all</a>, <a href="?state=RUNNING">running</a>, <a href="?state=STARTING">starting</a>, <a href="?state=STANDBY">standby</a>, <a href="?state=FAILED">failed</a>, <a href="?state=SUCCEEDED">succeeded</a></p>` + "\n")
	w.s(`<table><tr><th>container</th>`)
	if named {
		w.s(`<th>group</th>`)
	}
	w.s("<th>host</th><th>state</th><th>exit</th><th>devices</th><th>diagnostics</th></tr>\n")
	for _, c := range p.Containers {
		w.s(`<tr><td>`)
		w.t(c.Container)
		w.s(`</td>`)
		if named {
			w.s(`<td>`)
			w.t(c.Group)
			w.s(`</td>`)
		}
		w.s(`<td>`)
		w.t(c.Host)
		w.s(`</td><td>`)
		w.t(c.State)
		w.s(`</td><td>`)
		w.t(pageExit(c.ExitStatus))
		w.s(`</td><td>`)
		w.t(pageDevices(c))
		w.s(`</td><td>`)
		w.t(c.Diagnostics)
		w.s("</td></tr>\n")
	}
	w.s("</table>\n</div>\n" + pageScript)
	_, err := io.WriteString(out, w.b.String())
	return err
}

// pageScript ends the page: every 5 s it fetches the page again (same
// query) and swaps in its #live part. (The empty line after <script> is
// where html/template dropped the script's comment.)
const pageScript = `<p><a href="api/status">JSON</a> · <span id="refreshed">refreshes every 5 s</span></p>
<script>

(function () {
  var n = 0, note = document.getElementById("refreshed");
  function tick() {
    fetch(location.href, {cache: "no-store"}).then(function (r) {
      return r.ok ? r.text() : Promise.reject("HTTP " + r.status);
    }).then(function (html) {
      var live = new DOMParser().parseFromString(html, "text/html").getElementById("live");
      if (live) document.getElementById("live").replaceWith(live);
      n++;
      note.dataset.refreshes = n;
      note.textContent = "updated " + new Date().toLocaleTimeString() + ", every 5 s";
    }).catch(function (e) {
      note.textContent = "refresh failed (" + e + "); retrying every 5 s";
    }).finally(function () { setTimeout(tick, 5000); });
  }
  setTimeout(tick, 5000);
})();
</script>
</body></html>
`
