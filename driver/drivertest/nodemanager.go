package drivertest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// NMGPU is a GPU of a stub NodeManager: index and minor number (they may
// differ, as YARN's allowed-gpu-devices index:minor pairs allow).
type NMGPU struct {
	Index, Minor int
}

// NMShape is how the stub renders its answer: Hadoop's JSON providers
// differ in wrapping, single-element lists and number types.
type NMShape int

const (
	// ShapeNatural: {"nmGpuResourceInfo": {...}}, arrays, numbers.
	ShapeNatural NMShape = iota
	// ShapeJettison: wrapped; a one-element list as an object, numbers as
	// strings, an empty list left out.
	ShapeJettison
	// ShapeDevice: the pluggable device framework's NMDeviceResourceInfo
	// (nvidia.com/gpu): totalDevices, assignedDevices {containerId, device},
	// each device as NvidiaGPUPluginForRuntimeV2 records it (its
	// "minorNumber" is nvidia-smi's index, busID the PCI address).
	ShapeDevice
)

// NodeManager is a stub of a YARN NodeManager's REST for one resource
// plugin: GET /ws/v1/node/resources/<name> answers what Assign recorded,
// and Assign picks GPUs as YARN's GpuResourceAllocator does (the first
// free ones in (index, minor) order).
type NodeManager struct {
	Server *httptest.Server
	// Resource is the resource name it has a plugin for ("yarn.io/gpu").
	Resource string
	Shape    NMShape
	// Status, when not 0, is answered instead (500, 404); Negotiate
	// answers 401 with WWW-Authenticate: Negotiate.
	Status    atomic.Int32
	Negotiate atomic.Bool
	// Counted: the NodeManager has no plugin for the resource (an empty
	// NMResourceInfo).
	Counted atomic.Bool
	// Requests counts the GETs; LastQuery is the last query string.
	Requests atomic.Int64

	mu        sync.Mutex
	gpus      []NMGPU
	assigned  map[NMGPU]string
	lastQuery string
	lastAuth  string
}

// NewNodeManager starts a stub NodeManager over HTTP with gpus.
func NewNodeManager(resource string, gpus []NMGPU) *NodeManager {
	nm := newNM(resource, gpus)
	nm.Server = httptest.NewServer(nm)
	return nm
}

// NewTLSNodeManager starts it over HTTPS (Server.Certificate() is its CA).
func NewTLSNodeManager(resource string, gpus []NMGPU) *NodeManager {
	nm := newNM(resource, gpus)
	nm.Server = httptest.NewTLSServer(nm)
	return nm
}

func newNM(resource string, gpus []NMGPU) *NodeManager {
	g := append([]NMGPU(nil), gpus...)
	sort.Slice(g, func(i, j int) bool {
		if g[i].Index != g[j].Index {
			return g[i].Index < g[j].Index
		}
		return g[i].Minor < g[j].Minor
	})
	return &NodeManager{Resource: resource, gpus: g, assigned: map[NMGPU]string{}}
}

// Close stops the server.
func (nm *NodeManager) Close() { nm.Server.Close() }

// HostPort is the NM_HOST and NM_HTTP_PORT a container gets.
func (nm *NodeManager) HostPort() (string, string) {
	u, _ := url.Parse(nm.Server.URL)
	return u.Hostname(), u.Port()
}

// Assign gives container n free GPUs, first free in (index, minor) order,
// as GpuResourceAllocator does; too few free is an error.
func (nm *NodeManager) Assign(container string, n int) ([]NMGPU, error) {
	nm.mu.Lock()
	defer nm.mu.Unlock()
	var got []NMGPU
	for _, g := range nm.gpus {
		if len(got) == n {
			break
		}
		if _, held := nm.assigned[g]; !held {
			got = append(got, g)
		}
	}
	if len(got) < n {
		return nil, fmt.Errorf("stub NodeManager: %d GPUs asked, %d free", n, len(got))
	}
	for _, g := range got {
		nm.assigned[g] = container
	}
	return got, nil
}

// Release frees the container's GPUs (the container finished).
func (nm *NodeManager) Release(container string) {
	nm.mu.Lock()
	defer nm.mu.Unlock()
	for g, c := range nm.assigned {
		if c == container {
			delete(nm.assigned, g)
		}
	}
}

// AssignedTo is the GPUs held by container.
func (nm *NodeManager) AssignedTo(container string) []NMGPU {
	nm.mu.Lock()
	defer nm.mu.Unlock()
	var out []NMGPU
	for _, g := range nm.gpus {
		if nm.assigned[g] == container {
			out = append(out, g)
		}
	}
	return out
}

// LastQuery is the query string of the last request.
func (nm *NodeManager) LastQuery() string {
	nm.mu.Lock()
	defer nm.mu.Unlock()
	return nm.lastQuery
}

// LastAuthorization is the Authorization header of the last request.
func (nm *NodeManager) LastAuthorization() string {
	nm.mu.Lock()
	defer nm.mu.Unlock()
	return nm.lastAuth
}

const nmResourcePrefix = "/ws/v1/node/resources/"

// ServeHTTP implements http.Handler.
func (nm *NodeManager) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	nm.Requests.Add(1)
	nm.mu.Lock()
	nm.lastQuery = r.URL.RawQuery
	nm.lastAuth = r.Header.Get("Authorization")
	nm.mu.Unlock()
	if nm.Negotiate.Load() && r.Header.Get("Authorization") == "" {
		w.Header().Set("WWW-Authenticate", "Negotiate")
		http.Error(w, "Authentication required", http.StatusUnauthorized)
		return
	}
	if s := nm.Status.Load(); s != 0 {
		http.Error(w, "stub NodeManager: "+http.StatusText(int(s)), int(s))
		return
	}
	raw := r.URL.EscapedPath()
	name, ok := strings.CutPrefix(raw, nmResourcePrefix)
	if !ok || r.Method != http.MethodGet {
		http.NotFound(w, r)
		return
	}
	name, err := url.PathUnescape(name)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if name != nm.Resource || nm.Counted.Load() {
		// NMWebServices answers an empty NMResourceInfo for a name without
		// a plugin.
		_, _ = w.Write([]byte(`{}`))
		return
	}
	_ = json.NewEncoder(w).Encode(nm.body())
}

func (nm *NodeManager) body() any {
	nm.mu.Lock()
	defer nm.mu.Unlock()
	num := func(n int) any {
		if nm.Shape == ShapeJettison {
			return strconv.Itoa(n)
		}
		return n
	}
	list := func(items []any) any {
		if nm.Shape == ShapeJettison && len(items) == 1 {
			return items[0]
		}
		return items
	}
	var total, assigned []any
	for _, g := range nm.gpus {
		if nm.Shape == ShapeDevice {
			// As YARN's NvidiaGPUPluginForRuntimeV2 records a GPU: the
			// first column of `nvidia-smi --query-gpu=index,pci.bus_id`
			// (the index) as its minor number, the PCI address as busID
			// (the fake nvidia-smi's addresses).
			dev := map[string]any{"id": g.Index, "devPath": fmt.Sprintf("/dev/nvidia%d", g.Index), "majorNumber": 195,
				"minorNumber": g.Index, "busID": fmt.Sprintf("00000000:%02X:00.0", 16+g.Index), "healthy": true, "status": ""}
			total = append(total, dev)
			if c, ok := nm.assigned[g]; ok {
				assigned = append(assigned, map[string]any{"containerId": c, "device": dev})
			}
			continue
		}
		total = append(total, map[string]any{"index": num(g.Index), "minorNumber": num(g.Minor)})
		if c, ok := nm.assigned[g]; ok {
			assigned = append(assigned, map[string]any{"index": num(g.Index), "minorNumber": num(g.Minor), "containerId": c})
		}
	}
	if nm.Shape == ShapeDevice {
		return map[string]any{"totalDevices": total, "assignedDevices": assigned}
	}
	inner := map[string]any{
		"gpuDeviceInformation": map[string]any{"driver_version": "550.54", "gpus": []any{}},
		"totalGpuDevices":      list(total),
	}
	if len(assigned) > 0 || nm.Shape != ShapeJettison {
		inner["assignedGpuDevices"] = list(assigned)
	}
	return map[string]any{"nmGpuResourceInfo": inner}
}
