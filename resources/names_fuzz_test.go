package resources

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/conf"
)

// FuzzResourceNames: whatever external-resources lists, Parse never
// panics, and what it accepts are safe names (IsSafeName) whose
// XRES_RESOURCE_<NAME>_* variables are all distinct; an error never
// carries a control character.
func FuzzResourceNames(f *testing.F) {
	for _, s := range []string{"gpu", "gpu;fpga", "GPU;gpu", "gpu-a;gpu.a", "g pu", "a=b", "a,b", "gpu\x1b[31m", "'gpu';\"fpga\"", ";;", "none", "gpu;gpu"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, list string) {
		c := conf.New()
		c.Set(KeyList, list)
		for _, n := range strings.Split(list, ";") {
			c.Set(Key(strings.Trim(strings.TrimSpace(n), `'"`), SuffixAmount), "1")
		}
		specs, err := Parse(c, ParseOptions{})
		if err != nil {
			for _, r := range err.Error() {
				require.False(t, r < 0x20 || r == 0x7f, "control character in %q", err.Error())
			}
			return
		}
		seen := map[string]string{}
		for _, s := range specs {
			require.True(t, IsSafeName(s.Name), s.Name)
			tok := EnvToken(s.Name)
			_, dup := seen[tok]
			require.False(t, dup, "%q and %q", seen[tok], s.Name)
			seen[tok] = s.Name
		}
	})
}
