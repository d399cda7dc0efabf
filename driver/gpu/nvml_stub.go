//go:build !linux

package gpu

import (
	"context"
	"fmt"

	"github.com/xres/xres/driver"
)

// nvmlStub stands in for NVML off Linux: it always reports the library
// unavailable, so discovery falls back to nvidia-smi.
type nvmlStub struct{}

var _ driver.Enumerator = nvmlStub{}

func newNVMLEnumerator(nvmlOptions) driver.Enumerator { return nvmlStub{} }

// Enumerate implements driver.Enumerator.
func (nvmlStub) Enumerate(context.Context) ([]driver.Device, error) {
	return nil, fmt.Errorf("%w: NVML is read on Linux only", ErrNVMLUnavailable)
}
