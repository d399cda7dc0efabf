package launch

import (
	"github.com/xres/xres/driver"
)

// What the launcher asks of its registry beyond finding factories, where
// the registry offers it. cmd/container-launcher gives the built-in
// drivers' (driver/builtin.Registry); the launcher names no driver itself.
type (
	// diagnoser explains drivers' errors for check and for the exit code
	// (a script or plugin missing on this host is the host's).
	diagnoser interface {
		DiagnoseNew(err error, getenv func(string) string) (driver.Diagnosis, bool)
		DiagnoseDiscover(err error, amount int64, script bool) driver.Diagnosis
	}
	// factoryLister names the factories a configuration may use, for
	// check's did-you-mean.
	factoryLister interface {
		KnownFactories(getenv func(string) string) []string
		PluginRoot(getenv func(string) string) string
	}
	// bridgeDriver gives the discovery bridge its default driver.
	bridgeDriver interface {
		// BridgeResource is the resource the bridge serves when
		// --resources names none.
		BridgeResource() string
		// BridgeDefault is the factory for resource where none is
		// configured; ok is false where there is none.
		BridgeDefault(resource string) (factory string, ok bool)
		// BridgeDropParams are the params the bridge drops: it is the
		// discovery script, and discovers built in.
		BridgeDropParams() []string
	}
)

// diagnoseNew explains an error of a factory's NewDriver, where the
// registry can.
func (l *Launcher) diagnoseNew(err error) (driver.Diagnosis, bool) {
	if d, ok := l.Registry.(diagnoser); ok {
		return d.DiagnoseNew(err, l.getenv())
	}
	return driver.Diagnosis{}, false
}

// diagnoseDiscover explains a failed trial discovery: always a problem of
// the host.
func (l *Launcher) diagnoseDiscover(err error, amount int64, script bool) driver.Diagnosis {
	if d, ok := l.Registry.(diagnoser); ok {
		return d.DiagnoseDiscover(err, amount, script)
	}
	return driver.Diagnosis{Host: true, Fix: "make the devices visible to this host's workers (drivers installed, device nodes readable)"}
}

// knownFactories lists the factory names the registry knows and its
// plugin root, where it can say.
func (l *Launcher) knownFactories() (names []string, pluginRoot string) {
	if f, ok := l.Registry.(factoryLister); ok {
		return f.KnownFactories(l.getenv()), f.PluginRoot(l.getenv())
	}
	if n, ok := l.Registry.(interface{ Names() []string }); ok {
		return n.Names(), ""
	}
	return nil, ""
}
