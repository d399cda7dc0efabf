package gpu

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/driver/coord"
)

func TestCoordinationOf(t *testing.T) {
	home := t.TempDir()
	script := writeScript(t, home, "discover.sh", "echo 0\n")
	require.NoError(t, os.MkdirAll(filepath.Join(home, "plugins", "external-resource-gpu"), 0o755))
	getenv := func(k string) string {
		if k == "FLINK_HOME" {
			return home
		}
		return ""
	}
	tests := []struct {
		name     string
		params   map[string]string
		want     Coordination
		warnings int
		errIs    error
	}{
		{name: "default: xres coordination", params: nil,
			want: Coordination{Mode: CoordXres, StateFile: coord.DefaultStateFile}},
		{name: "coordination.file", params: map[string]string{ParamCoordFile: "/tmp/x/state"},
			want: Coordination{Mode: CoordXres, StateFile: "/tmp/x/state"}},
		{name: "flink's --coordination-file", params: map[string]string{ParamScriptArgs: "--enable-coordination-mode --coordination-file /tmp/f"},
			want: Coordination{Mode: CoordXres, StateFile: coord.DefaultStateFile, FlinkFile: "/tmp/f"}},
		{name: "both files: each its own format", params: map[string]string{ParamCoordFile: "/tmp/a", ParamScriptArgs: "--coordination-file=/tmp/b"},
			want: Coordination{Mode: CoordXres, StateFile: "/tmp/a", FlinkFile: "/tmp/b"}},
		{name: "one file for both formats", params: map[string]string{ParamCoordFile: "/tmp/a", ParamScriptArgs: "--coordination-file=/tmp/a"}, errIs: ErrInvalidParam},
		{name: "off", params: map[string]string{ParamCoordEnabled: "FALSE"},
			want: Coordination{Mode: CoordOff}},
		{name: "off, but flink's flag wins", params: map[string]string{ParamCoordEnabled: "false", ParamScriptArgs: "--enable-coordination-mode"},
			want: Coordination{Mode: CoordXres, StateFile: coord.DefaultStateFile, FlinkFile: FlinkDefaultCoordinationFile}, warnings: 1},
		{name: "the docs' misspelt flag is reported", params: map[string]string{ParamScriptArgs: "--enable-coordination"},
			want: Coordination{Mode: CoordXres, StateFile: coord.DefaultStateFile}, warnings: 1},
		{name: "script without coordination", params: map[string]string{ParamScriptPath: script},
			want: Coordination{Mode: CoordOff, Script: script}},
		{name: "script coordinating itself", params: map[string]string{ParamScriptPath: script, ParamScriptArgs: "--enable-coordination-mode"},
			want: Coordination{Mode: CoordScript, Script: script, StateFile: FlinkDefaultCoordinationFile}},
		{name: "flink's default script not installed: built-in", params: map[string]string{ParamScriptPath: FlinkDefaultScript},
			want: Coordination{Mode: CoordXres, StateFile: coord.DefaultStateFile}, warnings: 1},
		{name: "bad flag value", params: map[string]string{ParamCoordEnabled: "maybe"}, errIs: ErrInvalidParam},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := CoordinationOf("gpu", tc.params, getenv)
			if tc.errIs != nil {
				require.ErrorIs(t, err, tc.errIs)
				return
			}
			require.NoError(t, err)
			require.Len(t, got.Warnings, tc.warnings, "%v", got.Warnings)
			got.Warnings = nil
			require.Equal(t, tc.want, got)
		})
	}
}
