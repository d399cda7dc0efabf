package driver_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/driver"
)

func TestTimeoutParam(t *testing.T) {
	tests := []struct {
		name   string
		param  string
		global time.Duration
		want   time.Duration
		errHas string
	}{
		{name: "default", want: driver.DefaultTimeout},
		{name: "global option", global: 30 * time.Second, want: 30 * time.Second},
		{name: "param wins", param: "500 ms", global: 30 * time.Second, want: 500 * time.Millisecond},
		{name: "bare milliseconds", param: "2500", want: 2500 * time.Millisecond},
		{name: "go syntax", param: "1m30s", want: 90 * time.Second},
		{name: "not a duration", param: "soon", errHas: `external-resource.gpu.param.timeout: "soon" is not a duration`},
		{name: "zero", param: "0 s", errHas: `external-resource.gpu.param.timeout: "0 s" must be positive`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := driver.Options{Resource: "gpu", Params: map[string]string{"timeout": tc.param}, Timeout: tc.global}
			got, err := o.TimeoutParam("timeout")
			if tc.errHas != "" {
				require.ErrorIs(t, err, driver.ErrInvalidParam)
				require.ErrorContains(t, err, tc.errHas)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestBoolParam(t *testing.T) {
	p := map[string]string{"a": " TRUE ", "b": "false", "c": "yes"}
	v, err := driver.BoolParam("fpga", p, "a", false)
	require.NoError(t, err)
	require.True(t, v)
	v, err = driver.BoolParam("fpga", p, "b", true)
	require.NoError(t, err)
	require.False(t, v)
	v, err = driver.BoolParam("fpga", p, "unset", true)
	require.NoError(t, err)
	require.True(t, v)
	_, err = driver.BoolParam("fpga", p, "c", true)
	require.ErrorIs(t, err, driver.ErrInvalidParam)
	require.ErrorContains(t, err, `external-resource.fpga.param.c: "yes", want true or false`)
	require.Equal(t, "param.x", driver.ParamKey("", "x"))
}
