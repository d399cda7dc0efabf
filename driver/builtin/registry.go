package builtin

import (
	"os"
	"strings"

	"github.com/xres/xres/driver"
	"github.com/xres/xres/driver/gpu"
	"github.com/xres/xres/driver/plugin"
)

// Lookuper is what the launcher needs of a registry: *driver.Registry and
// what WithPlugins returns implement it.
type Lookuper = plugin.Lookuper

// Registry is the launcher's driver registry, assembled by
// cmd/container-launcher: the built-in factories, the plugin names on top,
// and what the launcher asks of its drivers beyond a factory (the vendors'
// variables, the explanations of their errors, the discovery bridge's
// default driver), so that driver/launch names no driver.
type Registry struct {
	plugin.Registry
	base *driver.Registry
}

// NewRegistry returns the launcher's driver registry: every built-in
// factory (RegisterBuiltins) and the plugin names on top (WithPlugins).
func NewRegistry(getenv func(string) string) (*Registry, error) {
	return Over(driver.NewRegistry(), getenv)
}

// Over adds the built-in factories to base, and the plugin names on top
// (tests add their own factories to base first).
func Over(base *driver.Registry, getenv func(string) string) (*Registry, error) {
	if err := RegisterBuiltins(base); err != nil {
		return nil, err
	}
	return &Registry{Registry: plugin.Registry{Base: base, Getenv: getenv}, base: base}, nil
}

// NamedVendor implements driver.VendorFinder: the vendor
// visible-devices.vendor names (case-insensitive; one no registered
// factory reports is none).
func (r *Registry) NamedVendor(params map[string]string) (driver.VendorReporter, bool) {
	v, ok := gpu.VisibleDevicesVendorParam.Lookup(params)
	if !ok {
		return nil, false
	}
	vr, _ := r.base.Vendor(driver.Vendor(strings.ToLower(v)))
	return vr, true
}

// KnownFactories lists the factory names registered and the device
// plugins installed under the plugins root (getenv picks it).
func (r *Registry) KnownFactories(getenv func(string) string) []string {
	return append(r.base.Names(), InstalledPlugins(getenv)...)
}

// PluginRoot is the folder device plugins are installed under (getenv
// picks it).
func (r *Registry) PluginRoot(getenv func(string) string) string { return PluginRoot(getenv) }

// DiagnoseNew implements the launcher's diagnoser (DiagnoseNew).
func (r *Registry) DiagnoseNew(err error, getenv func(string) string) (driver.Diagnosis, bool) {
	return DiagnoseNew(err, getenv)
}

// DiagnoseDiscover implements the launcher's diagnoser (DiagnoseDiscover).
func (r *Registry) DiagnoseDiscover(err error, amount int64, script bool) driver.Diagnosis {
	return DiagnoseDiscover(err, amount, script)
}

// BridgeResource is the resource the discovery bridge serves when it is
// named none: gpu.
func (r *Registry) BridgeResource() string { return gpu.BridgeResource }

// BridgeDefault is the driver the discovery bridge discovers resource
// with where none is configured: the GPU driver for gpu.
func (r *Registry) BridgeDefault(resource string) (string, bool) {
	if resource == gpu.BridgeResource {
		return GPUFactory, true
	}
	return "", false
}

// BridgeDropParams are the params the discovery bridge, which is the
// discovery script, drops so as to discover built in: the GPU driver's
// about a script.
func (r *Registry) BridgeDropParams() []string { return GPUScriptParams }

// WithPlugins adds the plugin names to base: "plugin:<dir>", or a bare
// directory name under the plugins root (getenv picks the root; nil means
// os.Getenv).
func WithPlugins(base Lookuper, getenv func(string) string) Lookuper {
	return plugin.Registry{Base: base, Getenv: getenv}
}

// KnownFactories lists the factory names a registry knows, where it can
// say (a registry with Names, or WithPlugins over one).
func KnownFactories(r Lookuper) []string {
	type namer interface{ Names() []string }
	switch reg := r.(type) {
	case namer:
		return reg.Names()
	case plugin.Registry:
		if n, ok := reg.Base.(namer); ok {
			return n.Names()
		}
	case *Registry:
		return reg.base.Names()
	}
	return nil
}

// PluginRoot is the folder device plugins are installed under (getenv
// picks it; nil means os.Getenv).
func PluginRoot(getenv func(string) string) string {
	root, _ := plugin.Root(orGetenv(getenv))
	return root
}

// InstalledPlugins lists the device plugins under the plugins root (a
// folder <name> holding an executable <name>); none when the root is
// unreadable.
func InstalledPlugins(getenv func(string) string) []string {
	getenv = orGetenv(getenv)
	root, _ := plugin.Root(getenv)
	ents, _ := os.ReadDir(root)
	out := []string{}
	for _, e := range ents {
		if _, err := plugin.Resolve(e.Name(), getenv); e.IsDir() && err == nil {
			out = append(out, e.Name())
		}
	}
	return out
}

func orGetenv(getenv func(string) string) func(string) string {
	if getenv == nil {
		return os.Getenv
	}
	return getenv
}
