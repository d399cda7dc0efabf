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

// oneKey is an Info that is not a Properties map.
type oneKey struct{ k, v string }

func (o oneKey) Property(key string) (string, bool) { return o.v, key == o.k }
func (o oneKey) Keys() []string                     { return []string{o.k} }

func TestPropertiesOf(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []Info
		want []Properties
	}{
		{"nil list is an empty one", nil, []Properties{}},
		{"maps and other infos, in order",
			[]Info{Properties{"index": "1", "uuid": "GPU-b"}, oneKey{"index", "0"}},
			[]Properties{{"index": "1", "uuid": "GPU-b"}, {"index": "0"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := PropertiesOf(tc.in)
			require.Equal(t, tc.want, got)
			if len(tc.in) > 0 {
				got[0]["index"] = "changed"
				v, _ := tc.in[0].Property("index")
				require.Equal(t, "1", v, "the copy shares its map with the info")
			}
		})
	}
}
