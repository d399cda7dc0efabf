package gpu

import (
	"context"
	"errors"
	"fmt"
	"os"
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
	// minors learns InfoMinor where the source does not give it.
	minors *minorFiller
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
	key := fmt.Sprintf("xres.gpu source=%s smi=%s nvml=%s units=%+v PATH=%s LD_LIBRARY_PATH=%s %s=%s minors=%t",
		a.source, a.smi, a.nvmlLib, a.units, getenv("PATH"), getenv("LD_LIBRARY_PATH"), EnvNvidiaVisibleDevices, getenv(EnvNvidiaVisibleDevices), a.needMinors)
	if a.needMinors {
		// In a YARN container: under YARN's isolation (a devices cgroup,
		// a container runtime) each container sees its own GPUs, so a
		// listing is shared only within the container (the bridge's
		// calls, --per-device restarts).
		key += " container=" + getenv(EnvContainerID)
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
	return visibleSet(devs, getenv(EnvNvidiaVisibleDevices), driver.LoggerOrDiscard(a.log)), nil
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
	path, err := driver.LookPath(a.smi, a.getenv)
	if err != nil {
		if nvmlErr != nil {
			return nil, fmt.Errorf("%w (%v; %v)", ErrNoGPUSource, nvmlErr, err)
		}
		return nil, fmt.Errorf("%w (%v)", ErrNoGPUSource, err)
	}
	return (&smiEnumerator{path: path, timeout: a.timeout, units: a.units, log: a.log}).Enumerate(ctx)
}
