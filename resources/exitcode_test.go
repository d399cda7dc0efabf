package resources

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestLauncherExitBlame(t *testing.T) {
	all := append(BadNodeExitCodes(), BadJobExitCodes()...)
	require.ElementsMatch(t, []int{LauncherExitUsage, LauncherExitConfig, LauncherExitDiscovery, LauncherExitWorker, LauncherExitInternal, LauncherExitAssignment}, all,
		"every reserved launcher code but 0 blames exactly one of node and job")
	for _, tc := range []struct {
		code  int
		name  string
		blame Blame
	}{
		{0, "ok", BlameNone},
		{211, "config", BlameJob},
		{212, "discovery", BlameNode},
		{214, "internal", BlameNode},
		{215, "assignment", BlameNode},
		{1, "worker", BlameJob},
		{137, "worker", BlameJob},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := DescribeLauncherExit(tc.code)
			require.Equal(t, tc.name, d.Name)
			require.Equal(t, tc.blame, d.Blame)
			require.NotEmpty(t, d.Meaning)
		})
	}
}
