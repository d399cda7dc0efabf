package gpu

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/xres/xres/driver"
)

// autoSource picks the built-in discovery source: NVML first, nvidia-smi
// where the NVIDIA library is absent (or as configured by discovery.source).
type autoSource struct {
	source  string // auto | nvml | nvidia-smi
	nvml    driver.Enumerator
	smi     string // nvidia-smi.path param: a name looked up on PATH, or a path
	getenv  func(string) string
	timeout time.Duration
	units   unitOptions
	nvmlLib string // the nvml.library param, for DeviceCacheKey
	log     logrus.FieldLogger
	// visibleByMinor: NVIDIA_VISIBLE_DEVICES numbers are minor numbers
	// (YARN's nvidia.com/gpu plugin under Docker), learnt through minors.
	visibleByMinor bool
	minors         *minorFiller
	// needMinors: every listing carries InfoMinor (in a YARN container).
	needMinors bool
}

var _ driver.Enumerator = (*autoSource)(nil)

// DeviceCacheKey names everything the listing depends on, so that
// launchers on a host can share one listing for a moment (coord's device
// cache) instead of each running nvidia-smi.
func (a *autoSource) DeviceCacheKey() string {
	getenv := a.getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	key := fmt.Sprintf("xres.gpu source=%s smi=%s nvml=%s units=%+v PATH=%s LD_LIBRARY_PATH=%s %s=%s by-minor=%t minors=%t",
		a.source, a.smi, a.nvmlLib, a.units, getenv("PATH"), getenv("LD_LIBRARY_PATH"), EnvNvidiaVisibleDevices, getenv(EnvNvidiaVisibleDevices), a.visibleByMinor, a.needMinors)
	if a.needMinors {
		// Under YARN's cgroup isolation each container sees its own GPUs:
		// containers share a listing only within one devices cgroup.
		key += " cgroup=" + devicesCgroup()
	}
	return key
}

// Enumerate implements driver.Enumerator: the source's devices, less those
// NVIDIA_VISIBLE_DEVICES does not give this container (visibleSet).
func (a *autoSource) Enumerate(ctx context.Context) ([]driver.Device, error) {
	devs, err := a.enumerate(ctx)
	if err != nil {
		return nil, err
	}
	getenv := a.getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	if a.needMinors {
		// Under YARN's GPU plugin the GPUs are matched by minor number:
		// learnt here, so that the host-wide cached listing carries them.
		if filled, err := a.minors.fill(ctx, devs); err == nil {
			devs = filled
		} else {
			driver.LoggerOrDiscard(a.log).WithError(err).Debug("minor numbers unknown")
		}
	}
	v := getenv(EnvNvidiaVisibleDevices)
	if a.visibleByMinor && numericList(v) {
		// YARN's nvidia.com/gpu plugin names the container's GPUs by minor number.
		if devs, err = a.minors.fill(ctx, devs); err != nil {
			return nil, err
		}
		return visibleSetBy(devs, v, true, driver.LoggerOrDiscard(a.log)), nil
	}
	return visibleSet(devs, v, driver.LoggerOrDiscard(a.log)), nil
}

// numericList: v is a comma-separated list of numbers.
func numericList(v string) bool {
	v = strings.TrimSpace(v)
	if v == "" {
		return false
	}
	for _, f := range strings.Split(v, ",") {
		if _, err := strconv.Atoi(strings.TrimSpace(f)); err != nil {
			return false
		}
	}
	return true
}

func (a *autoSource) enumerate(ctx context.Context) ([]driver.Device, error) {
	var nvmlErr error
	if a.source != "nvidia-smi" {
		devs, err := a.nvml.Enumerate(ctx)
		if err == nil {
			return devs, nil
		}
		if a.source == "nvml" || !errors.Is(err, ErrNVMLUnavailable) {
			return nil, err
		}
		nvmlErr = err
		a.log.WithError(err).Debug("NVML unavailable; trying nvidia-smi")
	}
	path, err := lookPath(a.smi, a.getenv)
	if err != nil {
		if nvmlErr != nil {
			return nil, fmt.Errorf("%w (%v; %v)", ErrNoGPUSource, nvmlErr, err)
		}
		return nil, fmt.Errorf("%w (%v)", ErrNoGPUSource, err)
	}
	return (&smiEnumerator{path: path, timeout: a.timeout, units: a.units, log: a.log}).Enumerate(ctx)
}

// devicesCgroup is this process's devices cgroup (v1), else its unified
// cgroup (v2): "" where /proc/self/cgroup cannot be read.
func devicesCgroup() string {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return ""
	}
	unified := ""
	for _, line := range strings.Split(string(b), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			if c == "devices" {
				return parts[2]
			}
		}
		if parts[0] == "0" && parts[1] == "" {
			unified = parts[2]
		}
	}
	return unified
}
