package amcli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/xres/xres/conf"
)

// gpuPluginResources are the YARN resources whose NodeManager plugins
// assign GPUs to containers (yarn.io/gpu: YARN's GPU plugin;
// nvidia.com/gpu: the pluggable device framework's NVIDIA plugin).
var gpuPluginResources = map[string]bool{"yarn.io/gpu": true, "nvidia.com/gpu": true}

// nodeModeJSON is what one NodeManager's REST says of one GPU resource,
// and what an xres launcher does on it.
type nodeModeJSON struct {
	Node     string `json:"node"`
	Resource string `json:"resource"`
	// Mode: plugin (the NodeManager assigns GPUs: launchers take its
	// assignment), counted (it only counts: host coordination), unknown
	// (its REST did not answer).
	Mode     string `json:"mode"`
	Assigned int    `json:"assigned,omitempty"` // GPUs assigned to containers now
	Total    int    `json:"total,omitempty"`
	Launcher string `json:"launcher"`
	Error    string `json:"error,omitempty"`
}

// nodeModeTimeout bounds each NodeManager's answer.
const nodeModeTimeout = 5 * time.Second

// nodeModes asks every running NodeManager's REST
// (/ws/v1/node/resources/<name>, at the http address the RM lists) about
// each GPU resource the configuration requests from YARN: the mode an xres
// launcher finds there. nil where the cluster is not checked.
func nodeModes(ctx context.Context, e *env, rep resourcesReport, offline bool) []nodeModeJSON {
	names := map[string]bool{}
	add := func(specs []specJSON) {
		for _, s := range specs {
			if gpuPluginResources[s.YarnKey] {
				names[s.YarnKey] = true
			}
		}
	}
	add(rep.Resources)
	for _, g := range rep.Groups {
		add(g.Resources)
	}
	if offline || len(names) == 0 || !rep.Cluster.Checked || e.deps.rm == nil {
		return nil
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	rm, hconf, closeRM, err := e.deps.rm(cctx, e.getenv, e.log, nil)
	if err != nil {
		return nil
	}
	defer closeRM()
	nodes, err := rm.Nodes(cctx, "RUNNING")
	if err != nil {
		return nil
	}
	https := false
	if hconf != nil {
		policy, _ := hconf.Get(conf.HadoopYarnHTTPPolicy)
		https = strings.EqualFold(policy, "HTTPS_ONLY")
	}
	var (
		mu  sync.Mutex
		out []nodeModeJSON
		wg  sync.WaitGroup
	)
	hc := &http.Client{Timeout: nodeModeTimeout}
	for _, n := range nodes {
		for name := range names {
			wg.Add(1)
			go func() {
				defer wg.Done()
				m := askNodeMode(cctx, hc, n.HTTPAddress, name, https)
				m.Node = n.ID
				mu.Lock()
				out = append(out, m)
				mu.Unlock()
			}()
		}
	}
	wg.Wait()
	sort.Slice(out, func(i, j int) bool {
		if out[i].Node != out[j].Node {
			return out[i].Node < out[j].Node
		}
		return out[i].Resource < out[j].Resource
	})
	return out
}

// askNodeMode asks one NodeManager about one resource.
func askNodeMode(ctx context.Context, hc *http.Client, addr, name string, https bool) nodeModeJSON {
	m := nodeModeJSON{Resource: name, Mode: "unknown"}
	scheme := "http"
	if https {
		scheme = "https"
	}
	u := scheme + "://" + addr + "/ws/v1/node/resources/" + url.PathEscape(name)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err == nil {
		req.Header.Set("Accept", "application/json")
		var resp *http.Response
		if resp, err = hc.Do(req); err == nil {
			defer resp.Body.Close()
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
			switch {
			case resp.StatusCode == http.StatusNotFound:
				m.Mode = "counted"
			case resp.StatusCode == http.StatusUnauthorized:
				err = fmt.Errorf("GET %s: HTTP 401 (the NodeManager requires SPNEGO; launchers in containers without Kerberos tickets exit 215 there)", u)
			case resp.StatusCode != http.StatusOK:
				err = fmt.Errorf("GET %s: HTTP %d", u, resp.StatusCode)
			default:
				var plugin bool
				plugin, m.Assigned, m.Total, err = parseNodeResource(b)
				if err != nil {
					err = fmt.Errorf("GET %s: %w", u, err)
				} else if plugin {
					m.Mode = "plugin"
				} else {
					m.Mode = "counted"
				}
			}
		}
	}
	switch m.Mode {
	case "plugin":
		m.Launcher = "takes the GPUs the NodeManager assigned to its container (matched by minor number, named by uuid)"
	case "counted":
		m.Launcher = "host coordination picks the GPUs (the NodeManager only counts them)"
	default:
		m.Error = err.Error()
		m.Launcher = "exits 215 unless NVIDIA_VISIBLE_DEVICES or the node's yarn-site.xml says otherwise"
	}
	return m
}

// parseNodeResource reads the counts of NMGpuResourceInfo /
// NMDeviceResourceInfo in the shapes Hadoop's JSON providers give it
// (root element or none, a one-element list as an object); an answer
// without any of their fields means no plugin.
func parseNodeResource(b []byte) (plugin bool, assigned, total int, err error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var top map[string]any
	if err := dec.Decode(&top); err != nil {
		return false, 0, 0, fmt.Errorf("not a JSON object: %w", err)
	}
	fields := []string{"gpuDeviceInformation", "totalGpuDevices", "assignedGpuDevices", "totalDevices", "assignedDevices"}
	has := func(m map[string]any) bool {
		for _, f := range fields {
			if _, ok := m[f]; ok {
				return true
			}
		}
		return false
	}
	if !has(top) && len(top) == 1 {
		for _, v := range top {
			if inner, ok := v.(map[string]any); ok {
				top = inner
			}
		}
	}
	if !has(top) {
		return false, 0, 0, nil
	}
	count := func(v any) int {
		switch x := v.(type) {
		case []any:
			return len(x)
		case map[string]any:
			return 1
		}
		return 0
	}
	return true, count(top["assignedGpuDevices"]) + count(top["assignedDevices"]), count(top["totalGpuDevices"]) + count(top["totalDevices"]), nil
}

// printNodeModes prints nodeModes' findings after the report.
func printNodeModes(w io.Writer, modes []nodeModeJSON) {
	if len(modes) == 0 {
		return
	}
	fmt.Fprintln(w, "GPU assignment per NodeManager (its REST /ws/v1/node/resources/<name>):")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  NODE\tRESOURCE\tMODE\tASSIGNED\tLAUNCHER")
	for _, m := range modes {
		assigned := "-"
		if m.Mode == "plugin" {
			assigned = fmt.Sprintf("%d of %d", m.Assigned, m.Total)
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", m.Node, m.Resource, m.Mode, assigned, m.Launcher)
	}
	_ = tw.Flush()
	for _, m := range modes {
		if m.Error != "" {
			fmt.Fprintf(w, "  %s: %s\n", m.Node, m.Error)
		}
	}
}
