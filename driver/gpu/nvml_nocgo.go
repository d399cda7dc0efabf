//go:build !cgo || !linux

package gpu

import (
	"fmt"
	"io"
)

// NVMLHelperMain is the xres-nvml command; built without cgo (or off
// Linux) it cannot load NVML, and says so: exit 3, NVML unavailable.
func NVMLHelperMain(_ []string, _, stderr io.Writer) int {
	return nvmlHelperMain(nvmlListing{}, fmt.Errorf("%w: %s was built without cgo (build it with CGO_ENABLED=1 and a C compiler)", ErrNVMLUnavailable, NVMLHelperName), nil, stderr)
}
