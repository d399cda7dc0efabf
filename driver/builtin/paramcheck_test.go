package builtin_test

import (
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/driver"
	"github.com/xres/xres/driver/builtin"
	"github.com/xres/xres/resources/params"
)

// TestBuiltinsCheckTheirParams: every built-in factory (and a device
// plugin's) checks its params without the host (driver.ParamChecker), and
// NewDriver refuses what CheckParams refuses with the very same error, so
// that am submit, which runs CheckParams alone, refuses what every
// launcher refuses. What only a host decides (a script or plugin not
// installed) passes CheckParams and fails NewDriver as a problem of the
// host (builtin.DiagnoseNew). resources/params.Check, what am runs without
// the drivers, gives CheckParams's answer word for word.
func TestBuiltinsCheckTheirParams(t *testing.T) {
	r := driver.NewRegistry()
	require.NoError(t, builtin.RegisterBuiltins(r))
	reg := builtin.WithPlugins(r, func(string) string { return t.TempDir() })
	for _, name := range r.Names() {
		f, err := r.Lookup(name)
		require.NoError(t, err)
		_, ok := f.(driver.ParamChecker)
		require.True(t, ok, "%s implements driver.ParamChecker", name)
	}
	dir := t.TempDir()
	flink := filepath.Join(dir, "flink-coordination")
	script := filepath.Join(dir, "nosuch.sh")
	state := filepath.Join(dir, "state")

	tests := []struct {
		factory string
		params  map[string]string
		host    bool // refused by NewDriver only, as the host's
	}{
		{factory: "xres.pci", params: map[string]string{}},
		{factory: "xres.pci", params: map[string]string{"vendor": "Xilinx"}},
		{factory: "xres.pci", params: map[string]string{"vendor": "0x10ee", "device": "0x1ffff"}},
		{factory: "xres.pci", params: map[string]string{"vendor": "0x10ee", "class": "0x1234567"}},
		{factory: "xres.pci", params: map[string]string{"vendor": "0x10ee", "coordination.enabled": "yes"}},
		{factory: "xres.amd-gpu", params: map[string]string{"source": "opencl"}},
		{factory: "xres.amd-gpu", params: map[string]string{"timeout": "-5 s"}},
		{factory: "xres.gpu", params: map[string]string{"discovery-script.timeout": "soon"}},
		{factory: "xres.gpu", params: map[string]string{"discovery-script.args": "--coordination-file"}},
		{factory: "xres.gpu", params: map[string]string{"discovery-script.args": "--coordination-file " + flink, "coordination.file": flink}},
		{factory: "xres.gpu", params: map[string]string{"coordination.file": flink, "discovery-script.args": "--enable-coordination-mode --coordination-file=" + flink}},
		{factory: "xres.gpu", params: map[string]string{"discovery-script.path": script, "discovery-script.protocol": "slurm"}},
		{factory: "xres.gpu", params: map[string]string{"mig.strategy": "all"}},
		{factory: "xres.gpu", params: map[string]string{"mig.profile": "1g.10gb"}},
		{factory: "xres.gpu", params: map[string]string{"health.enabled": "mostly"}},
		{factory: "xres.gpu", params: map[string]string{"discovery.source": "cuda"}},
		{factory: "xres.gpu", params: map[string]string{"nvidia-smi.timeout": "0"}},
		{factory: "xres.plugin", params: map[string]string{}},
		{factory: "xres.plugin", params: map[string]string{"plugin": "x", "timeout": "forever"}},
		{factory: "plugin:a", params: map[string]string{"plugin": "b"}},
		{factory: "plugin:a", params: map[string]string{"coordination.enabled": "0"}},
		{factory: "plugin: ", params: map[string]string{}},

		{factory: "xres.gpu", params: map[string]string{"discovery-script.path": script}, host: true},
		{factory: "xres.plugin", params: map[string]string{"plugin": "nosuch"}, host: true},
		{factory: "plugin:nosuch", params: map[string]string{}, host: true},
	}
	for _, tc := range tests {
		t.Run(tc.factory+" "+describe(tc.params), func(t *testing.T) {
			if _, set := tc.params["coordination.file"]; !set {
				tc.params["coordination.file"] = state
			}
			f, err := reg.Lookup(tc.factory)
			require.NoError(t, err)
			checkErr := f.(driver.ParamChecker).CheckParams("acc", tc.params)
			// am's check, which links no driver (resources/params), is
			// the factory's own.
			known, amErr := params.Check(tc.factory, "acc", maps.Clone(tc.params))
			require.True(t, known, "resources/params knows %s", tc.factory)
			if checkErr == nil {
				require.NoError(t, amErr)
			} else {
				require.EqualError(t, amErr, checkErr.Error(), "am refuses it with the launcher's words")
			}
			_, newErr := f.NewDriver(driver.Options{Resource: "acc", Params: tc.params, Getenv: func(string) string { return dir }, DryRun: true})
			require.Error(t, newErr)
			if tc.host {
				require.NoError(t, checkErr, "the params are well-formed: only the host can tell")
				dg, ok := builtin.DiagnoseNew(newErr, nil)
				require.True(t, ok && dg.Host, "a problem of the host: %v", newErr)
				return
			}
			require.Error(t, checkErr)
			require.ErrorIs(t, checkErr, driver.ErrInvalidParam)
			require.Equal(t, checkErr.Error(), newErr.Error(), "NewDriver refuses it with CheckParams's error")
		})
	}
}

func describe(params map[string]string) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(params)) {
		parts = append(parts, k+"="+params[k])
	}
	return strings.Join(parts, " ")
}
