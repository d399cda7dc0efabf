package launch

import (
	"flag"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/driver/pci"
	"github.com/xres/xres/resources"
)

func TestSysfsAddress(t *testing.T) {
	tests := []struct {
		in, want, err string
	}{
		{in: "00000000:3B:00.0", want: "0000:3b:00.0"},
		{in: "0000:3b:00.1", want: "0000:3b:00.1"},
		{in: "00000001:AF:1F.7", want: "0001:af:1f.7"},
		{in: " 3b:00.0 ", want: "0000:3b:00.0"},
		{in: "3b:00", err: "is not a PCI bus id"},
		{in: "0000:3b:0.0", err: "is not a PCI bus id"},
		{in: "zz:3b:00.0", err: "bad domain"},
		{in: "0000:3b:00.0:1", err: "is not a PCI bus id"},
		{in: "", err: "is not a PCI bus id"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := sysfsAddress(tc.in)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestFormatCPUList(t *testing.T) {
	tests := []struct {
		in   []int
		want string
	}{
		{nil, ""},
		{[]int{0}, "0"},
		{[]int{0, 1, 2, 3, 8, 10, 11}, "0-3,8,10-11"},
		{[]int{11, 10, 3, 2, 1, 0, 8, 8}, "0-3,8,10-11"},
		{[]int{1, 3, 5}, "1,3,5"},
	}
	for _, tc := range tests {
		t.Run(tc.want, func(t *testing.T) {
			require.Equal(t, tc.want, formatCPUList(tc.in))
		})
	}
	require.Equal(t, []int{16, 17}, intersectCPUs([]int{0, 16, 17, 16}, []int{17, 16, 1}))
	require.Empty(t, intersectCPUs([]int{16, 17}, []int{0, 1}))
}

// TestDeviceCPUs: where a device's local CPUs come from, and the errors
// for malformed values naming their source.
func TestDeviceCPUs(t *testing.T) {
	root := t.TempDir()
	write := func(addr, content string) {
		dir := filepath.Join(root, pci.DevicesDir, addr)
		require.NoError(t, os.MkdirAll(dir, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "local_cpulist"), []byte(content), 0o644))
	}
	write("0000:3b:00.0", "0-3,8\n")
	write("0000:5e:00.0", "not a list\n")
	write("0000:af:00.0", "\n")
	spec := resources.Spec{Name: "gpu", Params: map[string]string{ParamSysfsRoot: root}}
	tests := []struct {
		name  string
		info  resources.Properties
		want  []int
		src   string
		noLoc bool
		err   string
	}{
		{name: "local-cpus info wins", info: resources.Properties{InfoLocalCPUs: "5", InfoPCIBusID: "00000000:3B:00.0"}, want: []int{5}, src: "info local-cpus"},
		{name: "nvidia-smi bus id to sysfs", info: resources.Properties{InfoPCIBusID: "00000000:3B:00.0"}, want: []int{0, 1, 2, 3, 8},
			src: filepath.Join(root, pci.DevicesDir, "0000:3b:00.0", "local_cpulist")},
		{name: "nothing told", info: resources.Properties{"index": "0"}, noLoc: true},
		{name: "no sysfs entry", info: resources.Properties{InfoPCIBusID: "0000:01:00.0"}, noLoc: true},
		{name: "empty local_cpulist", info: resources.Properties{InfoPCIBusID: "0000:af:00.0"}, noLoc: true},
		{name: "bad info", info: resources.Properties{InfoLocalCPUs: "1-x"}, err: "resource gpu: info local-cpus: cpu list"},
		{name: "bad bus id", info: resources.Properties{InfoPCIBusID: "GPU-1"}, err: "resource gpu: info pci.bus-id"},
		{name: "bad sysfs file names it", info: resources.Properties{InfoPCIBusID: "0000:5e:00.0"},
			err: filepath.Join(root, pci.DevicesDir, "0000:5e:00.0", "local_cpulist")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cpus, src, err := deviceCPUs(spec, tc.info)
			switch {
			case tc.noLoc:
				require.ErrorIs(t, err, errNoLocality)
			case tc.err != "":
				require.ErrorContains(t, err, tc.err)
				require.NotErrorIs(t, err, errNoLocality)
			default:
				require.NoError(t, err)
				require.Equal(t, tc.want, cpus)
				require.Equal(t, tc.src, src)
			}
		})
	}
}

func TestNormalizeArgsPerDevice(t *testing.T) {
	tests := []struct {
		name string
		in   []string
		want []string
	}{
		{name: "separate name before --", in: []string{"--per-device", "gpu", "--", "w"}, want: []string{"--per-device=gpu", "--", "w"}},
		{name: "single dash", in: []string{"-per-device", "fpga", "--", "w"}, want: []string{"-per-device=fpga", "--", "w"}},
		{name: "bare before --", in: []string{"--per-device", "--", "w"}, want: []string{"--per-device", "--", "w"}},
		{name: "worker right after", in: []string{"--per-device", "python", "train.py"}, want: []string{"--per-device", "python", "train.py"}},
		{name: "after a valued flag", in: []string{"--conf", "/etc/flink", "-D", "a=b", "--per-device", "gpu", "--", "w"},
			want: []string{"--conf", "/etc/flink", "-D", "a=b", "--per-device=gpu", "--", "w"}},
		{name: "a flag value that looks like it is left", in: []string{"--info-file", "--per-device", "gpu", "--", "w"},
			want: []string{"--info-file", "--per-device", "gpu", "--", "w"}},
		{name: "worker's own flag untouched", in: []string{"--", "w", "--per-device", "x", "--"},
			want: []string{"--", "w", "--per-device", "x", "--"}},
		{name: "after the worker", in: []string{"w", "--per-device", "x", "--"}, want: []string{"w", "--per-device", "x", "--"}},
		{name: "with flink-style -D", in: []string{"-Da=b", "--per-device", "gpu", "--", "w", "-Dc=d"},
			want: []string{"-D", "a=b", "--per-device=gpu", "--", "w", "-Dc=d"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fs := flag.NewFlagSet("t", flag.ContinueOnError)
			var c common
			c.register(fs)
			fs.String("info-file", "", "")
			var pd perDeviceOptions
			pd.register(fs)
			require.Equal(t, tc.want, normalizeArgs(fs, tc.in))
		})
	}
}

// FuzzCPUListFormat: a CPU list that parses formats back to one that
// parses to the same set.
func FuzzCPUListFormat(f *testing.F) {
	for _, seed := range []string{"0-15,32-47", "3", "", "0,2,4-6", "16-31,48-63\n", "5-3", "1,1,1", "8191"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		cpus, err := pci.ParseCPUList(s)
		if err != nil {
			return
		}
		again, err := pci.ParseCPUList(formatCPUList(cpus))
		require.NoError(t, err)
		require.Equal(t, uniqueSorted(cpus), uniqueSorted(again))
	})
}

// FuzzSysfsAddress: an accepted bus id gives a canonical sysfs name that
// maps to itself.
func FuzzSysfsAddress(f *testing.F) {
	for _, seed := range []string{"00000000:3B:00.0", "0000:3b:00.1", "3b:00.0", "", "a:b:c.d", "ffffffff:ff:1f.7"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		addr, err := sysfsAddress(s)
		if err != nil {
			return
		}
		again, err := sysfsAddress(addr)
		require.NoError(t, err)
		require.Equal(t, addr, again)
	})
}

func uniqueSorted(cpus []int) []int {
	seen := map[int]bool{}
	var out []int
	for _, c := range cpus {
		if !seen[c] {
			seen[c] = true
			out = append(out, c)
		}
	}
	sort.Ints(out)
	return out
}
