package launch

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/driver/coord"
)

// A quarantined GPU: probe shows it with its reason and would not hand it
// out; probe --clear ends the quarantine and it is handed out again; a
// second --clear is a usage error naming the device.
func TestProbeShowsAndClearsQuarantine(t *testing.T) {
	bin := launcherBinary(t)
	h := newFakeGPUHost(t, 2, 1)
	gpu0, gpu1 := "GPU-00000000-0000-4000-8000-000000000000", "GPU-00000000-0000-4000-8000-000000000001"
	st, err := coord.OpenState(h.state, nil)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, st.QuarantineDevice(ctx, "gpu", gpu0, coord.Quarantine{Reason: "Xid 48 (double-bit ECC error)", Event: "xid", XID: 48}))

	rep := h.probe(t, bin)
	require.Len(t, rep.Resources, 1)
	r := rep.Resources[0]
	require.Empty(t, r.Error)
	require.Len(t, r.Devices, 1)
	require.Equal(t, gpu1, r.Devices[0]["uuid"], "the quarantined GPU is not what a launcher would get")
	require.Empty(t, r.Coordination.Holders, "a quarantine is no holder")
	require.Len(t, r.Coordination.Quarantined, 1)
	require.Equal(t, gpu0, r.Coordination.Quarantined[0].Device)
	require.Equal(t, uint64(48), r.Coordination.Quarantined[0].XID)

	text, err := h.command(bin, "probe", "--conf", h.conf).CombinedOutput()
	require.NoError(t, err, "%s", text)
	require.Contains(t, string(text), gpu0+" QUARANTINED since ")
	require.Contains(t, string(text), "Xid 48 (double-bit ECC error)")

	out, err := h.command(bin, "probe", "--conf", h.conf, "--clear", gpu0).CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), gpu0+": quarantine cleared")
	rep = h.probe(t, bin)
	require.Equal(t, gpu0, rep.Resources[0].Devices[0]["uuid"], "cleared: the first GPU again")
	require.Empty(t, rep.Resources[0].Coordination.Quarantined)

	out, err = h.command(bin, "probe", "--conf", h.conf, "--clear", gpu0).CombinedOutput()
	var exit *exec.ExitError
	require.True(t, errors.As(err, &exit), "%v: %s", err, out)
	require.Equal(t, ExitUsage, exit.ExitCode())
	require.True(t, strings.Contains(string(out), "probe --clear "+gpu0+": no state file"), "%s", out)
}
