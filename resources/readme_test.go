package resources

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// readmeTable returns the rows of the markdown table under header in the
// file at path (header row and separator left out), each cell trimmed and
// without markdown emphasis and code marks (* and `).
func readmeTable(t *testing.T, path, header string) [][]string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	lines := strings.Split(string(b), "\n")
	for i, l := range lines {
		if strings.TrimSpace(l) != header {
			continue
		}
		var rows [][]string
		for _, r := range lines[i+2:] {
			r = strings.TrimSpace(r)
			if !strings.HasPrefix(r, "|") {
				break
			}
			var cells []string
			for _, c := range strings.Split(strings.Trim(r, "|"), "|") {
				cells = append(cells, strings.TrimSpace(strings.NewReplacer("`", "", "*", "").Replace(c)))
			}
			rows = append(rows, cells)
		}
		return rows
	}
	t.Fatalf("%s has no table %q", path, header)
	return nil
}

// TestReadmeLauncherExitCodes: the launcher's exit-code tables in the
// README and in cmd/container-launcher/README.md are LauncherExits (and
// LauncherWorkerExit for the worker's own code, N), both ways: every code
// with its meaning and blame, and nothing else.
func TestReadmeLauncherExitCodes(t *testing.T) {
	for _, path := range []string{"../README.md", "../cmd/container-launcher/README.md"} {
		t.Run(path, func(t *testing.T) {
			rows := readmeTable(t, path, "| exit code | meaning | blame |")
			want := map[string][2]string{"N": {LauncherWorkerExit.Meaning, LauncherWorkerExit.Blame.String()}}
			for _, e := range LauncherExits {
				want[strconv.Itoa(e.Code)] = [2]string{e.Meaning, e.Blame.String()}
			}
			got := map[string][2]string{}
			for _, r := range rows {
				require.Len(t, r, 3, "row %q", r)
				_, dup := got[r[0]]
				require.False(t, dup, "code %s listed twice", r[0])
				got[r[0]] = [2]string{r[1], r[2]}
			}
			require.Equal(t, want, got, "the table is resources.LauncherExits (meaning, blame); fix the one that is wrong")
		})
	}
}
