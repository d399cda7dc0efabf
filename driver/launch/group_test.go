package launch

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/conf"
)

// TestWorkerGroupView: in a container of worker group trainer
// (XRES_WORKER_GROUP, set by the AM), the launcher discovers what the
// group's keys say; a name the configuration does not list is a
// configuration error naming the variable.
func TestWorkerGroupView(t *testing.T) {
	args := []string{"--conf", "testdata/conf/ok",
		"-D", "xres.worker-groups=trainer;prep",
		"-D", "xres.worker-group.trainer.external-resource.gpu.amount=3"}
	run := func(group string) (runResult, string) {
		h := newFakeHost()
		h.devices["gpu"] = 4
		out := filepath.Join(t.TempDir(), "amount")
		a := append(append([]string{}, args...), "--", "sh", "-c", `printf %s "$XRES_RESOURCE_GPU_AMOUNT" > "$1"`, "worker", out)
		r := runMainEnv(t, h, LoadConfig, nil, map[string]string{conf.EnvWorkerGroup: group}, a...)
		got, _ := os.ReadFile(out)
		return r, string(got)
	}
	r, amount := run("trainer")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "3", amount, "the group's amount")
	r, amount = run("prep")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "1", amount, "the plain amount")
	r, _ = run("")
	require.Equal(t, 0, r.code, r.stderr)

	r, _ = run("trainr")
	require.Equal(t, ExitConfig, r.code)
	require.Contains(t, r.stderr, "XRES_WORKER_GROUP=trainr names no group of xres.worker-groups (trainer;prep)")
}
