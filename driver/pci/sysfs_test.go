package pci

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseCPUList(t *testing.T) {
	tests := []struct {
		in   string
		want []int
		err  string
	}{
		{"", nil, ""},
		{"3\n", []int{3}, ""},
		{"0-3", []int{0, 1, 2, 3}, ""},
		{"0-1,8-9", []int{0, 1, 8, 9}, ""},
		{"0-1,4,6-7", []int{0, 1, 4, 6, 7}, ""},
		{"3-1", nil, "range 3-1 is descending"},
		{"0-x", nil, `"x" is not a CPU number`},
		{"-1", nil, `"" is not a CPU number`},
		{"+1", nil, `"+1" is not a CPU number`},
		{"1,,2", nil, `"" is not a CPU number`},
		{"0-8192", nil, `"8192" is not a CPU number`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseCPUList(tt.in)
			if tt.err != "" {
				require.ErrorContains(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestParseHex(t *testing.T) {
	tests := []struct {
		in   string
		bits int
		want uint64
		ok   bool
	}{
		{"0x10ee", 16, 0x10ee, true},
		{"0X10EE", 16, 0x10ee, true},
		{"10ee", 16, 0x10ee, true},
		{"0x120000", 24, 0x120000, true},
		{"0x", 16, 0, false},
		{"", 16, 0, false},
		{"0x10eee", 16, 0, false},
		{"0x1200000", 24, 0, false},
		{"-0x1", 16, 0, false},
		{"0x+1", 16, 0, false},
		{"0xg", 16, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseHex(tt.in, tt.bits)
			if !tt.ok {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

// The seed corpora in testdata/fuzz run as unit tests with plain go test.
func FuzzParseCPUList(f *testing.F) {
	for _, s := range []string{"0-15,32-47", "3", "", "1-0", "0-8191", "a", "1,2,3-4\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		cpus, err := ParseCPUList(s)
		if err != nil {
			return
		}
		require.LessOrEqual(t, len(cpus), maxCPUs+1)
		for _, c := range cpus {
			require.GreaterOrEqual(t, c, 0)
			require.Less(t, c, maxCPUs)
		}
	})
}

func FuzzParseHex(f *testing.F) {
	for _, s := range []string{"0x10ee", "10EE", "0x", "0x1200000", "0xffff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseHex(s, 16)
		if err != nil {
			return
		}
		require.LessOrEqual(t, v, uint64(0xffff))
		require.True(t, strings.HasPrefix(strings.ToLower(s), "0x") || !strings.Contains(s, "x"))
	})
}

// FuzzEnumerateAttribute writes arbitrary bytes into a matching function's
// attributes: Enumerate either lists it with well-formed infos or fails
// with an error naming the file, never panics.
func FuzzEnumerateAttribute(f *testing.F) {
	f.Add("0x10ee\n", "0x120000\n", "0\n", "0-15,32-47\n")
	f.Add("0x10ee", "0x12", "-1", "")
	f.Add("10ee\n", "0xzz\n", "x\n", "3-1\n")
	f.Fuzz(func(t *testing.T, vendor, class, numa, cpus string) {
		root := t.TempDir()
		dev := filepath.Join(root, "devices/pci0000:00/0000:00:01.0")
		require.NoError(t, os.MkdirAll(dev, 0o755))
		require.NoError(t, os.MkdirAll(filepath.Join(root, DevicesDir), 0o755))
		require.NoError(t, os.Symlink("../../../devices/pci0000:00/0000:00:01.0", filepath.Join(root, DevicesDir, "0000:00:01.0")))
		for name, v := range map[string]string{"vendor": vendor, "device": "0x5005\n", "class": class, "numa_node": numa, "local_cpulist": cpus} {
			require.NoError(t, os.WriteFile(filepath.Join(dev, name), []byte(v), 0o644))
		}
		e := &Enumerator{Root: root, Filter: Filter{Vendors: []uint16{0x10ee}}}
		devs, err := e.Enumerate(t.Context())
		if err != nil {
			require.Contains(t, err.Error(), "pci: ")
			return
		}
		require.Len(t, devs, 1)
		require.Equal(t, "0x10ee", devs[0].Info["vendor"])
	})
}
