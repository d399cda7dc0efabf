package gpu

import (
	"strings"

	"github.com/sirupsen/logrus"

	"github.com/xres/xres/driver"
)

// EnvNvidiaVisibleDevices is set by the NVIDIA container runtime's users
// (YARN's Docker runtime with GPU isolation, the Kubernetes NVIDIA device
// plugin) to the GPUs a container is given: "all", "none", "void", or
// comma-separated indices or uuids (GPU-…, MIG-…).
const EnvNvidiaVisibleDevices = "NVIDIA_VISIBLE_DEVICES"

// visibleSet filters the devices a source enumerated down to those
// NVIDIA_VISIBLE_DEVICES (value v) gives this container, and names each by
// uuid (driver.InfoVisibleID): inside such a container CUDA numbers the
// given GPUs from 0, so a host index would select the wrong one.
//
//	unset, "" or "all"   every device (no container restriction)
//	"none" or "void"     no device
//	uuids                the devices (or MIG instances, or the instances of
//	                     a listed GPU) with those uuids
//	indices              when the source sees exactly that many GPUs, it
//	                     sees the container's view (renumbered from 0):
//	                     every device; otherwise the devices of those indices
func visibleSet(devs []driver.Device, v string, log logrus.FieldLogger) []driver.Device {
	v = strings.TrimSpace(v)
	switch strings.ToLower(v) {
	case "", "all":
		return devs
	case "none", "void":
		log.WithField("env", EnvNvidiaVisibleDevices+"="+v).Warn("the container runtime gives this container no GPU; none is a candidate")
		return nil
	}
	want := map[string]bool{}
	indices := 0
	for _, id := range strings.Split(v, ",") {
		if id = strings.TrimSpace(id); id != "" {
			want[id] = true
			if !strings.HasPrefix(id, "GPU-") && !strings.HasPrefix(id, "MIG-") {
				indices++
			}
		}
	}
	whole := 0
	for _, d := range devs {
		if d.Parent == "" {
			whole++
		}
	}
	containerView := indices == len(want) && whole == indices
	var out []driver.Device
	for _, d := range devs {
		gpuIndex, gpuUUID := d.Info["index"], d.Info["uuid"]
		if d.Parent != "" {
			gpuIndex, gpuUUID = d.Info["gpu.index"], d.Info["gpu.uuid"]
		}
		if containerView || want[d.Info["uuid"]] || want[gpuUUID] || want[gpuIndex] {
			d.Info = d.Info.Clone()
			if u := d.Info["uuid"]; u != "" {
				d.Info[driver.InfoVisibleID] = u
			}
			out = append(out, d)
		}
	}
	if len(out) < len(devs) {
		log.WithFields(logrus.Fields{"env": EnvNvidiaVisibleDevices + "=" + v, "candidates": len(out), "found": len(devs)}).
			Info("only the GPUs the container runtime gives this container are candidates")
	}
	return out
}
