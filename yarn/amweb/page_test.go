package amweb

import (
	"bytes"
	"html/template"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/resources"
	"github.com/xres/xres/resources/contract"
	"github.com/xres/xres/yarn"
	"github.com/xres/xres/yarn/amdraw"
	"github.com/xres/xres/yarn/amstatus"
)

// referencePage is the html/template the tracking page was rendered with
// before writeStatusPage (page.go says why `am` no longer links it): the
// page must stay byte for byte what it wrote, escaping included.
var referencePage = template.Must(template.New("status").Funcs(template.FuncMap{
	"raw":     func(s string) template.HTML { return template.HTML(s) },
	"devices": pageDevices,
	"named":   pageNamed,
	"exit":    pageExit,
	"seconds": func(s int64) string { return (time.Duration(s) * time.Second).String() },
	"rfc":     func(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) },
}).Parse(`<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>xres {{.App}}</title>
<style>body{font-family:sans-serif}table{border-collapse:collapse}td,th{border:1px solid #999;padding:2px 6px;text-align:left}</style>
</head><body>
<h1>xres application {{.App}}</h1>
<div id="live">
<p>State: <b>{{.Status.State}}</b> — <span id="target">running {{.Running}} of target {{.Workers}}{{if lt .Minimum .Workers}} (minimum {{.Minimum}}, scheduler-mode: reactive){{end}}</span>, starting {{.Starting}}{{if .Standby}}, standby spares {{.Standby}}{{end}}, succeeded {{.Succeeded}}, failed {{.Failed}}, restarts {{.Restarts}} (limit {{.MaxFailed}}), pending {{.Pending}}</p>
{{if named .Groups}}<table id="groups"><tr><th>group</th><th>running / target</th><th>minimum</th><th>starting</th><th>pending</th><th>succeeded</th><th>failed (limit)</th><th>restarts</th><th>profile</th></tr>
{{range .Groups}}<tr><td>{{.Name}}</td><td>{{.Running}} / {{.Workers}}</td><td>{{.Minimum}}</td><td>{{.Starting}}</td><td>{{.Pending}}</td><td>{{.Succeeded}}</td><td>{{.Failed}} ({{.MaxFailed}})</td><td>{{.Restarts}}</td><td>{{.Profile}}</td></tr>
{{end}}</table>{{else}}<p>Container profile: {{.Profile}}</p>{{end}}
<p>Hosts: {{range $i, $h := .Hosts}}{{if $i}}, {{end}}{{$h}}{{end}}</p>
{{if .Blacklist}}<p>Blacklisted nodes: {{range $i, $h := .Blacklist}}{{if $i}}, {{end}}{{$h}}{{end}}</p>{{end}}
{{if .Diagnostics}}<pre>{{.Diagnostics}}</pre>{{end}}
{{if .Unplaceable}}<p>Waiting: {{.Unplaceable}}</p>{{end}}
{{with .Timeline}}<div id="timeline"><p>Start of containers {{$.First}}–{{$.Last}}, one bar each: 0 s is {{if .OriginIsAsk}}the application's first ask{{else}}the earliest step shown{{end}}{{with .Origin}} ({{.}}){{end}}; a launcher's steps are on its host's clock. Each container id links to its logs on its NodeManager; hover for each step's time.</p>
{{raw .SVG}}</div>
{{end}}{{if .IdleGPUs}}<div id="idle-gpus"><p>Idle GPUs: granted, and under the idle threshold for longer than the window (xres.metrics.idle-threshold, xres.metrics.idle-window)</p>
<table><tr><th>container</th><th>host</th><th>GPU</th><th>UUID</th><th>utilisation</th><th>idle for</th></tr>
{{range .IdleGPUs}}<tr><td>{{.Container}}</td><td>{{.Host}}</td><td>{{.GPU}}</td><td>{{.UUID}}</td><td>{{.Util}} %</td><td>{{seconds .IdleForS}}</td></tr>
{{end}}</table></div>
{{end}}{{if .DeviceEvents}}<div id="device-events"><p>Device events: critical events on the workers' devices as their launchers reported them (replace: the worker was stopped and replaced; notify: it kept running; docs/gpu-health.md)</p>
<table><tr><th>time</th><th>host</th><th>container</th><th>device</th><th>event</th><th>action</th><th>replaced by</th></tr>
{{range .DeviceEvents}}<tr><td>{{rfc .Time}}</td><td>{{.Host}}</td><td>{{.Container}}</td><td>{{.Device}}</td><td>{{.Reason}}</td><td>{{.Action}}</td><td>{{.ReplacedBy}}</td></tr>
{{end}}</table></div>
{{end}}{{with .GPUDrawing}}<div id="gpus"><p>GPU utilisation and memory of the listed workers, from their launchers' samples:</p>
{{raw .}}</div>
{{end}}<p>Containers{{if .State}} {{.State}}{{end}}: {{if .Containers}}{{.First}}–{{.Last}} of {{end}}{{.ContainersTotal}}
{{- if ge .Prev 0}} · <a href="?offset={{.Prev}}&amp;limit={{.Limit}}{{if .State}}&amp;state={{.State}}{{end}}">previous</a>{{end}}
{{- if ge .Next 0}} · <a href="?offset={{.Next}}&amp;limit={{.Limit}}{{if .State}}&amp;state={{.State}}{{end}}">next</a>{{end}}
 · show: <a href="?">all</a>, <a href="?state=RUNNING">running</a>, <a href="?state=STARTING">starting</a>, <a href="?state=STANDBY">standby</a>, <a href="?state=FAILED">failed</a>, <a href="?state=SUCCEEDED">succeeded</a></p>
{{$groups := named .Groups}}<table><tr><th>container</th>{{if $groups}}<th>group</th>{{end}}<th>host</th><th>state</th><th>exit</th><th>devices</th><th>diagnostics</th></tr>
{{range .Containers}}<tr><td>{{.Container}}</td>{{if $groups}}<td>{{.Group}}</td>{{end}}<td>{{.Host}}</td><td>{{.State}}</td><td>{{exit .ExitStatus}}</td><td>{{devices .}}</td><td>{{.Diagnostics}}</td></tr>
{{end}}</table>
</div>
<p><a href="api/status">JSON</a> · <span id="refreshed">refreshes every 5 s</span></p>
<script>
// Every 5 s: fetch this page again (same query) and swap in its #live part.
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
`))

// TestStatusPageAsTemplate renders pages of every shape (groups or one
// profile, spares, a reactive minimum, blacklist, diagnostics, paging with
// a state filter, a timeline, hostile names and a hostile state query) with
// writeStatusPage and with the reference template: the bytes are equal.
func TestStatusPageAsTemplate(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 1, 0, 0, 0, time.UTC)
	exit := 137
	hostile := `<script>alert('x"&+')</script>` + "\x00"
	worker := func(i int, host, state string) amstatus.WorkerStatus {
		return amstatus.WorkerStatus{
			Container: "container_1_0001_01_00000" + string(rune('2'+i)), Host: host, NodeHTTP: host + ":8042", State: state,
			Devices: map[string][]resources.Properties{"gpu": {{"index": "0", "uuid": "GPU-a"}, {"index": "1"}}, "fpga": {{"index": "3"}}},
			Timeline: &amstatus.Timeline{Asked: t0, Allocated: t0.Add(time.Second), StartSent: t0.Add(2 * time.Second),
				StartAnswered: t0.Add(3 * time.Second), LauncherStarted: t0.Add(4 * time.Second)},
		}
	}
	profile := yarn.Resource{MemoryMB: 1728, VCores: 1, Extra: map[string]int64{"yarn.io/gpu": 2}}
	full := amstatus.Status{
		App: "application_1_0001", State: "RUNNING", Workers: 4, Minimum: 2, Pending: 1, Running: 2, Starting: 1, Standby: 1,
		Succeeded: 3, Failed: 1, Restarts: 2, MaxFailed: 5, Profile: profile,
		Groups: []amstatus.GroupStatus{
			{Name: "trainer", Workers: 3, Minimum: 2, Running: 2, Profile: profile},
			{Name: hostile, Workers: 1, Minimum: 1, Failed: 1, MaxFailed: 2, Profile: yarn.Resource{MemoryMB: 512, VCores: 2}},
		},
		Hosts: []string{"host-a", hostile}, Blacklist: []string{"bad-1", "bad-2"},
		Diagnostics: "worker 3 failed:\n" + hostile, Unplaceable: "2 workers: " + hostile,
		ContainersTotal: 9, Offset: 2,
	}
	full.Containers = []amstatus.WorkerStatus{worker(0, "host-a", "RUNNING"), worker(1, hostile, "FAILED")}
	full.Containers[1].ExitStatus = &exit
	full.Containers[1].Diagnostics = hostile
	full.Containers[1].Group = hostile
	full.Containers[0].Group = "trainer"
	noTimeline := full
	noTimeline.Containers = []amstatus.WorkerStatus{{Container: "container_1_0001_01_000002", Host: "h", State: "STARTING"}}
	plain := amstatus.Status{App: "application_1_0002", State: "ACCEPTED", Workers: 2, Minimum: 2, Profile: profile,
		Groups: []amstatus.GroupStatus{{Workers: 2, Minimum: 2, Profile: profile}}}
	tests := []struct {
		name string
		page htmlPage
	}{
		{name: "groups, timeline, hostile names, state filter", page: htmlPage{Status: full, Limit: 2, State: "RUNNING"}},
		{name: "hostile state query", page: htmlPage{Status: full, Limit: 2, State: `A&B"<x> +/?=` + "\u00e9"}},
		{name: "log links", page: htmlPage{Status: full, Limit: 2, logs: amdraw.NodeLogs{Scheme: "https", User: "alice"}}},
		{name: "no timeline marks", page: htmlPage{Status: noTimeline, Limit: 100}},
		{name: "one unnamed group, nothing yet", page: htmlPage{Status: plain, Limit: 100}},
		{name: "empty", page: htmlPage{}},
		{name: "idle GPUs and their drawing", page: gpuPage(full, hostile)},
		{name: "device events", page: eventPage(full, hostile)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var want, got bytes.Buffer
			require.NoError(t, referencePage.Execute(&want, tc.page))
			require.NoError(t, writeStatusPage(&got, tc.page))
			require.Equal(t, want.String(), got.String())
		})
	}
}

// eventPage is p with a device event on its first listed worker, replaced
// by the second (hostile names), and one whose device NVML could not name.
func eventPage(st amstatus.Status, hostile string) htmlPage {
	at := time.Date(2026, 12, 7, 1, 2, 3, 456000000, time.FixedZone("x", 3600))
	st.DeviceEvents = []amstatus.DeviceEvent{
		{HealthEvent: contract.HealthEvent{Resource: "gpu", Device: "GPU-" + hostile, Event: "xid", XID: 94, Reason: "Xid 94 (contained ECC error) on GPU-" + hostile, Action: "replace", Time: at},
			Container: st.Containers[0].Container, Host: hostile, ReplacedBy: st.Containers[1].Container},
		{HealthEvent: contract.HealthEvent{Resource: "gpu", Event: "gpu-lost", Reason: "GPU lost", Action: "notify", Time: at.Add(time.Second)},
			Container: st.Containers[1].Container, Host: "host-a"},
	}
	return htmlPage{Status: st, Limit: 2}
}

// gpuPage is p with an idle GPU listed (hostile names) and GPU samples of
// its first listed worker to draw.
func gpuPage(st amstatus.Status, hostile string) htmlPage {
	st.IdleGPUs = []amstatus.IdleGPU{{Container: st.Containers[0].Container, Host: hostile, GPU: "0", UUID: "GPU-" + hostile, Util: 2.5, IdleForS: 754}}
	var track amstatus.GPUTrack
	for i := int64(0); i < 5; i++ {
		track.Add([]contract.GPUSample{{Index: "0", UUID: "GPU-" + hostile, At: 1700000000 + 10*i, Util: float64(10 * i), MemMiB: float64(100 * i)}}, amstatus.IdleRule{Threshold: 5})
	}
	ws := []amstatus.WorkerGPUs{{Container: st.Containers[0].Container, Host: hostile, GPUs: track.GPUs}}
	return htmlPage{Status: st, Limit: 2, gpus: func() []amstatus.WorkerGPUs { return ws }}
}
