package gpu

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/resources"
)

func TestParseScriptOutput(t *testing.T) {
	tests := []struct {
		name    string
		out     string
		want    []string
		wantErr string
	}{
		{"two", "0,1\n", []string{"0", "1"}, ""},
		{"only the first line counts", "2,3\nignored,4\n", []string{"2", "3"}, ""},
		{"trimmed, empty pieces dropped", " 0 , ,1,,\t2 \r\n", []string{"0", "1", "2"}, ""},
		{"duplicates collapse", "1,1,0", []string{"1", "0"}, ""},
		{"empty", "", nil, ""},
		{"empty first line", "\n0,1\n", nil, ""},
		{"uuids", "GPU-8b6f0000-1a2b,MIG-GPU-aaaa/1/0", []string{"GPU-8b6f0000-1a2b", "MIG-GPU-aaaa/1/0"}, ""},
		{"flink's error text on stdout", "Could not get enough GPU resources.\n", nil, `contains ' '`},
		{"garbage", "\x00\x01\x02", nil, "contains"},
		{"not utf-8", "\xff\xfe", nil, "not UTF-8"},
		{"shell noise", "0,1; rm -rf /", nil, "contains"},
		{"too long", strings.Repeat("a", 200), nil, "longer than"},
		{"negative", "-1,1", nil, "index -1 is negative"},
		{"negative zero", "0,-0", nil, "index -0 is negative"},
		{"a dash inside is no sign", "1-2,GPU-a", []string{"1-2", "GPU-a"}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseScriptOutput([]byte(tc.out))
			if tc.wantErr != "" {
				require.ErrorIs(t, err, ErrScriptOutput)
				require.Contains(t, err.Error(), tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestParseSMIFixtures(t *testing.T) {
	tests := []struct {
		file    string
		n       int
		first   resources.Properties
		key     string
		wantErr string
	}{
		{file: "none.txt", n: 0},
		{file: "one.txt", n: 1, key: "GPU-5d2f3c1e-7a4b-4c55-9e0a-1b2c3d4e5f60", first: resources.Properties{
			"index": "0", "uuid": "GPU-5d2f3c1e-7a4b-4c55-9e0a-1b2c3d4e5f60", "name": "NVIDIA A100-SXM4-40GB",
			"memory.total": "40960", "pci.bus-id": "00000000:07:00.0"}},
		{file: "eight.txt", n: 8, key: "GPU-8b6f0000-1a2b-4c3d-9e8f-000000001000", first: resources.Properties{
			"index": "0", "uuid": "GPU-8b6f0000-1a2b-4c3d-9e8f-000000001000", "name": "NVIDIA H100 80GB HBM3",
			"memory.total": "81559", "pci.bus-id": "00000000:18:00.0"}},
		{file: "na-fields.txt", n: 2, key: "pci:00000000:01:00.0", first: resources.Properties{
			"index": "0", "name": "NVIDIA GeForce RTX 3090", "pci.bus-id": "00000000:01:00.0"}},
		{file: "spaces.txt", n: 1, key: "GPU-aaaa", first: resources.Properties{
			"index": "0", "uuid": "GPU-aaaa", "name": "Tesla T4", "memory.total": "15360", "pci.bus-id": "00000000:00:1E.0"}},
		{file: "failed-driver.txt", wantErr: "couldn't communicate with the NVIDIA driver"},
		{file: "version-mismatch.txt", wantErr: "Driver/library version mismatch"},
		{file: "with-header.txt", wantErr: `line 1: index "index" is not a number`},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("testdata", "smi", tc.file))
			require.NoError(t, err)
			devs, err := ParseSMI(b)
			if tc.wantErr != "" {
				require.ErrorIs(t, err, ErrNvidiaSMI)
				require.Contains(t, err.Error(), tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.Len(t, devs, tc.n)
			if tc.n > 0 {
				require.Equal(t, tc.first, devs[0].Info)
				require.Equal(t, tc.key, devs[0].Key)
			}
			if tc.file == "na-fields.txt" {
				require.Equal(t, "index:1", devs[1].Key, "no uuid, no bus id: keyed by index")
			}
		})
	}
}

func TestParseSMIBadLines(t *testing.T) {
	tests := []struct{ name, in, msg string }{
		{"too few fields", "0, GPU-a, T4\n", "want 5 comma-separated fields"},
		{"duplicate index", "0, GPU-a, T4, 1 MiB, x\n0, GPU-b, T4, 1 MiB, y\n", "index 0 listed twice"},
		{"duplicate uuid", "0, GPU-a, T4, 1 MiB, x\n1, GPU-a, T4, 1 MiB, y\n", "GPU-a listed twice"},
		{"bad memory", "0, GPU-a, T4, lots, x\n", "memory.total"},
		{"bad unit", "0, GPU-a, T4, 5 parsecs, x\n", "unknown unit"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseSMI([]byte(tc.in))
			require.ErrorIs(t, err, ErrNvidiaSMI)
			require.Contains(t, err.Error(), tc.msg)
		})
	}
}

func TestParseMiB(t *testing.T) {
	tests := []struct {
		in   string
		want uint64
	}{
		{"81920 MiB", 81920}, {"81920MiB", 81920}, {"80 GiB", 81920}, {"2048 KiB", 2}, {"512", 512},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := parseMiB(tc.in)
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestParseDuration(t *testing.T) {
	tests := []struct {
		in      string
		want    string
		wantErr bool
	}{
		{"10 s", "10s", false}, {"10s", "10s", false}, {"10000", "10s", false}, {"500 ms", "500ms", false},
		{"2 min", "2m0s", false}, {"1m30s", "1m30s", false}, {"1 h", "1h0m0s", false},
		{"ten", "", true}, {"10 parsecs", "", true}, {"", "", true},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			d, err := ParseDuration(tc.in)
			if tc.wantErr {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, d.String())
		})
	}
}

// FuzzParseScriptOutput: never panics; every index is trimmed, non-empty,
// index-like and unique.
func FuzzParseScriptOutput(f *testing.F) {
	for _, s := range []string{"0,1\n", " 0 , ,1", "Could not get enough GPU resources.", "GPU-a,MIG-GPU-a/1/0\n2", ""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := ParseScriptOutput(b)
		if err != nil {
			return
		}
		seen := map[string]bool{}
		for _, ix := range got {
			require.NotEmpty(t, ix)
			require.Equal(t, strings.TrimSpace(ix), ix)
			require.NoError(t, checkIndex(ix))
			require.False(t, seen[ix])
			seen[ix] = true
		}
	})
}

// FuzzParseSMI: never panics; every device has an index and a unique key.
func FuzzParseSMI(f *testing.F) {
	for _, name := range []string{"one.txt", "eight.txt", "na-fields.txt", "failed-driver.txt", "spaces.txt"} {
		b, err := os.ReadFile(filepath.Join("testdata", "smi", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		devs, err := ParseSMI(b)
		if err != nil {
			return
		}
		keys := map[string]bool{}
		for _, d := range devs {
			require.NotEmpty(t, d.Info["index"])
			require.NotEmpty(t, d.Key)
			require.False(t, keys[d.Key])
			keys[d.Key] = true
		}
	})
}
