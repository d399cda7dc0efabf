//go:build linux

package gpu

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	"github.com/xres/xres/driver"
)

// nvmlHelper asks NVML through the xres-nvml helper (NVMLHelperName): how
// a launcher built without cgo reads NVML. A helper that is missing, or
// cannot start (a C library older than the one it was built against),
// makes NVML unavailable, as a missing libnvidia-ml does in-process.
type nvmlHelper struct {
	nvmlOptions
	path string // "" = findNVMLHelper
}

var _ driver.Enumerator = (*nvmlHelper)(nil)

// Enumerate implements driver.Enumerator.
func (h *nvmlHelper) Enumerate(ctx context.Context) ([]driver.Device, error) {
	path := h.path
	if path == "" {
		var err error
		if path, err = findNVMLHelper(h.getenv); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrNVMLUnavailable, err)
		}
	}
	var args []string
	if h.lib != "" {
		args = append(args, "--library", h.lib)
	}
	if h.units.wantMIG() {
		args = append(args, "--mig")
	}
	if h.units.health {
		args = append(args, "--health")
	}
	res, err := run(ctx, path, args, nil, h.timeout)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrNVMLUnavailable, path, err)
	}
	said := strings.TrimSpace(string(bytes.TrimPrefix(res.stderr, []byte(NVMLHelperName+": "))))
	switch {
	case res.timedOut:
		return nil, fmt.Errorf("NVML helper %s did not answer within %s (%s)", path, h.timeout, smiTimeoutParam.Key(h.resource))
	case res.exitCode == 0:
		l, err := unmarshalNVMLListing(res.stdout)
		if err != nil {
			return nil, fmt.Errorf("NVML helper %s: unreadable listing: %v", path, err)
		}
		return l.devices(h.units, h.log)
	case res.exitCode == nvmlHelperFailed:
		return nil, fmt.Errorf("%s (NVML helper %s)", said, path)
	default:
		// Unavailable (3), or it could not run at all: the dynamic
		// loader's 127, a signal.
		return nil, fmt.Errorf("%w: NVML helper %s exited %d: %s", ErrNVMLUnavailable, path, res.exitCode, strings.TrimPrefix(said, ErrNVMLUnavailable.Error()+": "))
	}
}

// findNVMLHelper looks for xres-nvml beside the launcher as it was called
// (YARN links localized files into the container's folder and starts
// ./container-launcher there), beside the launcher's file, then on PATH.
func findNVMLHelper(getenv func(string) string) (string, error) {
	return findHelper(NVMLHelperName, ErrNVMLHelperMissing, getenv)
}
