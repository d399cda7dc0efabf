package gpu

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/driver"
)

// FuzzFlinkScriptArgs: reading Flink's discovery-script.args
// (--enable-coordination-mode, --coordination-file F, =F) with
// coordination.enabled never panics; a bad combination is an invalid
// param; a mode is always one of the three, with a state file exactly
// when someone coordinates.
func FuzzFlinkScriptArgs(f *testing.F) {
	for _, s := range []string{"", "--enable-coordination-mode", "--enable-coordination-mode --coordination-file /tmp/f",
		"--coordination-file", "--coordination-file=/x", "--enable-coordination", "null --a b", "--coordination-file rel"} {
		f.Add(s, "")
		f.Add(s, "true")
	}
	f.Add("--coordination-file /tmp/s", "false")
	script := filepath.Join(f.TempDir(), "d.sh")
	require.NoError(f, os.WriteFile(script, []byte("#!/bin/sh\necho 0\n"), 0o755))
	f.Fuzz(func(t *testing.T, args, enabled string) {
		params := map[string]string{ParamScriptPath: script, ParamScriptArgs: args, ParamCoordEnabled: enabled, ParamCoordFile: "/tmp/xres-fuzz-state"}
		c, err := CoordinationOf("gpu", params, nil)
		if err != nil {
			require.True(t, errors.Is(err, driver.ErrInvalidParam), err.Error())
			return
		}
		switch c.Mode {
		case CoordOff:
			require.Empty(t, c.StateFile)
		case CoordXres, CoordScript:
			require.True(t, filepath.IsAbs(c.StateFile), c.StateFile)
		default:
			t.Fatalf("mode %q", c.Mode)
		}
		if c.Mode == CoordScript {
			require.Contains(t, strings.Fields(args), "--enable-coordination-mode")
		}
	})
}

// FuzzNVIDIADevice: what may reach CUDA_VISIBLE_DEVICES from a script is
// a canonical index, gpu:instance or a uuid: never a separator, blank,
// path step or sign.
func FuzzNVIDIADevice(f *testing.F) {
	for _, s := range []string{"0", "12", "00", "0x1", "0.0", "-1", "a", "0:1", "GPU-8c1d2a3b-0000-1111-2222-33334444aaaa",
		"MIG-GPU-8c1d2a3b-0000-1111-2222-33334444aaaa/1/0", "GPU-../../etc", "12345678901234567890", "1,2", " 1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if checkNVIDIADevice(s) != nil {
			return
		}
		require.NotEmpty(t, s)
		require.False(t, strings.ContainsAny(s, ", \t\n+.\\"), s)
		require.NotContains(t, s, "..")
		require.LessOrEqual(t, len(s), len("MIG-GPU-")+36+12)
		if strings.Contains(s, "/") {
			require.True(t, strings.HasPrefix(s, "MIG-GPU-"), s)
		}
	})
}
