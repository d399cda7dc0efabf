package topo

import (
	"os"
	"path/filepath"
	"testing"
)

func FuzzParseSMI(f *testing.F) {
	for _, name := range []string{"dgx1.txt", "pcie-2socket.txt", "nvswitch.txt", "mig.txt"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("\tGPU0\tGPU1\nGPU0\t X \tNV1\nGPU1\tNV1\t X \n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		topo, err := ParseSMI(b)
		if err != nil {
			return
		}
		if err := topo.Validate(); err != nil {
			t.Fatalf("parsed an invalid topology: %v", err)
		}
		if n := topo.N(); n > 0 && n <= 12 {
			free := all(n)
			for amount := 1; amount <= n; amount++ {
				c, err := topo.Pick(free, amount, PolicyTopology)
				if err != nil || len(c.GPUs) != amount {
					t.Fatalf("pick %d of %d: %v %v", amount, n, c.GPUs, err)
				}
			}
		}
	})
}

func FuzzUnmarshalNVML(f *testing.F) {
	f.Add([]byte(`[{"index":0,"bus_id":"00000000:3B:00.0","numa":0,"cpus":"0-7","ancestor":[0,10],"nvlinks":["0000:3c:00.0"]},` +
		`{"index":1,"bus_id":"00000000:3C:00.0","numa":0,"cpus":"0-7","ancestor":[10,0],"nvlinks":["0000:3b:00.0"]}]`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`[{"index":0,"ancestor":[0]}]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		topo, err := UnmarshalNVML(b)
		if err != nil {
			return
		}
		if err := topo.Validate(); err != nil {
			t.Fatalf("accepted an invalid topology: %v", err)
		}
	})
}
