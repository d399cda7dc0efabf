//go:build !cgo || !linux

package gpu

import (
	"context"
	"fmt"
	"io"
	"time"
)

// NVMLWatchMain is `xres-nvml watch`; built without cgo (or off Linux) it
// cannot load NVML: an "error" line, exit 3 (NVML unavailable).
func NVMLWatchMain(_ context.Context, _ []string, stdout, stderr io.Writer) int {
	err := fmt.Errorf("%w: %s was built without cgo (build it with CGO_ENABLED=1 and a C compiler)", ErrNVMLUnavailable, NVMLHelperName)
	_, _ = stdout.Write(HealthEvent{Type: EventError, Index: -1, Minor: -1, Time: time.Now(), Detail: err.Error()}.MarshalLine())
	return nvmlHelperMain(nvmlListing{}, err, nil, stderr)
}
