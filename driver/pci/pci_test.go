package pci

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/driver/drivertest"

	"github.com/xres/xres/driver"
	"github.com/xres/xres/resources"
)

// twoFPGAs is a host with two Xilinx Alveo U250 cards (each a management
// function 0x5004 and a user function 0x5005, class 0x120000), a Xilinx
// development board of another class (0x058000, NUMA node -1), an Intel
// NIC, an NVIDIA GPU and PCIe bridges.
const twoFPGAs = "testdata/two-fpgas/sys"

func addresses(devs []driver.Device) []string {
	out := make([]string, len(devs))
	for i, d := range devs {
		out[i] = d.Key
	}
	return out
}

func TestEnumerateTwoFPGAs(t *testing.T) {
	tests := []struct {
		name   string
		params map[string]string
		want   []string
	}{
		{"vendor only takes every Xilinx function", map[string]string{"vendor": "0x10ee"},
			[]string{"0000:3b:00.0", "0000:3b:00.1", "0000:af:00.0", "0000:d8:00.0", "0000:d8:00.1"}},
		{"class prefix keeps processing accelerators", map[string]string{"vendor": "0x10ee", "class": "0x12"},
			[]string{"0000:3b:00.0", "0000:3b:00.1", "0000:d8:00.0", "0000:d8:00.1"}},
		{"device id picks the user functions", map[string]string{"vendor": "0x10ee", "device": "0x5005"},
			[]string{"0000:3b:00.1", "0000:d8:00.1"}},
		{"ids without 0x and in upper case", map[string]string{"vendor": "10EE", "device": "5005", "class": "1200"},
			[]string{"0000:3b:00.1", "0000:d8:00.1"}},
		{"lists of vendors and classes", map[string]string{"vendor": "0x1172, 0x10ee", "class": "0x0580,0x0302"},
			[]string{"0000:af:00.0"}},
		{"full class code", map[string]string{"vendor": "0x8086", "class": "0x020000"},
			[]string{"0000:18:00.0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.params["sysfs-root"] = twoFPGAs
			e, err := New(driver.Options{Resource: "fpga", Params: tt.params})
			require.NoError(t, err)
			devs, err := e.Enumerate(context.Background())
			require.NoError(t, err)
			require.Equal(t, tt.want, addresses(devs))
			for i, d := range devs {
				require.Equal(t, d.Key, d.Info["address"])
				require.Equal(t, d.Key, d.Info["pci"])
				require.Equal(t, strconv.Itoa(i), d.Info["index"])
			}
		})
	}
}

func TestEnumerateInfos(t *testing.T) {
	e, err := New(driver.Options{Resource: "fpga", Params: map[string]string{
		"vendor": "0x10ee", "sysfs-root": twoFPGAs,
	}})
	require.NoError(t, err)
	devs, err := e.Enumerate(context.Background())
	require.NoError(t, err)
	require.Equal(t, resources.Properties{
		"index": "1", "address": "0000:3b:00.1", "pci": "0000:3b:00.1",
		"vendor": "0x10ee", "device": "0x5005", "class": "0x120000",
		"numa-node": "0", "local-cpus": "0-15,32-47", "driver": "xocl",
		"render-node": "/dev/dri/renderD128",
	}, devs[1].Info)
	require.Equal(t, resources.Properties{
		"index": "2", "address": "0000:af:00.0", "pci": "0000:af:00.0",
		"vendor": "0x10ee", "device": "0x7038", "class": "0x058000",
		"local-cpus": "0-63",
	}, devs[2].Info, "numa_node -1 and no bound driver leave those infos out")
	require.Equal(t, resources.Properties{
		"index": "4", "address": "0000:d8:00.1", "pci": "0000:d8:00.1",
		"vendor": "0x10ee", "device": "0x5005", "class": "0x120000",
		"numa-node": "1", "local-cpus": "16-31,48-63", "driver": "xocl",
		"render-node": "/dev/dri/renderD129",
	}, devs[4].Info)
	require.Equal(t, "0x5004", devs[0].Info["device"])
	_, ok := devs[0].Info["render-node"]
	require.False(t, ok, "management functions have no render node")
}

func TestVendorWithNoDevices(t *testing.T) {
	for _, params := range []map[string]string{
		{"vendor": "0x1172"},                     // Altera: not on this host
		{"vendor": "0x10ee", "device": "0x500c"}, // Xilinx, but another card
		{"vendor": "0x10ee", "class": "0x03"},    // Xilinx, but no display class
	} {
		params["sysfs-root"] = twoFPGAs
		e, err := New(driver.Options{Resource: "fpga", Params: params})
		require.NoError(t, err)
		devs, err := e.Enumerate(context.Background())
		require.ErrorIs(t, err, driver.ErrNotEnoughDevices)
		require.ErrorContains(t, err, "13 functions under "+filepath.Join(twoFPGAs, DevicesDir))
		require.Empty(t, devs)
	}
}

func TestParamErrors(t *testing.T) {
	tests := []struct {
		name   string
		params map[string]string
		want   string
	}{
		{"missing vendor", map[string]string{}, "external-resource.fpga.param.vendor: missing"},
		{"blank vendor", map[string]string{"vendor": "  "}, "external-resource.fpga.param.vendor: missing"},
		{"vendor not hex", map[string]string{"vendor": "0xzz10"}, `external-resource.fpga.param.vendor: "0xzz10" is not a 16-bit hex number`},
		{"vendor too wide", map[string]string{"vendor": "0x10eee"}, `param.vendor: "0x10eee" is not a 16-bit hex number`},
		{"empty list element", map[string]string{"vendor": "0x10ee,"}, `param.vendor: "" is not a 16-bit hex number`},
		{"device not hex", map[string]string{"vendor": "0x10ee", "device": "xilinx"}, `external-resource.fpga.param.device: "xilinx"`},
		{"class too long", map[string]string{"vendor": "0x10ee", "class": "0x1200000"}, `external-resource.fpga.param.class: "0x1200000" is not a class-code prefix`},
		{"class not hex", map[string]string{"vendor": "0x10ee", "class": "accel"}, `param.class: "accel" is not a class-code prefix`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(driver.Options{Resource: "fpga", Params: tt.params})
			require.ErrorIs(t, err, ErrInvalidParam)
			require.ErrorContains(t, err, tt.want)
		})
	}
}

// Each bad fixture is the 2-FPGA host with one thing broken. A function
// whose vendor, device or class cannot be read fails the whole scan (we
// cannot tell whether it is ours); a function of another vendor is never
// read beyond its vendor, so its broken locality files do not matter.
func TestBadFixtures(t *testing.T) {
	fpga := "devices/pci0000:3a/0000:3a:00.0/0000:3b:00.1/"
	nic := "devices/pci0000:17/0000:17:00.0/0000:18:00.0/"
	// Errors name the path a user would look at: the bus/pci/devices link.
	fpgaLink := "bus/pci/devices/0000:3b:00.1/"
	nicLink := "bus/pci/devices/0000:18:00.0/"
	tests := []struct {
		name   string
		break_ func(t *testing.T, root string)
		want   string // "" = still works
	}{
		{"missing vendor of another device", drivertest.Remove(nic + "vendor"), nicLink + "vendor: no such file or directory"},
		{"missing device of a Xilinx function", drivertest.Remove(fpga + "device"), fpgaLink + "device: no such file or directory"},
		{"missing class of a Xilinx function", drivertest.Remove(fpga + "class"), fpgaLink + "class: no such file or directory"},
		{"vendor not hex", drivertest.Write(fpga+"vendor", "0xzz10\n"), fpgaLink + `vendor: "0xzz10" is not a 16-bit hex number`},
		{"vendor empty", drivertest.Write(fpga+"vendor", "\n"), fpgaLink + `vendor: "" is not a 16-bit hex number`},
		{"class wider than 24 bits", drivertest.Write(fpga+"class", "0x12000000\n"), fpgaLink + `class: "0x12000000" is not a 24-bit hex number`},
		{"vendor unreadable", drivertest.Unreadable(fpga + "vendor"), fpgaLink + "vendor: is a directory"},
		{"numa_node not a number", drivertest.Write(fpga+"numa_node", "abc\n"), fpgaLink + `numa_node: "abc" is not a NUMA node number`},
		{"numa_node below -1", drivertest.Write(fpga+"numa_node", "-2\n"), fpgaLink + `numa_node: "-2" is not a NUMA node number`},
		{"local_cpulist garbage", drivertest.Write(fpga+"local_cpulist", "0-x\n"), fpgaLink + `local_cpulist: cpu list "0-x": "x" is not a CPU number`},
		{"local_cpulist unreadable", drivertest.Unreadable(fpga + "local_cpulist"), fpgaLink + "local_cpulist: is a directory"},
		{"dangling link in bus/pci/devices", func(t *testing.T, root string) {
			require.NoError(t, os.RemoveAll(filepath.Join(root, "devices/pci0000:d7/0000:d7:00.0/0000:d8:00.1")))
		}, "bus/pci/devices/0000:d8:00.1: dangling link"},
		{"no bus/pci/devices", func(t *testing.T, root string) {
			require.NoError(t, os.RemoveAll(filepath.Join(root, "bus")))
		}, "pci: list " /* + dir */},
		{"drm unreadable", drivertest.Unreadable(fpga + "drm/renderD128/dev"), ""},
		{"drm not a directory", func(t *testing.T, root string) {
			require.NoError(t, os.RemoveAll(filepath.Join(root, fpga, "drm")))
			drivertest.Write(fpga+"drm", "x\n")(t, root)
		}, fpgaLink + "drm: not a directory"},
		{"optional files absent", func(t *testing.T, root string) {
			drivertest.Remove(fpga+"numa_node")(t, root)
			drivertest.Remove(fpga+"local_cpulist")(t, root)
			drivertest.Remove(fpga+"driver")(t, root)
		}, ""},
		{"other vendor's locality broken", drivertest.Write(nic+"numa_node", "garbage\n"), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := drivertest.CopyTree(t, twoFPGAs)
			tt.break_(t, root)
			e, err := New(driver.Options{Resource: "fpga", Params: map[string]string{
				"vendor": "0x10ee", "device": "0x5005", "sysfs-root": root,
			}})
			require.NoError(t, err)
			devs, err := e.Enumerate(context.Background())
			if tt.want == "" {
				require.NoError(t, err)
				require.Equal(t, []string{"0000:3b:00.1", "0000:d8:00.1"}, addresses(devs))
				return
			}
			require.Error(t, err)
			require.ErrorContains(t, err, tt.want)
			require.Nil(t, devs, "nothing half-listed")
		})
	}
}

func TestOptionalFilesAbsentLeaveInfosOut(t *testing.T) {
	root := drivertest.CopyTree(t, twoFPGAs)
	fpga := "devices/pci0000:3a/0000:3a:00.0/0000:3b:00.1/"
	for _, f := range []string{"numa_node", "local_cpulist", "driver"} {
		drivertest.Remove(fpga+f)(t, root)
	}
	require.NoError(t, os.RemoveAll(filepath.Join(root, fpga, "drm")))
	f, err := ReadFunction(root, "0000:3b:00.1")
	require.NoError(t, err)
	require.Equal(t, Function{Address: "0000:3b:00.1", Vendor: 0x10ee, Device: 0x5005, Class: 0x120000, NUMANode: -1}, f)
	require.Equal(t, resources.Properties{
		"index": "0", "address": "0000:3b:00.1", "pci": "0000:3b:00.1",
		"vendor": "0x10ee", "device": "0x5005", "class": "0x120000",
	}, Info(0, f))
}

// A function whose render nodes the process cannot open (not in this
// container, or denied by the device cgroup) is left out, as XRT and ROCm
// leave it out; functions without render nodes are not checked.
func TestRenderNodeAccess(t *testing.T) {
	dev := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dev, "dri"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dev, "dri", "renderD129"), nil, 0o644)) // renderD128 is not in this container
	params := map[string]string{"vendor": "0x10ee", "class": "0x12", "sysfs-root": twoFPGAs, "dev-root": dev}
	e, err := New(driver.Options{Resource: "fpga", Params: params})
	require.NoError(t, err)
	devs, err := e.Enumerate(context.Background())
	require.NoError(t, err)
	require.Equal(t, []string{"0000:3b:00.0", "0000:d8:00.0", "0000:d8:00.1"}, addresses(devs))
	require.Equal(t, "2", devs[2].Info["index"])

	e.open = func(path string) error { return &os.PathError{Op: "open", Path: path, Err: syscall.EPERM} }
	params["device"] = "0x5005"
	e2, err := New(driver.Options{Resource: "fpga", Params: params})
	require.NoError(t, err)
	e2.open = e.open
	_, err = e2.Enumerate(context.Background())
	require.ErrorIs(t, err, driver.ErrNotEnoughDevices)
	require.ErrorContains(t, err, "2 functions under "+filepath.Join(twoFPGAs, DevicesDir)+" with vendor 0x10ee device 0x5005 class 0x12*, but the process can open none of their render nodes under "+filepath.Join(dev, "dri"))

	e2.open = func(path string) error { return &os.PathError{Op: "open", Path: path, Err: syscall.EIO} }
	_, err = e2.Enumerate(context.Background())
	require.ErrorContains(t, err, "pci: 0000:3b:00.1: open "+filepath.Join(dev, "dri", "renderD128")+": input/output error")

	// The real /sys gets the check by default; a fake one does not.
	e3, err := New(driver.Options{Params: map[string]string{"vendor": "0x10ee"}})
	require.NoError(t, err)
	require.Equal(t, "/dev", e3.DevRoot)
	e3, err = New(driver.Options{Params: map[string]string{"vendor": "0x10ee", "sysfs-root": twoFPGAs}})
	require.NoError(t, err)
	require.Empty(t, e3.DevRoot)
}

func TestReadFunctionErrors(t *testing.T) {
	_, err := ReadFunction(twoFPGAs, "0000:99:00.0")
	require.ErrorContains(t, err, "0000:99:00.0/vendor: no such file or directory")
	f, err := ReadFunction(twoFPGAs, "0000:d8:00.0")
	require.NoError(t, err)
	require.Equal(t, Function{Address: "0000:d8:00.0", Vendor: 0x10ee, Device: 0x5004, Class: 0x120000,
		NUMANode: 1, LocalCPUs: "16-31,48-63", Driver: "xclmgmt"}, f)
	f, err = ReadFunction(twoFPGAs, "0000:d8:00.1")
	require.NoError(t, err)
	require.Equal(t, []string{"renderD129"}, f.RenderNodes)
}

func TestEnumerateHonoursContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	e := &Enumerator{Root: twoFPGAs, Filter: Filter{Vendors: []uint16{0x10ee}}}
	_, err := e.Enumerate(ctx)
	require.True(t, errors.Is(err, context.Canceled), "got %v", err)
}

func TestAddressOrder(t *testing.T) {
	// Numeric, not string order: domain 10000 (VMD) after 0000, bus 0x3b
	// before 0xd8, function 1 after 0.
	in := []string{"10000:00:00.0", "0000:d8:00.1", "0000:3b:00.1", "0000:3b:00.0", "junk"}
	want := []string{"0000:3b:00.0", "0000:3b:00.1", "0000:d8:00.1", "10000:00:00.0", "junk"}
	for i := range in {
		for j := range in {
			wi, wj := indexOf(want, in[i]), indexOf(want, in[j])
			require.Equal(t, wi < wj, addressLess(in[i], in[j]), "%s < %s", in[i], in[j])
		}
	}
}

func TestParseAddress(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want [4]uint64
		ok   bool
	}{
		{"0000:3b:00.1", [4]uint64{0, 0x3b, 0, 1}, true},
		{"10000:d8:1f.7", [4]uint64{0x10000, 0xd8, 0x1f, 7}, true},
		{"0000:3b:00", [4]uint64{}, false},
		{"0000::00.0", [4]uint64{}, false},
		{"3b:00.0", [4]uint64{}, false},
		{"0000:3g:00.0", [4]uint64{}, false},
		{"100000000:00:00.0", [4]uint64{}, false},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, ok := ParseAddress(tc.in)
			require.Equal(t, tc.ok, ok)
			if ok {
				require.Equal(t, tc.want, got)
			}
		})
	}
}

func indexOf(list []string, s string) int {
	for i, x := range list {
		if x == s {
			return i
		}
	}
	return -1
}
