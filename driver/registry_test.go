package driver_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/driver"
	"github.com/xres/xres/driver/drivertest"
)

func TestRegistry(t *testing.T) {
	gpu := drivertest.New().Factory()
	fpga := drivertest.New().Factory()
	r := driver.NewRegistry()
	require.NoError(t, r.Register("xres.gpu", gpu, "org.apache.flink.externalresource.gpu.GPUDriverFactory"))
	require.NoError(t, r.Register("xres.fpga", fpga))

	tests := []struct {
		name    string
		lookup  string
		want    driver.Factory
		wantErr string
	}{
		{name: "primary name", lookup: "xres.gpu", want: gpu},
		{name: "flink class alias", lookup: "org.apache.flink.externalresource.gpu.GPUDriverFactory", want: gpu},
		{name: "other", lookup: "xres.fpga", want: fpga},
		{name: "unknown lists known names", lookup: "com.example.Nope",
			wantErr: `look up driver factory "com.example.Nope": unknown driver factory (known: org.apache.flink.externalresource.gpu.GPUDriverFactory, xres.fpga, xres.gpu)`},
		{name: "case-sensitive", lookup: "XRES.GPU", wantErr: "unknown driver factory"},
		{name: "empty", lookup: "", wantErr: "unknown driver factory"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := r.Lookup(tc.lookup)
			if tc.wantErr != "" {
				require.ErrorIs(t, err, driver.ErrUnknownFactory)
				require.Contains(t, err.Error(), tc.wantErr)
				return
			}
			require.NoError(t, err)
			d1, err := f.NewDriver(driver.Options{})
			require.NoError(t, err)
			d2, err := tc.want.NewDriver(driver.Options{})
			require.NoError(t, err)
			require.Same(t, d1, d2, "the registered factory is returned")
		})
	}
	canon, ok := r.Canonical("org.apache.flink.externalresource.gpu.GPUDriverFactory")
	require.True(t, ok)
	require.Equal(t, "xres.gpu", canon)
}

func TestRegistryRejects(t *testing.T) {
	f := drivertest.New().Factory()
	tests := []struct {
		name    string
		reg     func(r *driver.Registry) error
		errIs   error
		wantErr string
	}{
		{name: "duplicate name", reg: func(r *driver.Registry) error { return r.Register("xres.gpu", f) }, errIs: driver.ErrDuplicateFactory},
		{name: "alias clashes with a name", reg: func(r *driver.Registry) error { return r.Register("other", f, "xres.gpu") }, errIs: driver.ErrDuplicateFactory},
		{name: "alias repeated", reg: func(r *driver.Registry) error { return r.Register("other", f, "x", "x") }, errIs: driver.ErrDuplicateFactory},
		{name: "empty name", reg: func(r *driver.Registry) error { return r.Register(" ", f) }, wantErr: "empty name"},
		{name: "nil factory", reg: func(r *driver.Registry) error { return r.Register("other", nil) }, wantErr: "nil factory"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := driver.NewRegistry()
			require.NoError(t, r.Register("xres.gpu", f))
			err := tc.reg(r)
			require.Error(t, err)
			if tc.errIs != nil {
				require.ErrorIs(t, err, tc.errIs)
			}
			require.Contains(t, err.Error(), tc.wantErr)
			require.Equal(t, []string{"xres.gpu"}, r.Names(), "a failed registration registers nothing")
		})
	}
}
