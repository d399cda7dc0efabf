package plugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/driver"
	"github.com/xres/xres/resources"
)

// env is a fake environment for Options.Getenv.
func env(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

// install writes an executable plugin <root>/<name>/<name> with the given
// script body and returns the root.
func install(t *testing.T, root, name, script string) string {
	t.Helper()
	if root == "" {
		root = t.TempDir()
	}
	dir := filepath.Join(root, name)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+script+"\n"), 0o755))
	return root
}

// helper installs a plugin that re-executes this test binary as
// TestHelperPlugin in the given mode (go-plugin's helper-process pattern).
func helper(t *testing.T, root, name, mode string) string {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	return install(t, root, name, fmt.Sprintf("GO_WANT_HELPER_PLUGIN=%s exec '%s' -test.run='^TestHelperPlugin$' -- \"$@\"", mode, exe))
}

// TestHelperPlugin is the plugin side of the protocol tests; it does
// nothing in a normal test run.
func TestHelperPlugin(t *testing.T) {
	mode := os.Getenv("GO_WANT_HELPER_PLUGIN")
	if mode == "" {
		return
	}
	args := os.Args
	for i, a := range args {
		if a == "--" {
			args = args[i+1:]
			break
		}
	}
	switch mode {
	case "echo": // one device that reports what the plugin was given
		in, _ := io.ReadAll(os.Stdin)
		var req map[string]any
		if err := json.Unmarshal(in, &req); err != nil {
			fmt.Fprintln(os.Stderr, "bad request:", err)
			os.Exit(4)
		}
		wd, _ := os.Getwd()
		params, _ := json.Marshal(req["params"])
		dev := map[string]any{
			"id":        "echo-0",
			"argv":      strings.Join(args, " "),
			"cwd":       wd,
			"protocol":  req["protocol"],
			"resource":  req["resource"],
			"amount":    req["amount"],
			"dry-run":   req["dry_run"],
			"params":    string(params),
			"env-proto": os.Getenv("XRES_PLUGIN_PROTOCOL"),
			"env-dir":   os.Getenv("XRES_PLUGIN_DIR"),
			"env-res":   os.Getenv("XRES_RESOURCE"),
			"env-amt":   os.Getenv("XRES_AMOUNT"),
			"env-dry":   os.Getenv("XRES_DRY_RUN"),
			"env-param": os.Getenv("XRES_PARAM_SYSFS_ROOT"),
		}
		_ = json.NewEncoder(os.Stdout).Encode([]any{dev})
		os.Exit(0)
	}
	os.Exit(99)
}

func TestProtocol(t *testing.T) {
	wd, err := os.Getwd()
	require.NoError(t, err)
	root := helper(t, "", "echo", "echo")
	d, err := FactoryFor("echo").NewDriver(driver.Options{
		Resource: "fpga",
		Params:   map[string]string{"sysfs-root": "/fake/sys", "coordination.enabled": "false"},
		Getenv:   env(EnvPluginsDir, root),
		DryRun:   true,
	})
	require.NoError(t, err)
	infos, err := d.Discover(context.Background(), 1)
	require.NoError(t, err)
	require.Len(t, infos, 1)
	got := infos[0].(resources.Properties)
	require.Equal(t, resources.Properties{
		"id":        "echo-0",
		"argv":      "discover 1",
		"cwd":       wd,
		"env-dir":   filepath.Join(root, "echo"),
		"protocol":  "1",
		"resource":  "fpga",
		"amount":    "1",
		"dry-run":   "true",
		"params":    `{"coordination.enabled":"false","sysfs-root":"/fake/sys"}`,
		"env-proto": "1",
		"env-res":   "fpga",
		"env-amt":   "1",
		"env-dry":   "true",
		"env-param": "/fake/sys",
	}, got)
}

// The example plugin in driver/examples/plugins works through the whole path:
// plugins root, plugin:<dir> lookup, protocol, host coordination.
func TestExamplePlugin(t *testing.T) {
	src, err := os.ReadFile("../examples/plugins/sysfs-fpga/sysfs-fpga")
	require.NoError(t, err)
	root := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(root, "sysfs-fpga"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "sysfs-fpga", "sysfs-fpga"), src, 0o755))
	sysfs, err := filepath.Abs("../pci/testdata/two-fpgas/sys")
	require.NoError(t, err)

	reg := Registry{Base: driver.NewRegistry(), Getenv: env(EnvFlinkHome, filepath.Dir(root))}
	require.NoError(t, os.Rename(root, filepath.Join(filepath.Dir(root), "plugins")))
	f, err := reg.Lookup("plugin:sysfs-fpga")
	require.NoError(t, err)
	canonical, ok := reg.Canonical("plugin:sysfs-fpga")
	require.True(t, ok)
	require.Equal(t, "plugin:sysfs-fpga", canonical)

	params := map[string]string{"vendor": "0x10EE", "device": "0x5005", "sysfs-root": sysfs,
		"coordination.file": filepath.Join(t.TempDir(), "state")}
	opts := driver.Options{Resource: "fpga", Params: params, Getenv: reg.Getenv}
	first, err := f.NewDriver(opts)
	require.NoError(t, err)
	got, err := first.Discover(context.Background(), 1)
	require.NoError(t, err)
	require.Equal(t, []resources.Info{resources.Properties{
		"index": "0", "address": "0000:3b:00.1", "vendor": "0x10ee", "device": "0x5005", "numa-node": "0",
	}}, got)

	second, err := f.NewDriver(opts)
	require.NoError(t, err)
	got, err = second.Discover(context.Background(), 1)
	require.NoError(t, err)
	addr, _ := got[0].Property("address")
	require.Equal(t, "0000:d8:00.1", addr, "the first FPGA is held by the first driver")

	_, err = second.Discover(context.Background(), 1)
	require.ErrorIs(t, err, driver.ErrNotEnoughDevices)
	require.NoError(t, first.(driver.Releaser).Release(context.Background()))
	require.NoError(t, second.(driver.Releaser).Release(context.Background()))

	// The example's own failure: no vendor param.
	delete(params, "vendor")
	d, err := f.NewDriver(opts)
	require.NoError(t, err)
	_, err = d.Discover(context.Background(), 1)
	require.ErrorIs(t, err, ErrFailed)
	require.ErrorContains(t, err, "exit code 2; stderr: param vendor is missing (e.g. 0x10ee)")
}

func TestFailures(t *testing.T) {
	tests := []struct {
		name    string
		script  string
		timeout string
		is      error
		want    string
	}{
		{"non-zero exit", `echo "probing card 0" >&2; echo "xbutil: card 0 is not ready" >&2; exit 3`, "",
			ErrFailed, "exit code 3; stderr: probing card 0\nxbutil: card 0 is not ready"},
		{"exit without stderr", `exit 1`, "", ErrFailed, "exit code 1; no stderr"},
		{"killed by a signal", `kill -9 $$`, "", ErrFailed, "killed by signal killed"},
		{"not JSON", `echo 'card0 card1'`, "", ErrBadOutput, `want a JSON array of device objects`},
		{"an object, not an array", `echo '{"index": "0"}'`, "", ErrBadOutput, "want a JSON array"},
		{"null", `echo null`, "", ErrBadOutput, "got \"null\""},
		{"nested value", `echo '[{"index": "0", "mem": {"total": 1}}]'`, "", ErrBadOutput, `device 0 property "mem": want a string, number or boolean, got an object`},
		{"no identity", `echo '[{"name": "fpga"}]'`, "", ErrBadOutput, "device 0 has none of uuid, pci.bus-id, address, pci, index, id"},
		{"same device twice", `echo '[{"index": "0"}, {"index": "0"}]'`, "", ErrBadOutput, `devices 0 and 1 are both "0"`},
		{"trailing garbage", `echo '[{"index": "0"}] and more'`, "", ErrBadOutput, "data after the JSON array"},
		{"too much output", `yes '{"index": "0"},' | head -c 1100000`, "", ErrBadOutput, "more than 1048576 bytes on stdout"},
		{"bad output quotes stderr", `echo 'WARNING: low power state' >&2; echo '['`, "", ErrBadOutput, "stderr: WARNING: low power state"},
		{"timeout", `sleep 30`, "1 s", ErrTimeout, "timed out after 1s (its process group was killed)"},
		{"too few devices", `echo '[{"index": "0"}]'`, "", driver.ErrNotEnoughDevices, "2 requested but the host has 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := install(t, "", "dev", tt.script)
			params := map[string]string{"coordination.enabled": "false"}
			if tt.timeout != "" {
				params["timeout"] = tt.timeout
			}
			d, err := FactoryFor("dev").NewDriver(driver.Options{Resource: "dev", Params: params, Getenv: env(EnvPluginsDir, root)})
			require.NoError(t, err)
			start := time.Now()
			infos, err := d.Discover(context.Background(), 2)
			require.ErrorIs(t, err, tt.is)
			require.ErrorContains(t, err, tt.want)
			require.Nil(t, infos)
			require.Less(t, time.Since(start), 10*time.Second)
		})
	}
}

// On timeout the plugin's whole process group dies, background children
// included; so does whatever a plugin leaves behind when it exits.
func TestProcessGroupKilled(t *testing.T) {
	for _, tt := range []struct {
		name, script, timeout string
	}{
		// 3 s leaves the shell time to write the pid file on a loaded machine.
		{"timeout", `sleep 60 & echo $! > "$PIDFILE"; wait`, "3 s"},
		{"left behind", `sleep 60 >/dev/null 2>&1 & echo $! > "$PIDFILE"; echo '[{"index": "0"}]'`, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			pidfile := filepath.Join(t.TempDir(), "child.pid")
			t.Setenv("PIDFILE", pidfile)
			root := install(t, "", "dev", tt.script)
			params := map[string]string{"coordination.enabled": "false"}
			if tt.timeout != "" {
				params["timeout"] = tt.timeout
			}
			d, err := FactoryFor("dev").NewDriver(driver.Options{Resource: "dev", Params: params, Getenv: env(EnvPluginsDir, root)})
			require.NoError(t, err)
			_, _ = d.Discover(context.Background(), 1)
			b, err := os.ReadFile(pidfile)
			require.NoError(t, err)
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			require.NoError(t, err)
			require.Eventually(t, func() bool {
				return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) || zombie(pid)
			}, 5*time.Second, 20*time.Millisecond, "child %d still alive", pid)
		})
	}
}

// zombie reports whether pid has exited but is not yet reaped (its parent,
// the killed shell, is gone and init will reap it).
func zombie(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && i+2 < len(s) && s[i+2] == 'Z'
}

func TestContextCancelled(t *testing.T) {
	root := install(t, "", "dev", `sleep 30`)
	d, err := FactoryFor("dev").NewDriver(driver.Options{Resource: "dev", Params: map[string]string{"coordination.enabled": "false"}, Getenv: env(EnvPluginsDir, root)})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err = d.Discover(ctx, 1)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.NotErrorIs(t, err, ErrTimeout, "the caller's deadline is not the plugin's timeout")
}

func TestResolveAndConfigErrors(t *testing.T) {
	root := install(t, "", "dev", `echo '[]'`)
	require.NoError(t, os.WriteFile(filepath.Join(root, "dev", "notexec"), []byte("#!/bin/sh\n"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(root, "adir", "adir"), 0o755))
	getenv := env(EnvPluginsDir, root)
	tests := []struct {
		name    string
		factory driver.Factory
		params  map[string]string
		is      error
		want    string
	}{
		{"missing directory", FactoryFor("nosuch"), nil, ErrNotFound,
			"external-resource.dev.driver-factory.class: plugin \"nosuch\": no executable at " + filepath.Join(root, "nosuch", "nosuch") + " (plugins root " + root + " from $XRES_PLUGINS_DIR)"},
		{"not executable", NewFactory(), map[string]string{"plugin": "dev/notexec"}, ErrNotExecutable, "external-resource.dev.param.plugin: plugin \"dev/notexec\""},
		{"a directory", FactoryFor("adir"), nil, ErrNotExecutable, "is not a regular file"},
		{"xres.plugin without param.plugin", NewFactory(), nil, ErrInvalidParam, "external-resource.dev.param.plugin: missing"},
		{"class and param disagree", FactoryFor("dev"), map[string]string{"plugin": "other"}, ErrInvalidParam,
			`external-resource.dev.driver-factory.class names plugin "dev" but external-resource.dev.param.plugin names "other"`},
		{"bad timeout", FactoryFor("dev"), map[string]string{"timeout": "soon"}, ErrInvalidParam, `external-resource.dev.param.timeout: "soon" is not a duration`},
		{"zero timeout", FactoryFor("dev"), map[string]string{"timeout": "0 s"}, ErrInvalidParam, `"0 s" must be positive`},
		{"bad coordination switch", FactoryFor("dev"), map[string]string{"coordination.enabled": "on"}, nil, `external-resource.dev.param.coordination.enabled: "on", want true or false`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.factory.NewDriver(driver.Options{Resource: "dev", Params: tt.params, Getenv: getenv})
			require.Error(t, err)
			if tt.is != nil {
				require.ErrorIs(t, err, tt.is)
			}
			require.ErrorContains(t, err, tt.want)
		})
	}

	// Other ways to name it.
	for _, name := range []string{"dev", "dev/dev", filepath.Join(root, "dev", "dev")} {
		_, err := NewFactory().NewDriver(driver.Options{Resource: "dev", Params: map[string]string{"plugin": name}, Getenv: getenv})
		require.NoError(t, err, name)
	}
}

// A relative plugins root works although the plugin runs in its own
// directory.
func TestRelativeRoot(t *testing.T) {
	root := install(t, "", "dev", `echo '[{"id": "a"}]'`)
	t.Chdir(filepath.Dir(root))
	d, err := FactoryFor("dev").NewDriver(driver.Options{Resource: "dev", Params: map[string]string{"coordination.enabled": "false"},
		Getenv: env(EnvPluginsDir, filepath.Base(root))})
	require.NoError(t, err)
	infos, err := d.Discover(context.Background(), 1)
	require.NoError(t, err)
	require.Len(t, infos, 1)
}

func TestRoot(t *testing.T) {
	wd, err := os.Getwd()
	require.NoError(t, err)
	tests := []struct {
		env       func(string) string
		dir, from string
	}{
		{env(EnvPluginsDir, "/x", EnvFlinkPluginsDir, "/y", EnvFlinkHome, "/z"), "/x", "$XRES_PLUGINS_DIR"},
		{env(EnvFlinkPluginsDir, "/y", EnvFlinkHome, "/z"), "/y", "$FLINK_PLUGINS_DIR"},
		{env(EnvFlinkHome, "/opt/flink"), "/opt/flink/plugins", "$FLINK_HOME/plugins"},
		{env(), filepath.Join(wd, "plugins"), "./plugins"},
	}
	for _, tt := range tests {
		dir, from := Root(tt.env)
		require.Equal(t, tt.dir, dir)
		require.Equal(t, tt.from, from)
	}
}

func TestRegistry(t *testing.T) {
	base := driver.NewRegistry()
	builtin := driver.FactoryFunc(func(driver.Options) (driver.Driver, error) { return nil, errors.New("builtin") })
	require.NoError(t, base.Register("xres.pci", builtin, "org.apache.flink.externalresource.fpga.FPGADriverFactory"))
	require.NoError(t, Register(base))
	root := install(t, "", "mydevice", `echo '[{"id": "a"}]'`)
	reg := Registry{Base: base, Getenv: env(EnvPluginsDir, root)}

	_, err := reg.Lookup("xres.pci")
	require.NoError(t, err)
	c, ok := reg.Canonical("org.apache.flink.externalresource.fpga.FPGADriverFactory")
	require.True(t, ok)
	require.Equal(t, "xres.pci", c)

	// A bare name that only a plugin has.
	f, err := reg.Lookup("mydevice")
	require.NoError(t, err)
	c, ok = reg.Canonical("mydevice")
	require.True(t, ok)
	require.Equal(t, "plugin:mydevice", c)
	d, err := f.NewDriver(driver.Options{Resource: "dev", Params: map[string]string{"coordination.enabled": "false"}, Getenv: reg.Getenv})
	require.NoError(t, err)
	infos, err := d.Discover(context.Background(), 1)
	require.NoError(t, err)
	require.Equal(t, []resources.Info{resources.Properties{"id": "a"}}, infos)

	// Unknown everywhere: the registry's own error.
	_, err = reg.Lookup("com.example.MissingFactory")
	require.ErrorIs(t, err, driver.ErrUnknownFactory)
	_, ok = reg.Canonical("com.example.MissingFactory")
	require.False(t, ok)

	// plugin:<dir> always resolves to a factory; a missing executable is a
	// config error from NewDriver.
	f, err = reg.Lookup("plugin:nosuch")
	require.NoError(t, err)
	_, err = f.NewDriver(driver.Options{Resource: "dev", Getenv: reg.Getenv})
	require.ErrorIs(t, err, ErrNotFound)

	_, err = reg.Lookup(FactoryName)
	require.NoError(t, err)
}

// A plugin that fails reserves nothing; a later run gets every device.
func TestFailedRunReservesNothing(t *testing.T) {
	flagFile := filepath.Join(t.TempDir(), "fail")
	require.NoError(t, os.WriteFile(flagFile, nil, 0o644))
	root := install(t, "", "dev", `[ -e "`+flagFile+`" ] && { echo "card busy" >&2; exit 5; }; echo '[{"id": "a"}, {"id": "b"}]'`)
	opts := driver.Options{Resource: "dev", Getenv: env(EnvPluginsDir, root),
		Params: map[string]string{"coordination.file": filepath.Join(t.TempDir(), "state")}}
	d, err := FactoryFor("dev").NewDriver(opts)
	require.NoError(t, err)
	_, err = d.Discover(context.Background(), 2)
	require.ErrorContains(t, err, "exit code 5; stderr: card busy")
	require.NoError(t, d.(driver.Releaser).Release(context.Background()))

	require.NoError(t, os.Remove(flagFile))
	d, err = FactoryFor("dev").NewDriver(opts)
	require.NoError(t, err)
	infos, err := d.Discover(context.Background(), 2)
	require.NoError(t, err)
	require.Len(t, infos, 2)
	require.NoError(t, d.(driver.Releaser).Release(context.Background()))
}

// Without param.timeout a plugin gets the global xres.discovery.timeout
// (driver.Options.Timeout).
func TestTimeoutFallsBackToGlobal(t *testing.T) {
	root := install(t, "", "dev", `sleep 30`)
	d, err := FactoryFor("dev").NewDriver(driver.Options{Resource: "dev", Timeout: 300 * time.Millisecond,
		Params: map[string]string{"coordination.enabled": "false"}, Getenv: env(EnvPluginsDir, root)})
	require.NoError(t, err)
	start := time.Now()
	_, err = d.Discover(context.Background(), 1)
	require.ErrorIs(t, err, ErrTimeout)
	require.ErrorContains(t, err, "timed out after 300ms")
	require.Less(t, time.Since(start), 10*time.Second)
}

// Reservations are host-wide: two plugins that number their devices 0, 1…
// do not block each other, but one device known by its UUID is reserved
// once, whichever resource name asks for it.
func TestIdentityScope(t *testing.T) {
	root := install(t, "", "cards", `echo '[{"index": "0"}]'`)
	install(t, root, "boards", `echo '[{"index": "0"}]'`)
	install(t, root, "gpus", `echo '[{"uuid": "GPU-1", "index": "0"}]'`)
	state := filepath.Join(t.TempDir(), "state")
	discover := func(resource, plugin string) error {
		d, err := FactoryFor(plugin).NewDriver(driver.Options{Resource: resource, Getenv: env(EnvPluginsDir, root),
			Params: map[string]string{"coordination.file": state}})
		require.NoError(t, err)
		_, err = d.Discover(context.Background(), 1)
		return err
	}
	require.NoError(t, discover("cards", "cards"))
	require.NoError(t, discover("boards", "boards"), "index 0 of another plugin is another device")
	require.NoError(t, discover("gpu", "gpus"))
	require.ErrorIs(t, discover("gpus", "gpus"), driver.ErrNotEnoughDevices, "GPU-1 is held under the name gpu")
}
