package driver

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzParseDuration: the drivers' duration syntax (Flink's "10 s",
// "500 ms", a bare number of milliseconds, Go's "1m30s") never panics and
// never gives a negative duration; one written back in milliseconds, when
// whole, reads the same.
func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"10 s", "500 ms", "2 min", "10000", "1m30s", "1h-1s", "9223372036854775807 h", "4611686018427387904", "soon", " 3 S ", "1e3s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDuration(s)
		if err != nil {
			return
		}
		require.GreaterOrEqual(t, int64(d), int64(0), s)
		if ms := int64(d / 1e6); d%1e6 == 0 {
			back, err := ParseDuration(strconv.FormatInt(ms, 10) + " ms")
			require.NoError(t, err)
			require.Equal(t, d, back)
		}
	})
}
