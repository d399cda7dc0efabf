package amplan

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/yarn/amstatus"
)

func TestIdleRule(t *testing.T) {
	r, err := IdleRule(confOf(nil))
	require.NoError(t, err)
	require.Equal(t, amstatus.IdleRule{Threshold: 5, Window: 10 * time.Minute}, r, "the declared defaults")
	r, err = IdleRule(confOf(map[string]string{"xres.metrics.idle-threshold": "12.5", "xres.metrics.idle-window": "90 s"}))
	require.NoError(t, err)
	require.Equal(t, amstatus.IdleRule{Threshold: 12.5, Window: 90 * time.Second}, r)
	for _, bad := range []map[string]string{
		{"xres.metrics.idle-threshold": "150"},
		{"xres.metrics.idle-threshold": "0"},
		{"xres.metrics.idle-threshold": "lots"},
		{"xres.metrics.idle-window": "0 s"},
		{"xres.metrics.idle-window": "soon"},
	} {
		_, err := IdleRule(confOf(bad))
		require.ErrorIs(t, err, ErrBadConfig, "%v", bad)
		for k := range bad {
			require.Contains(t, err.Error(), k, "the error names the key")
		}
	}
}
