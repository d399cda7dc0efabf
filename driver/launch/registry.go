package launch

import (
	"github.com/xres/xres/driver"
	"github.com/xres/xres/driver/builtin"
)

// NewRegistry returns the launcher's driver registry: every built-in
// factory (the GPU driver and its Flink alias, the PCI/FPGA driver, the AMD
// GPU driver, xres.plugin) and the plugin names on top ("plugin:<dir>", or
// a bare directory name under the plugins root; getenv picks the root).
func NewRegistry(getenv func(string) string) (Registry, error) {
	return withBuiltins(driver.NewRegistry(), getenv)
}

// withBuiltins adds the built-in factories to r and the plugin names on
// top.
func withBuiltins(r *driver.Registry, getenv func(string) string) (Registry, error) {
	if err := builtin.RegisterBuiltins(r); err != nil {
		return nil, err
	}
	return builtin.WithPlugins(r, getenv), nil
}
