// Package plugin runs out-of-process device plugins, the Go counterpart of
// Flink's plugins/<dir>/ jars: an executable in a directory under the
// plugins root, speaking a small JSON protocol (see ProtocolVersion), so
// users add a device type without rebuilding xres.
//
// Naming a plugin (external-resource.<name>.driver-factory.class):
//
//	plugin:<dir>   runs <root>/<dir>/<dir>
//	<dir>          the same, for a name no built-in driver has, when that
//	               executable exists
//	xres.plugin    runs param.plugin: a directory name as above, a path
//	               relative to the root (tools/bin/list-devices), or an
//	               absolute path
//
// The plugins root is $XRES_PLUGINS_DIR, else $FLINK_PLUGINS_DIR, else
// $FLINK_HOME/plugins, else ./plugins.
//
// Params: plugin (see above), timeout (default xres.discovery.timeout, else
// 10 s; on expiry the plugin's
// whole process group is killed), coordination.enabled and
// coordination.file (host coordination, as for built-in drivers). Every
// param is passed to the plugin.
package plugin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/xres/xres/conf/factoryname"

	"github.com/sirupsen/logrus"

	"github.com/xres/xres/driver"
	"github.com/xres/xres/driver/coord"
	"github.com/xres/xres/driver/internal/capture"
	"github.com/xres/xres/resources"
	"github.com/xres/xres/resources/params"
)

// Names.
const (
	FactoryName = factoryname.Plugin     // the factory that runs param.plugin
	ClassPrefix = resources.PluginPrefix // driver-factory.class prefix naming a plugin directory
)

// Params.
const (
	ParamPlugin  = "plugin"
	ParamTimeout = "timeout"
)

// pluginParam names the plugin xres.plugin runs; timeout is
// driver.TimeoutParam. Every other param is the plugin's own and reaches it
// as XRES_PARAM_<KEY>.
var pluginParam = driver.Declare(params.Plugin.WithDoc("Device plugin (xres.plugin): a directory under the plugins root (runs `<dir>/<dir>`), " +
	"a path relative to the root, or an absolute path. The plugin gets every param of the resource as `XRES_PARAM_<KEY>`."))

// Params lists the params xres reads for a device plugin (a plugin reads
// its own besides).
func Params() []driver.Param {
	return []driver.Param{pluginParam, driver.TimeoutParam, coord.EnabledParam, coord.FileParam}
}

// DefaultTimeout bounds one plugin run when neither param.timeout nor
// xres.discovery.timeout is set.
const DefaultTimeout = driver.DefaultTimeout

// Environment variables that choose the plugins root, in order.
const (
	EnvPluginsDir      = "XRES_PLUGINS_DIR"
	EnvFlinkPluginsDir = "FLINK_PLUGINS_DIR"
	EnvFlinkHome       = "FLINK_HOME"
)

var (
	// ErrInvalidParam is wrapped by errors about a malformed or missing
	// param; the message names the full config key.
	ErrInvalidParam = driver.ErrInvalidParam
	// ErrNotFound: the plugin executable does not exist.
	ErrNotFound = errors.New("plugin not found")
	// ErrNotExecutable: the plugin exists but cannot be executed.
	ErrNotExecutable = errors.New("plugin not executable")
	// ErrFailed: the plugin exited non-zero or was killed by a signal.
	ErrFailed = errors.New("plugin failed")
	// ErrTimeout: the plugin ran longer than its timeout and was killed.
	ErrTimeout = errors.New("plugin timed out")
)

// Root returns the plugins root and where it came from, for messages.
func Root(getenv func(string) string) (dir, from string) {
	if getenv == nil {
		getenv = os.Getenv
	}
	switch {
	case getenv(EnvPluginsDir) != "":
		return getenv(EnvPluginsDir), "$" + EnvPluginsDir
	case getenv(EnvFlinkPluginsDir) != "":
		return getenv(EnvFlinkPluginsDir), "$" + EnvFlinkPluginsDir
	case getenv(EnvFlinkHome) != "":
		return filepath.Join(getenv(EnvFlinkHome), "plugins"), "$" + EnvFlinkHome + "/plugins"
	}
	if abs, err := filepath.Abs("plugins"); err == nil {
		return abs, "./plugins"
	}
	return "plugins", "./plugins"
}

// Resolve turns a plugin name into the executable's path: an absolute
// path as is, a path with a slash relative to the root, a bare name to
// <root>/<name>/<name>. It checks that the file exists and is executable.
func Resolve(name string, getenv func(string) string) (string, error) {
	name = strings.TrimSpace(name)
	if name == "" {
		return "", fmt.Errorf("empty plugin name: %w", ErrNotFound)
	}
	root, from := Root(getenv)
	var path string
	switch {
	case filepath.IsAbs(name):
		path = name
	case strings.ContainsRune(name, '/'):
		path = filepath.Join(root, name)
	default:
		path = filepath.Join(root, name, name)
	}
	// Absolute, so that messages and XRES_PLUGIN_DIR do not depend on the
	// working directory.
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("plugin %q: no executable at %s (plugins root %s from %s): %w", name, path, root, from, ErrNotFound)
	case err != nil:
		return "", fmt.Errorf("plugin %q: %s: %w: %w", name, path, err, ErrNotFound)
	case !fi.Mode().IsRegular():
		return "", fmt.Errorf("plugin %q: %s is not a regular file: %w", name, path, ErrNotExecutable)
	}
	if err := syscall.Access(path, 0x1 /* X_OK */); err != nil {
		return "", fmt.Errorf("plugin %q: %s: %v (chmod +x it): %w", name, path, err, ErrNotExecutable)
	}
	return path, nil
}

// Plugin is one resolved plugin executable with its run settings.
type Plugin struct {
	Path     string
	Resource string
	Params   map[string]string
	Timeout  time.Duration // DefaultTimeout when 0
	DryRun   bool
	Log      logrus.FieldLogger
}

// Run runs the plugin once and returns the devices it printed. It fails
// with ErrTimeout, ErrFailed (exit code or signal, and stderr's last
// lines) or ErrBadOutput.
func (p *Plugin) Run(ctx context.Context, amount int64) ([]resources.Properties, error) {
	timeout := p.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	params := p.Params
	if params == nil {
		params = map[string]string{}
	}
	req, err := json.Marshal(request{Protocol: ProtocolVersion, Resource: p.Resource, Amount: amount, DryRun: p.DryRun, Params: params})
	if err != nil {
		return nil, fmt.Errorf("plugin %s: encode request: %w", p.Path, err)
	}
	runCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	cmd := exec.CommandContext(runCtx, p.Path, "discover", strconv.FormatInt(amount, 10))
	cmd.Env = append(os.Environ(), p.env(amount)...)
	cmd.Stdin = bytes.NewReader(req)
	stdout := &capture.Head{Max: MaxOutput}
	stderr := &stderrTail{capture.Tail{Max: 16 << 10}}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	isolate(cmd)
	cmd.WaitDelay = 2 * time.Second

	log := driver.LoggerOrDiscard(p.Log).WithField("plugin", p.Path)
	start := time.Now()
	runErr := cmd.Run()
	killGroup(cmd) // whatever the plugin left behind in its group
	elapsed := time.Since(start).Round(time.Millisecond)
	for _, line := range stderr.lines(0) {
		log.WithField("stderr", line).Debug("plugin stderr")
	}

	switch {
	case errors.Is(runCtx.Err(), context.DeadlineExceeded) && ctx.Err() == nil:
		return nil, fmt.Errorf("plugin %s: %w after %s (its process group was killed)%s", p.Path, ErrTimeout, timeout, stderr.quote())
	case ctx.Err() != nil:
		return nil, fmt.Errorf("plugin %s: %w", p.Path, ctx.Err())
	}
	var exit *exec.ExitError
	if errors.As(runErr, &exit) {
		if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return nil, fmt.Errorf("plugin %s: %w: killed by signal %s%s", p.Path, ErrFailed, ws.Signal(), stderr.quote())
		}
		return nil, fmt.Errorf("plugin %s: %w: exit code %d%s", p.Path, ErrFailed, exit.ExitCode(), stderr.quote())
	}
	if runErr != nil && !errors.Is(runErr, exec.ErrWaitDelay) {
		return nil, fmt.Errorf("plugin %s: run: %w", p.Path, runErr)
	}
	if stdout.Overflow() {
		return nil, fmt.Errorf("plugin %s: %w: more than %d bytes on stdout", p.Path, ErrBadOutput, MaxOutput)
	}
	devices, err := ParseOutput(stdout.Bytes())
	if err != nil {
		return nil, fmt.Errorf("plugin %s: %w%s", p.Path, err, stderr.quote())
	}
	log.WithFields(logrus.Fields{"devices": len(devices), "elapsed": elapsed}).Debug("plugin ran")
	return devices, nil
}

// env is what the plugin gets on top of the launcher's environment.
func (p *Plugin) env(amount int64) []string {
	env := []string{
		"XRES_PLUGIN_PROTOCOL=" + strconv.Itoa(ProtocolVersion),
		"XRES_PLUGIN_DIR=" + filepath.Dir(p.Path),
		"XRES_RESOURCE=" + p.Resource,
		"XRES_AMOUNT=" + strconv.FormatInt(amount, 10),
		"XRES_DRY_RUN=" + strconv.FormatBool(p.DryRun),
	}
	params := make([]string, 0, len(p.Params))
	for k, v := range p.Params {
		params = append(params, "XRES_PARAM_"+driver.EnvToken(k)+"="+v)
	}
	sort.Strings(params)
	return append(env, params...)
}

// Devices runs the plugin and keys its devices for coordination.
func (p *Plugin) Devices(ctx context.Context, amount int64) ([]driver.Device, error) {
	props, err := p.Run(ctx, amount)
	if err != nil {
		return nil, err
	}
	devs := make([]driver.Device, 0, len(props))
	seen := map[string]int{}
	for i, pr := range props {
		key, ok := Identity(pr)
		if !ok {
			return nil, fmt.Errorf("plugin %s: %w: device %d has none of %s to identify it", p.Path, ErrBadOutput, i, strings.Join(IdentityKeys, ", "))
		}
		if j, dup := seen[key]; dup {
			return nil, fmt.Errorf("plugin %s: %w: devices %d and %d are both %q", p.Path, ErrBadOutput, j, i, key)
		}
		seen[key] = i
		if !hostWide(pr) {
			// A bare index or id is only unique within this plugin.
			key = "plugin:" + p.Path + ":" + key
		}
		devs = append(devs, driver.Device{Key: key, Info: pr})
	}
	return devs, nil
}

// pluginDriver runs the plugin on Discover and lets the shared layer pick
// and reserve among its devices.
type pluginDriver struct {
	plugin *Plugin
	opts   driver.Options

	mu  sync.Mutex
	sel *driver.Coordinated
}

var (
	_ driver.Driver   = (*pluginDriver)(nil)
	_ driver.Releaser = (*pluginDriver)(nil)
)

type enumFunc func(ctx context.Context) ([]driver.Device, error)

func (f enumFunc) Enumerate(ctx context.Context) ([]driver.Device, error) { return f(ctx) }

// Discover implements driver.Driver.
func (d *pluginDriver) Discover(ctx context.Context, amount int64) ([]resources.Info, error) {
	sel, err := coord.NewCoordinated(d.opts, enumFunc(func(ctx context.Context) ([]driver.Device, error) {
		return d.plugin.Devices(ctx, amount)
	}))
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	d.sel = sel
	d.mu.Unlock()
	return sel.Discover(ctx, amount)
}

// Release implements driver.Releaser.
func (d *pluginDriver) Release(ctx context.Context) error {
	d.mu.Lock()
	sel := d.sel
	d.mu.Unlock()
	if sel == nil {
		return nil
	}
	return sel.Release(ctx)
}

// NewFactory returns the xres.plugin factory: it runs param.plugin.
func NewFactory() driver.Factory { return factory{} }

// FactoryFor returns the factory of the plugin named dir (driver-factory.class
// plugin:<dir>).
func FactoryFor(dir string) driver.Factory { return factory{dir: dir, named: true} }

// factory is a plugin's factory: xres.plugin's (the plugin named by
// param.plugin) or plugin:<dir>'s (named). A plugin lists devices and xres
// coordinates them (coord.NewCoordinated), so it reports
// coord.CoordinationOf.
type factory struct {
	dir   string
	named bool
}

var (
	_ driver.CoordinationReporter = factory{}
	_ driver.ParamChecker         = factory{}
)

// plugin names the plugin to run and the key that names it.
func (f factory) plugin(resource string, p map[string]string) (name, key string, err error) {
	return params.PluginName(resource, p, f.named, f.dir)
}

// CheckParams implements driver.ParamChecker (params.CheckPlugin): the
// plugin named, its timeout and the coordination params, without looking
// for the plugin (whether it is installed is the host's business).
func (f factory) CheckParams(resource string, p map[string]string) error {
	return params.CheckPlugin(resource, p, f.named, f.dir)
}

// NewDriver implements driver.Factory.
func (f factory) NewDriver(opts driver.Options) (driver.Driver, error) {
	if err := f.CheckParams(opts.Resource, opts.Params); err != nil {
		return nil, err
	}
	name, key, _ := f.plugin(opts.Resource, opts.Params)
	return newDriver(opts, name, key)
}

// Coordination implements driver.CoordinationReporter.
func (factory) Coordination(resource string, params map[string]string, _ func(string) string) (driver.Coordination, error) {
	return coord.CoordinationOf(resource, params)
}

func newDriver(opts driver.Options, name, key string) (driver.Driver, error) {
	path, err := Resolve(name, opts.Getenv)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", key, err)
	}
	timeout, err := driver.TimeoutParam.Timeout(opts.Resource, opts.Params, opts.Timeout)
	if err != nil {
		return nil, err
	}
	params := make(map[string]string, len(opts.Params))
	for k, v := range opts.Params {
		params[k] = v
	}
	return &pluginDriver{
		plugin: &Plugin{Path: path, Resource: opts.Resource, Params: params, Timeout: timeout, DryRun: opts.DryRun, Log: opts.Log},
		opts:   opts,
	}, nil
}

// Register adds the xres.plugin factory to r.
func Register(r *driver.Registry) error {
	return r.Register(FactoryName, NewFactory())
}

// Lookuper is what the launcher needs of a registry; *driver.Registry
// implements it.
type Lookuper interface {
	Lookup(name string) (driver.Factory, error)
	Canonical(name string) (string, bool)
}

// Registry adds plugin names to a registry: "plugin:<dir>" always finds
// the plugin factory (whose NewDriver reports a missing executable as
// ErrNotFound, a problem of the host), and a name Base does not know finds the plugin
// <root>/<name>/<name> when that executable exists.
type Registry struct {
	Base   Lookuper
	Getenv func(string) string
}

var _ Lookuper = Registry{}

// Lookup implements Lookuper.
func (r Registry) Lookup(name string) (driver.Factory, error) {
	if dir, ok := strings.CutPrefix(name, ClassPrefix); ok {
		return FactoryFor(strings.TrimSpace(dir)), nil
	}
	f, err := r.Base.Lookup(name)
	if err == nil || !errors.Is(err, driver.ErrUnknownFactory) {
		return f, err
	}
	if r.installed(name) {
		return FactoryFor(name), nil
	}
	return nil, err
}

// Canonical implements Lookuper: plugin names are their own canonical
// names.
func (r Registry) Canonical(name string) (string, bool) {
	if strings.HasPrefix(name, ClassPrefix) {
		return name, true
	}
	if c, ok := r.Base.Canonical(name); ok {
		return c, true
	}
	if _, err := r.Base.Lookup(name); errors.Is(err, driver.ErrUnknownFactory) && r.installed(name) {
		return ClassPrefix + name, true
	}
	return "", false
}

// installed reports whether name, a bare directory name, is a plugin
// installed under the plugins root (<root>/<name>/<name>).
func (r Registry) installed(name string) bool {
	if strings.ContainsAny(name, "/ ") {
		return false
	}
	_, err := Resolve(name, r.Getenv)
	return err == nil
}

// stderrTail is the last bytes of a plugin's stderr.
type stderrTail struct{ capture.Tail }

// lines returns the last n lines (all when n <= 0).
func (t *stderrTail) lines(n int) []string {
	s := strings.TrimRight(string(t.Bytes()), "\n")
	if strings.TrimSpace(s) == "" {
		return nil
	}
	ls := strings.Split(s, "\n")
	if n > 0 && len(ls) > n {
		ls = ls[len(ls)-n:]
	}
	return ls
}

// quote formats stderr's last lines for an error message.
func (t *stderrTail) quote() string {
	ls := t.lines(10)
	if len(ls) == 0 {
		return "; no stderr"
	}
	s := strings.Join(ls, "\n")
	if len(s) > 2048 {
		s = "…" + s[len(s)-2048:]
	}
	return "; stderr: " + s
}

// hostWide reports whether the device's identity names it host-wide (a
// UUID or a PCI address), so that other drivers reserving the same device
// see it held.
func hostWide(p resources.Properties) bool {
	for _, k := range IdentityKeys[:4] { // uuid, pci.bus-id, address, pci
		if strings.TrimSpace(p[k]) != "" {
			return true
		}
	}
	return false
}
