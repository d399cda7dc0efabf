//go:build cgo && linux

package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/xres/xres/driver/topo"
)

// topologyMain is `xres-nvml topology [--library PATH]`: what NVML tells
// about the links between the host's GPUs (common PCIe ancestors, active
// NVLinks and their remote PCI ids, NUMA node, CPU affinity), printed as
// a JSON array of topo.NVMLGPU for the launcher (issue 45). Exit codes as
// the listing mode: 0, 1 NVML refused, 2 usage, 3 NVML unavailable.
func topologyMain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("xres-nvml topology", flag.ContinueOnError)
	fs.SetOutput(stderr)
	lib := fs.String("library", "", "the NVIDIA management library to load (default libnvidia-ml.so.1)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	var opts []nvml.LibraryOption
	if *lib != "" {
		opts = append(opts, nvml.WithLibraryPath(*lib))
	}
	l := nvml.New(opts...)
	gpus, code, err := nvmlTopology(l)
	if err != nil {
		fmt.Fprintf(stderr, "xres-nvml: %v\n", err)
		return code
	}
	b, err := json.Marshal(gpus)
	if err == nil {
		_, err = stdout.Write(append(b, '\n'))
	}
	if err != nil {
		fmt.Fprintf(stderr, "xres-nvml: %v\n", err)
		return 1
	}
	return 0
}

func nvmlTopology(l nvml.Interface) (gpus []topo.NVMLGPU, code int, err error) {
	defer func() {
		if r := recover(); r != nil {
			gpus, code, err = nil, 3, fmt.Errorf("NVML is unavailable: nvml panicked: %v", r)
		}
	}()
	if ret := l.Init(); ret != nvml.SUCCESS {
		return nil, 3, fmt.Errorf("NVML is unavailable: init: %v", ret)
	}
	defer l.Shutdown()
	n, ret := l.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return nil, 1, fmt.Errorf("device count: %v", ret)
	}
	devs := make([]nvml.Device, n)
	gpus = make([]topo.NVMLGPU, n)
	for i := range n {
		d, ret := l.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			return nil, 1, fmt.Errorf("GPU %d: handle: %v", i, ret)
		}
		devs[i] = d
		g := topo.NVMLGPU{Index: i, NUMA: -1, Ancestor: make([]int, n)}
		if pci, ret := d.GetPciInfo(); ret == nvml.SUCCESS {
			g.BusID = cString(pci.BusId[:])
		}
		// nvmlDeviceGetNumaNodeId is recent: calling a symbol the loaded
		// library lacks would end the process, so ask first.
		if l.Extensions().LookupSymbol("nvmlDeviceGetNumaNodeId") == nil {
			if node, ret := d.GetNumaNodeId(); ret == nvml.SUCCESS {
				g.NUMA = node
			}
		}
		if g.NUMA < 0 && g.BusID != "" {
			g.NUMA = sysfsNUMA(g.BusID)
		}
		if mask, ret := d.GetCpuAffinity(64); ret == nvml.SUCCESS {
			g.CPUs = cpuList(mask)
		}
		for link := range nvml.NVLINK_MAX_LINKS {
			st, ret := d.GetNvLinkState(link)
			if ret != nvml.SUCCESS || st != nvml.FEATURE_ENABLED {
				continue
			}
			if r, ret := d.GetNvLinkRemotePciInfo(link); ret == nvml.SUCCESS {
				g.NVLinks = append(g.NVLinks, cString(r.BusId[:]))
			}
		}
		gpus[i] = g
	}
	for i := range n {
		for j := range n {
			if i == j {
				continue
			}
			lvl, ret := devs[i].GetTopologyCommonAncestor(devs[j])
			if ret != nvml.SUCCESS {
				gpus[i].Ancestor[j] = -1
				continue
			}
			gpus[i].Ancestor[j] = int(lvl)
		}
	}
	return gpus, 0, nil
}

func cString(b []int8) string {
	var sb strings.Builder
	for _, c := range b {
		if c == 0 {
			break
		}
		sb.WriteByte(byte(c))
	}
	return sb.String()
}

// cpuList writes NVML's CPU affinity mask (64-bit words) as a Linux CPU
// list ("0-19,40-59").
func cpuList(mask []uint) string {
	var parts []string
	start := -1
	total := len(mask) * 64
	for c := 0; c <= total; c++ {
		set := c < total && mask[c/64]&(1<<(uint(c)%64)) != 0
		switch {
		case set && start < 0:
			start = c
		case !set && start >= 0:
			if start == c-1 {
				parts = append(parts, strconv.Itoa(start))
			} else {
				parts = append(parts, strconv.Itoa(start)+"-"+strconv.Itoa(c-1))
			}
			start = -1
		}
	}
	return strings.Join(parts, ",")
}

// sysfsNUMA reads the GPU's NUMA node from sysfs where NVML does not say
// (older drivers); -1 when unknown.
func sysfsNUMA(bus string) int {
	b := strings.ToLower(bus)
	if dom, rest, ok := strings.Cut(b, ":"); ok && len(dom) > 4 {
		b = dom[len(dom)-4:] + ":" + rest
	}
	raw, err := os.ReadFile(filepath.Join("/sys/bus/pci/devices", b, "numa_node"))
	if err != nil {
		return -1
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil {
		return -1
	}
	return n
}
