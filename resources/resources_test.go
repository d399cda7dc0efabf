package resources

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPropertiesClone(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   Properties
	}{
		{"nil", nil},
		{"empty", Properties{}},
		{"device", Properties{"index": "0", "uuid": "GPU-1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.in.Clone()
			require.NotNil(t, c)
			require.Len(t, c, len(tc.in))
			for k, v := range tc.in {
				require.Equal(t, v, c[k])
			}
			c["index"] = "changed"
			if tc.in != nil {
				_, had := tc.in["index"]
				require.True(t, !had || tc.in["index"] != "changed", "the clone shares its map with the original")
			}
		})
	}
}
