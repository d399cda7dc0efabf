package gpu

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/xres/xres/driver"
	"github.com/xres/xres/resources"
)

// nvmlListing is what NVML says about a host's GPUs before the units
// (whole GPUs, MIG instances, healthy ones) are chosen from it. The
// in-process enumerator (cgo builds) and the xres-nvml helper (for the
// static launcher) both produce one; devices turns it into the offer.
type nvmlListing struct {
	gpus []gpuRecord
	// denied: indices of GPUs this process may not open (device
	// isolation); never candidates.
	denied []string
	// noMIGFunctions: the driver's library has no MIG functions.
	noMIGFunctions bool
}

// devices chooses the units of l as configured.
func (l nvmlListing) devices(units unitOptions, log logrus.FieldLogger) ([]driver.Device, error) {
	log = driver.LoggerOrDiscard(log)
	if units.wantMIG() && l.noMIGFunctions {
		log.Warn("this NVIDIA driver has no MIG functions; GPUs are handed out whole")
	}
	if len(l.denied) > 0 {
		// CUDA in this process numbers only the GPUs it may open, so an
		// NVML index is not a CUDA ordinal here: name them by uuid.
		log.WithField("gpus", strings.Join(l.denied, ",")).
			Info("GPUs this process may not open (device isolation) are not candidates; CUDA_VISIBLE_DEVICES names the others by uuid")
		for i := range l.gpus {
			l.gpus[i].info[driver.InfoVisibleID] = l.gpus[i].info["uuid"]
		}
	}
	return selectUnits(l.gpus, units, log)
}

// The listing as the xres-nvml helper prints it on stdout: one JSON
// object. Only the helper and the launcher that runs it read it, always
// built from one commit, so it carries no version.
type (
	wireListing struct {
		GPUs           []wireGPU `json:"gpus"`
		Denied         []string  `json:"denied,omitempty"`
		NoMIGFunctions bool      `json:"no_mig_functions,omitempty"`
	}
	wireGPU struct {
		Info      map[string]string `json:"info"`
		MIGMode   bool              `json:"mig_mode,omitempty"`
		MIGs      []wireMIG         `json:"migs,omitempty"`
		Unhealthy []string          `json:"unhealthy,omitempty"`
	}
	wireMIG struct {
		UUID    string            `json:"uuid"`
		Index   int               `json:"index"`
		Profile string            `json:"profile,omitempty"`
		Info    map[string]string `json:"info"`
	}
)

func (l nvmlListing) marshal() ([]byte, error) {
	w := wireListing{GPUs: make([]wireGPU, len(l.gpus)), Denied: l.denied, NoMIGFunctions: l.noMIGFunctions}
	for i, g := range l.gpus {
		wg := wireGPU{Info: g.info, MIGMode: g.migMode, Unhealthy: g.unhealthy}
		for _, m := range g.migs {
			wg.MIGs = append(wg.MIGs, wireMIG{UUID: m.uuid, Index: m.index, Profile: m.profile, Info: m.info})
		}
		w.GPUs[i] = wg
	}
	return json.Marshal(w)
}

func unmarshalNVMLListing(b []byte) (nvmlListing, error) {
	var w wireListing
	if err := json.Unmarshal(b, &w); err != nil {
		return nvmlListing{}, err
	}
	l := nvmlListing{gpus: make([]gpuRecord, len(w.GPUs)), denied: w.Denied, noMIGFunctions: w.NoMIGFunctions}
	for i, wg := range w.GPUs {
		if wg.Info["index"] == "" || wg.Info["uuid"] == "" {
			return nvmlListing{}, fmt.Errorf("GPU %d of %d has no index or uuid", i+1, len(w.GPUs))
		}
		g := gpuRecord{key: deviceKey(wg.Info), info: resources.Properties(wg.Info), migMode: wg.MIGMode, unhealthy: wg.Unhealthy}
		for j, m := range wg.MIGs {
			if m.UUID == "" {
				return nvmlListing{}, fmt.Errorf("GPU %d of %d: MIG device %d of %d has no uuid", i+1, len(w.GPUs), j+1, len(wg.MIGs))
			}
			if m.Info == nil {
				m.Info = map[string]string{}
			}
			g.migs = append(g.migs, migRecord{uuid: m.UUID, index: m.Index, profile: m.Profile, info: m.Info})
		}
		l.gpus[i] = g
	}
	return l, nil
}

// nvmlOptions configure an NVML enumerator.
type nvmlOptions struct {
	resource string // the resource's name, for the keys in errors
	lib      string // nvml.library: the library's path; "" = libnvidia-ml.so.1
	units    unitOptions
	timeout  time.Duration       // for the xres-nvml helper, as for nvidia-smi
	getenv   func(string) string // PATH, to find the helper
	log      logrus.FieldLogger
}

// NVMLHelperName is the NVML helper's file name. A container-launcher
// built without cgo (static: it runs on any Linux, whatever its C library)
// cannot load a C library, so it asks NVML through this small cgo program,
// shipped beside it: `xres-nvml [--library PATH] [--mig] [--health]`
// prints the listing as JSON (exit 0), or why NVML is unavailable on
// stderr (exit 3), or what NVML refused (exit 1).
const NVMLHelperName = "xres-nvml"

// Exit codes of xres-nvml besides 0 and 2 (usage).
const (
	nvmlHelperFailed      = 1
	nvmlHelperUnavailable = 3
)

// nvmlHelperMain is the body of xres-nvml once NVML has been asked: l or
// err, written as its callers read them.
func nvmlHelperMain(l nvmlListing, err error, stdout, stderr io.Writer) int {
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", NVMLHelperName, err)
		if errors.Is(err, ErrNVMLUnavailable) {
			return nvmlHelperUnavailable
		}
		return nvmlHelperFailed
	}
	b, err := l.marshal()
	if err == nil {
		_, err = stdout.Write(append(b, '\n'))
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", NVMLHelperName, err)
		return nvmlHelperFailed
	}
	return 0
}
