//go:build !cgo || !linux

package gpu

import (
	"context"
	"fmt"

	"github.com/sirupsen/logrus"

	"github.com/xres/xres/driver"
)

// nvmlStub stands in for NVML in builds without cgo: it always reports the
// library unavailable, so discovery falls back to nvidia-smi.
type nvmlStub struct{}

var _ driver.Enumerator = nvmlStub{}

func newNVMLEnumerator(string, unitOptions, logrus.FieldLogger) driver.Enumerator { return nvmlStub{} }

// Enumerate implements driver.Enumerator.
func (nvmlStub) Enumerate(context.Context) ([]driver.Device, error) {
	return nil, fmt.Errorf("%w: this binary was built without cgo", ErrNVMLUnavailable)
}
