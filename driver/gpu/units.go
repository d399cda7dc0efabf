package gpu

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/sirupsen/logrus"

	"github.com/xres/xres/driver"
	"github.com/xres/xres/resources"
	"github.com/xres/xres/resources/params"
)

// MIG strategies (param mig.strategy), named after the NVIDIA Kubernetes
// device plugin's:
//
//	none    whole GPUs only (the default). A GPU in MIG mode is still
//	        handed out whole, with a warning: CUDA cannot use it as one
//	        device, so configure a strategy on MIG hosts.
//	single  MIG instances only: every GPU must be in MIG mode and every
//	        instance must have the same profile (one kind of unit per host),
//	        else discovery fails naming the odd GPUs or profiles.
//	mixed   MIG instances of the GPUs in MIG mode, and the other GPUs whole.
//	        With mig.profile set, only instances of that profile.
const (
	MIGNone   = params.MIGNone
	MIGSingle = params.MIGSingle
	MIGMixed  = params.MIGMixed
)

// ErrMIGConfig: the host's MIG layout does not fit mig.strategy single or
// mig.profile (a discovery failure: the node, not the job, is off).
var ErrMIGConfig = errors.New("MIG layout does not match the MIG strategy")

// Health reasons a GPU is not handed out.
const (
	ReasonRetiredPagesPending = "retired pages pending"
	ReasonRowRemapPending     = "row remapping pending"
	ReasonRowRemapFailed      = "row remapping failed"
	ReasonGPULost             = "GPU is lost"
)

// unitOptions say which units discovery hands out: whole GPUs or MIG
// instances, and whether unhealthy GPUs are left out. The zero value is
// whole GPUs without health checks.
type unitOptions struct {
	mig     string // MIGNone ("" too), MIGSingle, MIGMixed
	profile string // with single/mixed: only instances of this profile
	health  bool
}

func (u unitOptions) wantMIG() bool { return u.mig == MIGSingle || u.mig == MIGMixed }

// parseUnitOptions reads mig.strategy, mig.profile and health.enabled.
func parseUnitOptions(resource string, p map[string]string) (unitOptions, error) {
	u, err := params.ReadGPUUnits(resource, p)
	return unitOptions{mig: u.MIG, profile: u.Profile, health: u.Health}, err
}

// gpuRecord is one physical GPU as a source reports it, before the units
// are chosen.
type gpuRecord struct {
	key  string
	info resources.Properties
	// migMode: true when MIG mode is on now (a pending change does not
	// count).
	migMode bool
	migs    []migRecord // read only when a MIG strategy asks for them
	// unhealthy lists why the GPU must not be used ("" entries never).
	unhealthy []string
}

// migRecord is one MIG instance.
type migRecord struct {
	uuid    string // MIG-…
	index   int    // the instance's number within its GPU
	profile string // e.g. 1g.10gb
	info    resources.Properties
}

// migInfo builds the infos of a MIG instance of g: uuid, index
// "<gpu>:<mig>", name, memory.total (when known), pci.bus-id of the parent,
// mig.profile, mig.index, gpu.index, gpu.uuid. extra (e.g. mig.gi, mig.ci)
// is added as is.
func migInfo(g resources.Properties, m migRecord) resources.Properties {
	p := resources.Properties{
		"index":       g["index"] + ":" + strconv.Itoa(m.index),
		"uuid":        m.uuid,
		"mig.index":   strconv.Itoa(m.index),
		"gpu.index":   g["index"],
		"mig.profile": m.profile,
	}
	if u := g["uuid"]; u != "" {
		p["gpu.uuid"] = u
	}
	if b := g["pci.bus-id"]; b != "" {
		p["pci.bus-id"] = b
	}
	if n := g["name"]; n != "" {
		p["name"] = n + " MIG " + m.profile
	}
	for k, v := range m.info {
		p[k] = v
	}
	if m.profile == "" {
		delete(p, "mig.profile")
	}
	return p
}

// selectUnits turns the GPUs a source reported into the devices the
// coordination layer chooses from, as u says. Unhealthy GPUs (and their MIG
// instances) are kept but marked, so that the layer can name them.
func selectUnits(gpus []gpuRecord, u unitOptions, log logrus.FieldLogger) ([]driver.Device, error) {
	var devs []driver.Device
	if u.mig == MIGSingle {
		if err := checkSingle(gpus, u.profile); err != nil {
			return nil, err
		}
	}
	for _, g := range gpus {
		why := ""
		if u.health {
			why = strings.Join(g.unhealthy, "; ")
		}
		if !u.wantMIG() || !g.migMode {
			if u.wantMIG() && u.profile != "" {
				continue // a whole GPU is not a unit of the profile asked for
			}
			info := g.info
			if g.migMode {
				info = g.info.Clone()
				info["mig.mode"] = "enabled"
				log.WithFields(logrus.Fields{"gpu": g.info["index"], "uuid": g.info["uuid"]}).
					Warn("GPU is in MIG mode but param.mig.strategy is none: it is handed out whole, and CUDA will not use it as one device; set param.mig.strategy to single or mixed")
			}
			devs = append(devs, driver.Device{Key: g.key, Info: info, Unhealthy: why})
			continue
		}
		for _, m := range g.migs {
			if u.profile != "" && m.profile != u.profile {
				continue
			}
			// Parent: the GPU's key, which is what a whole GPU is reserved
			// under, so coordination keeps a whole GPU and its instances
			// apart whatever mig.strategy each resource uses.
			devs = append(devs, driver.Device{Key: m.uuid, Parent: g.key, Info: migInfo(g.info, m), Unhealthy: why})
		}
	}
	return devs, nil
}

// checkSingle enforces mig.strategy single: every GPU in MIG mode, one
// profile across all instances (the one asked for, when profile is set).
func checkSingle(gpus []gpuRecord, profile string) error {
	var off []string
	profiles := map[string][]string{}
	for _, g := range gpus {
		if !g.migMode {
			off = append(off, describeGPU(g.info))
			continue
		}
		for _, m := range g.migs {
			profiles[m.profile] = append(profiles[m.profile], g.info["index"]+":"+strconv.Itoa(m.index))
		}
	}
	if len(off) > 0 {
		return fmt.Errorf("%w: mig.strategy single needs every GPU in MIG mode, but %s %s not (use mig.strategy mixed)",
			ErrMIGConfig, strings.Join(off, ", "), isAre(len(off)))
	}
	if len(profiles) > 1 || profile != "" && len(profiles) == 1 && profiles[profile] == nil {
		names := make([]string, 0, len(profiles))
		for p, ids := range profiles {
			names = append(names, fmt.Sprintf("%s (%s)", p, strings.Join(ids, " ")))
		}
		sort.Strings(names)
		want := "one profile"
		if profile != "" {
			want = "profile " + profile
		}
		return fmt.Errorf("%w: mig.strategy single needs %s on every instance, found %s (use mig.strategy mixed with mig.profile)",
			ErrMIGConfig, want, strings.Join(names, ", "))
	}
	return nil
}

func describeGPU(info resources.Properties) string {
	if u := info["uuid"]; u != "" {
		return "gpu " + info["index"] + " (" + u + ")"
	}
	return "gpu " + info["index"]
}

func isAre(n int) string {
	if n == 1 {
		return "is"
	}
	return "are"
}

// ProfileFromName returns the MIG profile at the end of a MIG device's
// name as drivers report it ("NVIDIA A100-SXM4-40GB MIG 1g.5gb" gives
// "1g.5gb"), or "".
func ProfileFromName(name string) string {
	i := strings.LastIndex(name, "MIG ")
	if i < 0 {
		return ""
	}
	p := strings.TrimSpace(name[i+len("MIG "):])
	if p == "" || strings.ContainsAny(p, " \t") {
		return ""
	}
	return p
}

// profileFromAttributes names a MIG profile from its slice counts and
// memory, as NVIDIA names them: "<g>g.<gb>gb", or "<c>c.<g>g.<gb>gb" for a
// compute instance smaller than its GPU instance. Memory is rounded up to
// whole GiB.
func profileFromAttributes(giSlices, ciSlices uint32, memMiB uint64) string {
	gb := (memMiB + 1023) / 1024
	if ciSlices != 0 && ciSlices != giSlices {
		return fmt.Sprintf("%dc.%dg.%dgb", ciSlices, giSlices, gb)
	}
	return fmt.Sprintf("%dg.%dgb", giSlices, gb)
}
