package launch

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzParseFlinkHolders: any content of a Flink coordination file gives
// holders with a device and a positive pid, or an error naming file:line.
func FuzzParseFlinkHolders(f *testing.F) {
	for _, seed := range []string{
		"0 4711\n1 4712\n",
		"",
		"\n\n",
		"0 4711\n11 abc\n",
		"0\n",
		"0 1 2\n",
		"0 -5\n",
		"  3   99  \r\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		holders, err := parseFlinkHolders("coord", data, func(pid int) bool { return pid%2 == 0 })
		if err != nil {
			require.Contains(t, err.Error(), "coord:")
		}
		for _, h := range holders {
			require.NotEmpty(t, h.Device)
			require.Positive(t, h.PID)
			require.Equal(t, h.PID%2 == 0, h.Alive)
		}
	})
}

func TestParseFlinkHoldersErrors(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "flink")
	require.NoError(t, os.WriteFile(p, []byte("0 1\nbroken line here\n"), 0o644))
	_, err := readFlinkHolders(p)
	require.ErrorContains(t, err, p+":2")
	hs, err := readFlinkHolders(filepath.Join(dir, "absent"))
	require.NoError(t, err)
	require.Empty(t, hs)
}
