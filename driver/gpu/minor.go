package gpu

import (
	"bufio"
	"bytes"
	"context"
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/xres/xres/driver"
)

// InfoMinor is the info property holding a GPU's minor number (its
// /dev/nvidia<minor> node): what YARN's GPU plugin names a GPU by, beside
// its index. Index and minor number can differ (allowed-gpu-devices
// index:minor pairs), and inside a container the indices are renumbered
// while the minor numbers stay the host's.
const InfoMinor = "minor"

// smiXMLArgs is nvidia-smi's full XML report, which carries each GPU's
// minor number (YARN's own GPU discovery runs the same).
var smiXMLArgs = []string{"-x", "-q"}

// SMIXMLGPU is one GPU of `nvidia-smi -x -q`.
type SMIXMLGPU struct {
	BusID string
	UUID  string
	Minor int // -1 when nvidia-smi says N/A
}

// ParseSMIXML reads the GPUs of `nvidia-smi -x -q`: the PCI address, the
// uuid and the minor number of each. A GPU without a uuid or a minor
// number field is an error; "N/A" is -1.
func ParseSMIXML(out []byte) ([]SMIXMLGPU, error) {
	var log struct {
		GPUs []struct {
			ID    string  `xml:"id,attr"`
			UUID  string  `xml:"uuid"`
			Minor *string `xml:"minor_number"`
			PCI   struct {
				BusID string `xml:"pci_bus_id"`
			} `xml:"pci"`
		} `xml:"gpu"`
	}
	dec := xml.NewDecoder(bytes.NewReader(out))
	dec.Strict = false
	// nvidia-smi names a DTD (nvsmi_device_vXX.dtd) it does not ship.
	dec.Entity = xml.HTMLEntity
	if err := dec.Decode(&log); err != nil {
		return nil, fmt.Errorf("%w: -x -q: not nvidia-smi's XML: %v", ErrNvidiaSMI, err)
	}
	gpus := make([]SMIXMLGPU, 0, len(log.GPUs))
	for i, g := range log.GPUs {
		uuid := strings.TrimSpace(g.UUID)
		if uuid == "" {
			return nil, fmt.Errorf("%w: -x -q: gpu %d has no uuid", ErrNvidiaSMI, i)
		}
		if g.Minor == nil {
			return nil, fmt.Errorf("%w: -x -q: gpu %s has no minor_number", ErrNvidiaSMI, uuid)
		}
		m := strings.TrimSpace(*g.Minor)
		minor := -1
		if known(m) && !strings.EqualFold(m, "N/A") {
			v, err := strconv.Atoi(m)
			if err != nil || v < 0 {
				return nil, fmt.Errorf("%w: -x -q: gpu %s: minor_number %q is not a number", ErrNvidiaSMI, uuid, clip(m, 40))
			}
			minor = v
		}
		bus := strings.TrimSpace(g.PCI.BusID)
		if bus == "" {
			bus = strings.TrimSpace(g.ID)
		}
		gpus = append(gpus, SMIXMLGPU{BusID: bus, UUID: uuid, Minor: minor})
	}
	return gpus, nil
}

// procBusDir is the kernel driver's folder name for a PCI address as
// nvidia-smi and NVML print it ("00000000:3B:00.0" → "0000:3b:00.0").
func procBusDir(bus string) string {
	bus = strings.ToLower(strings.TrimSpace(bus))
	dom, rest, ok := strings.Cut(bus, ":")
	if !ok {
		return bus
	}
	if len(dom) > 4 {
		dom = dom[len(dom)-4:]
	}
	return dom + ":" + rest
}

// procMinor reads "Device Minor:" from the kernel driver's information
// file of the GPU at bus; ok is false where there is none.
func procMinor(gpusDir, bus string) (int, bool) {
	if bus == "" {
		return 0, false
	}
	b, err := os.ReadFile(filepath.Join(gpusDir, procBusDir(bus), "information"))
	if err != nil {
		return 0, false
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == "Device Minor" {
			if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && n >= 0 {
				return n, true
			}
		}
	}
	return 0, false
}

// minorFiller fills InfoMinor into the devices a source listed without it
// (nvidia-smi's query has no minor field): from the kernel driver's
// information files, else from one `nvidia-smi -x -q` run, matched by
// uuid. A MIG instance gets its GPU's minor number as "gpu.minor".
type minorFiller struct {
	smi     string // the nvidia-smi.path param
	getenv  func(string) string
	timeout time.Duration
	gpusDir string // "": NVIDIAGPUsDir
}

// fill returns devs with InfoMinor (or gpu.minor) where it can be learnt;
// an error only when nvidia-smi had to be asked and failed.
func (m *minorFiller) fill(ctx context.Context, devs []driver.Device) ([]driver.Device, error) {
	dir := m.gpusDir
	if dir == "" {
		dir = NVIDIAGPUsDir
	}
	missing := false
	out := make([]driver.Device, len(devs))
	for i, d := range devs {
		out[i] = d
		key, bus := InfoMinor, d.Info["pci.bus-id"]
		if d.Parent != "" {
			key = "gpu." + InfoMinor
		}
		if d.Info[key] != "" {
			continue
		}
		if n, ok := procMinor(dir, bus); ok {
			out[i].Info = d.Info.Clone()
			out[i].Info[key] = strconv.Itoa(n)
			continue
		}
		missing = true
	}
	if !missing {
		return out, nil
	}
	path, err := driver.LookPath(m.smi, m.getenv)
	if err != nil {
		return nil, fmt.Errorf("minor numbers of the GPUs (to match YARN's assignment): %w", err)
	}
	xmlOut, err := (&smiEnumerator{path: path, timeout: m.timeout}).run(ctx, smiXMLArgs)
	if err != nil {
		return nil, fmt.Errorf("minor numbers of the GPUs (to match YARN's assignment): %w", err)
	}
	gpus, err := ParseSMIXML(xmlOut)
	if err != nil {
		return nil, err
	}
	byUUID := make(map[string]int, len(gpus))
	for _, g := range gpus {
		if g.Minor >= 0 {
			byUUID[g.UUID] = g.Minor
		}
	}
	for i, d := range out {
		key, uuid := InfoMinor, d.Info["uuid"]
		if d.Parent != "" {
			key, uuid = "gpu."+InfoMinor, d.Info["gpu.uuid"]
		}
		if d.Info[key] != "" {
			continue
		}
		if n, ok := byUUID[uuid]; ok {
			out[i].Info = d.Info.Clone()
			out[i].Info[key] = strconv.Itoa(n)
		}
	}
	return out, nil
}

// minorOf is a device's minor number (its GPU's, for a MIG instance).
func minorOf(d driver.Device) (int, bool) {
	v := d.Info[InfoMinor]
	if d.Parent != "" {
		v = d.Info["gpu."+InfoMinor]
	}
	n, err := strconv.Atoi(v)
	return n, err == nil && v != ""
}
