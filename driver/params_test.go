package driver_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/conf"
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
			got, err := driver.TimeoutParam.Timeout(o.Resource, o.Params, o.Timeout)
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

func TestParamReaders(t *testing.T) {
	b := driver.Param{Name: "b", Type: conf.TypeBool, Default: "true", Doc: "d"}
	c := driver.Param{Name: "c", Values: []string{"auto", "kfd"}, Doc: "d"}
	s := driver.Param{Name: "s", Default: "def", Doc: "d"}
	for _, tc := range []struct {
		name   string
		params map[string]string
		read   func(map[string]string) (any, error)
		want   any
		errHas string
	}{
		{"bool set", map[string]string{"b": " FALSE "}, func(m map[string]string) (any, error) { return b.Bool("fpga", m) }, false, ""},
		{"bool default", nil, func(m map[string]string) (any, error) { return b.Bool("fpga", m) }, true, ""},
		{"bool blank is default", map[string]string{"b": "  "}, func(m map[string]string) (any, error) { return b.Bool("fpga", m) }, true, ""},
		{"bool bad", map[string]string{"b": "yes"}, func(m map[string]string) (any, error) { return b.Bool("fpga", m) }, nil,
			`external-resource.fpga.param.b: "yes", want true or false`},
		{"choice case-insensitive", map[string]string{"c": "KFD"}, func(m map[string]string) (any, error) { return c.Choice("gpu", m) }, "kfd", ""},
		{"choice default is first", nil, func(m map[string]string) (any, error) { return c.Choice("gpu", m) }, "auto", ""},
		{"choice bad", map[string]string{"c": "smi"}, func(m map[string]string) (any, error) { return c.Choice("gpu", m) }, nil,
			`external-resource.gpu.param.c: "smi", want auto, kfd`},
		{"string trimmed", map[string]string{"s": " x "}, func(m map[string]string) (any, error) { return s.Get(m), nil }, "x", ""},
		{"string default", map[string]string{"s": ""}, func(m map[string]string) (any, error) { return s.Get(m), nil }, "def", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.read(tc.params)
			if tc.errHas != "" {
				require.ErrorIs(t, err, driver.ErrInvalidParam)
				require.ErrorContains(t, err, tc.errHas)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
	_, ok := s.Lookup(map[string]string{"s": " "})
	require.False(t, ok, "blank is unset")
	require.Equal(t, "param.x", driver.ParamKey("", "x"))
}

func TestParamOption(t *testing.T) {
	o := driver.Param{Name: "mode", Type: conf.TypeString, Values: []string{"a", "b"}, Doc: "Mode."}.Option()
	require.Equal(t, "external-resource.<name>.param.mode", o.Key)
	require.Equal(t, "a", o.Default)
	require.Equal(t, "Mode.", o.Description)
	got, ok := conf.LookupOption("external-resource.gpu.param.timeout")
	require.True(t, ok, "driver.TimeoutParam is in conf's registry")
	require.Equal(t, driver.TimeoutParam.Option(), got)
}

// A param's key is conf.ExternalResourceParam's pattern filled in, spelled
// without the pattern's regular expression (Declare runs at start).
func TestParamOptionKey(t *testing.T) {
	for _, name := range []string{"mode", "discovery-script.path", "a.b.c"} {
		p := driver.Param{Name: name, Type: conf.TypeString}
		require.Equal(t, conf.ExternalResourceParam.For("<name>", name).Key, p.Option().Key)
	}
}
