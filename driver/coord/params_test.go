package coord_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/driver"
	"github.com/xres/xres/driver/coord"
	"github.com/xres/xres/driver/drivertest"
)

func TestParseParams(t *testing.T) {
	tests := []struct {
		name     string
		params   map[string]string
		want     coord.Settings // Warnings compared by count
		warnings int
		errHas   string
	}{
		{name: "default: on, default file", want: coord.Settings{Enabled: true, StateFile: coord.DefaultStateFile}},
		{name: "our file", params: map[string]string{"coordination.file": "/tmp/x/state"},
			want: coord.Settings{Enabled: true, StateFile: "/tmp/x/state"}},
		{name: "Flink's file is honoured beside ours", params: map[string]string{"discovery-script.args": "--enable-coordination-mode --coordination-file /tmp/f"},
			want: coord.Settings{Enabled: true, StateFile: coord.DefaultStateFile, FlinkFile: "/tmp/f", Flink: coord.FlinkArgs{Enabled: true, File: "/tmp/f"}}},
		{name: "both files: each its own format", params: map[string]string{"coordination.file": "/tmp/a", "discovery-script.args": "--coordination-file=/tmp/b"},
			want: coord.Settings{Enabled: true, StateFile: "/tmp/a", FlinkFile: "/tmp/b", Flink: coord.FlinkArgs{File: "/tmp/b"}}},
		{name: "one file for both formats", params: map[string]string{"coordination.file": "/tmp/a", "discovery-script.args": "--coordination-file /tmp/a"},
			errHas: "external-resource.fpga.param.coordination.file is Flink's coordination file"},
		{name: "off", params: map[string]string{"coordination.enabled": "False"}, want: coord.Settings{}},
		{name: "off, but Flink's flag switches it on", params: map[string]string{"coordination.enabled": "false", "discovery-script.args": "--enable-coordination-mode"},
			want: coord.Settings{Enabled: true, StateFile: coord.DefaultStateFile, FlinkFile: coord.FlinkDefaultFile, Flink: coord.FlinkArgs{Enabled: true}}, warnings: 1},
		{name: "the docs' misspelt flag", params: map[string]string{"discovery-script.args": "--enable-coordination"},
			want: coord.Settings{Enabled: true, StateFile: coord.DefaultStateFile}, warnings: 1},
		// Issue 41: under YARN every container has its own working folder,
		// so a relative file coordinates nothing.
		{name: "relative file refused", params: map[string]string{"coordination.file": "state"},
			errHas: `external-resource.fpga.param.coordination.file: "state" is a relative path: every container has a working folder of its own, so launchers would not coordinate at all; name an absolute host path`},
		{name: "relative Flink file refused", params: map[string]string{"discovery-script.args": "--coordination-file flink-coord"},
			errHas: `external-resource.fpga.param.discovery-script.args: --coordination-file "flink-coord" is a relative path`},
		{name: "bad flag", params: map[string]string{"coordination.enabled": "yes"}, errHas: `external-resource.fpga.param.coordination.enabled: "yes", want true or false`},
		{name: "file flag without a file", params: map[string]string{"discovery-script.args": "--coordination-file"},
			errHas: "external-resource.fpga.param.discovery-script.args: --coordination-file needs a file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := coord.ParseParams("fpga", tc.params)
			if tc.errHas != "" {
				require.ErrorIs(t, err, driver.ErrInvalidParam)
				require.ErrorContains(t, err, tc.errHas)
				return
			}
			require.NoError(t, err)
			require.Len(t, got.Warnings, tc.warnings, "%v", got.Warnings)
			got.Warnings, got.Flink.Warnings = nil, nil
			require.Equal(t, tc.want, got)
		})
	}
}

func TestNewCoordinated(t *testing.T) {
	ctx := context.Background()
	enum := drivertest.New(drivertest.Devices(drivertest.GPUs(2)...))
	state := filepath.Join(t.TempDir(), "state")
	params := map[string]string{"coordination.file": state}

	a, err := coord.NewCoordinated(driver.Options{Resource: "gpu", Params: params}, enum)
	require.NoError(t, err)
	b, err := coord.NewCoordinated(driver.Options{Resource: "gpu", Params: params}, enum)
	require.NoError(t, err)
	first, err := a.Discover(ctx, 1)
	require.NoError(t, err)
	second, err := b.Discover(ctx, 1)
	require.NoError(t, err)
	// Both drivers run in this process, so they share one owner: the point
	// is that the state file is used (a third device is not there).
	require.Len(t, append(first, second...), 2)
	require.NoError(t, a.Release(ctx))

	off, err := coord.NewCoordinated(driver.Options{Resource: "gpu", Params: map[string]string{"coordination.enabled": "false"}}, enum)
	require.NoError(t, err)
	for i := 0; i < 2; i++ {
		got, err := off.Discover(ctx, 2)
		require.NoError(t, err)
		require.Len(t, got, 2, "off: every caller gets the first devices")
	}

	_, err = coord.NewCoordinated(driver.Options{Resource: "gpu", Params: map[string]string{"coordination.enabled": "maybe"}}, enum)
	require.ErrorIs(t, err, driver.ErrInvalidParam)
}
