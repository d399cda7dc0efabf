// Package builtin registers xres's built-in driver factories, under their
// own names and Flink's factory class names, in a driver.Registry. The
// caller (cmd/) does it explicitly; nothing registers itself in init().
package builtin

import (
	"fmt"

	"github.com/xres/xres/driver"
	"github.com/xres/xres/driver/gpu"
)

// RegisterBuiltins registers every built-in driver factory in r:
//
//	xres.gpu  alias org.apache.flink.externalresource.gpu.GPUDriverFactory
func RegisterBuiltins(r *driver.Registry) error {
	if err := r.Register(gpu.FactoryName, gpu.NewFactory(), gpu.FlinkFactoryClass); err != nil {
		return fmt.Errorf("register built-in drivers: %w", err)
	}
	return nil
}
