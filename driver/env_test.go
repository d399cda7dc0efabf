package driver

import (
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

func TestEnvToken(t *testing.T) {
	tests := []struct{ in, want string }{
		{"gpu", "GPU"},
		{"pci.bus-id", "PCI_BUS_ID"},
		{"memory.total", "MEMORY_TOTAL"},
		{"my fpga2", "MY_FPGA2"},
		{"sysfs-root", "SYSFS_ROOT"},
		{"ü", "_"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			require.Equal(t, tc.want, EnvToken(tc.in))
		})
	}
}

// FuzzEnvToken: the token is always a valid environment-name part of the
// same length in runes.
func FuzzEnvToken(f *testing.F) {
	for _, seed := range []string{"gpu", "pci.bus-id", "my fpga2", "ü", "", "GPU_0"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tok := EnvToken(s)
		require.Equal(t, utf8.RuneCountInString(s), len(tok), "one character per rune (an invalid byte is one)")
		for _, r := range tok {
			require.True(t, r == '_' || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9'), "%q in %q", r, tok)
		}
	})
}
