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
	quarantineAsGoneLauncher(t, h.state, gpu0, coord.Quarantine{Reason: "Xid 48 (double-bit ECC error)", Event: "xid", XID: 48})

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

// The discovery bridge (Spark's executor, Flink's TaskManager) never gets
// a quarantined GPU: the first caller gets the other one, the second none,
// and the error names the quarantine.
func TestBridgeNeverGetsQuarantinedGPU(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	h := newFakeGPUHost(t, 2, 1)
	link, _ := bridgeOn(t, h)
	gpu0 := "GPU-00000000-0000-4000-8000-000000000000"
	quarantineAsGoneLauncher(t, h.state, gpu0, coord.Quarantine{Reason: "Xid 95 (uncontained ECC error)", Event: "xid", XID: 95})

	for _, protocol := range []string{"spark", "flink"} {
		var amount []string
		if protocol == "flink" {
			amount = []string{"1"}
		}
		a := startCaller(t, h, protocol, link, amount...)
		ra := a.result(t)
		require.Equal(t, 0, ra.code, "%s: %s", protocol, ra.stderr)
		require.NotContains(t, ra.stdout, `"0"`, "%s: GPU 0 is quarantined", protocol)
		require.Contains(t, ra.stdout, "1", protocol)
		b := startCaller(t, h, protocol, link, amount...)
		rb := b.result(t)
		require.Equal(t, ExitDiscovery, rb.code, "%s: %s", protocol, rb.stdout)
		require.Contains(t, rb.stderr, gpu0+" held by a quarantine since", protocol)
		require.Contains(t, rb.stderr, "Xid 95 (uncontained ECC error)", protocol)
		a.end()
		b.end()
	}
}

// quarantineAsGoneLauncher records a quarantine as a launcher that has
// exited since does.
func quarantineAsGoneLauncher(t *testing.T, state, key string, q coord.Quarantine) {
	t.Helper()
	cmd := exec.Command("sleep", "60")
	require.NoError(t, cmd.Start())
	owner, err := coord.ProcessOwner(cmd.Process.Pid)
	require.NoError(t, err)
	st, err := coord.New(coord.Options{StateFile: state, Owner: owner})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, st.QuarantineDevice(ctx, "gpu", key, q))
	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
}
