package builtin

import (
	"os"

	"github.com/xres/xres/driver"
	"github.com/xres/xres/driver/plugin"
)

// Lookuper is what the launcher needs of a registry: *driver.Registry and
// what WithPlugins returns implement it.
type Lookuper = plugin.Lookuper

// NewRegistry returns the launcher's driver registry: every built-in
// factory (RegisterBuiltins) and the plugin names on top (WithPlugins).
func NewRegistry(getenv func(string) string) (Lookuper, error) {
	r := driver.NewRegistry()
	if err := RegisterBuiltins(r); err != nil {
		return nil, err
	}
	return WithPlugins(r, getenv), nil
}

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
