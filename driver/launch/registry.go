package launch

import (
	"errors"
	"fmt"

	"github.com/xres/xres/driver"
	"github.com/xres/xres/driver/amd"
	"github.com/xres/xres/driver/builtin"
	"github.com/xres/xres/driver/pci"
	"github.com/xres/xres/driver/plugin"
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
	extra := []struct {
		name     string
		register func(*driver.Registry) error
	}{
		{pci.FactoryName, pci.Register},
		{amd.FactoryName, amd.Register},
		{plugin.FactoryName, plugin.Register},
	}
	for _, e := range extra {
		if _, err := r.Lookup(e.name); err == nil {
			continue // builtin registered it already
		} else if !errors.Is(err, driver.ErrUnknownFactory) {
			return nil, fmt.Errorf("register driver %s: %w", e.name, err)
		}
		if err := e.register(r); err != nil {
			return nil, fmt.Errorf("register driver %s: %w", e.name, err)
		}
	}
	return plugin.Registry{Base: r, Getenv: getenv}, nil
}
