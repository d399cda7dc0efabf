package conf

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzReadHadoopXML feeds the Hadoop XML reader arbitrary documents, seeded
// with every file under testdata/hadoop. The reader must not panic, every
// property it returns must have a name and a line, and expanding the values
// must terminate (cycles and deep nesting are errors, not hangs).
func FuzzReadHadoopXML(f *testing.F) {
	seeds, err := filepath.Glob(filepath.Join("testdata", "hadoop", "*", "*.xml"))
	require.NoError(f, err)
	require.NotEmpty(f, seeds)
	for _, path := range seeds {
		data, err := os.ReadFile(path)
		require.NoError(f, err)
		f.Add(data)
	}
	f.Add([]byte(`<configuration><property><name>a</name><value>${a}${b}</value></property><property name="b" value="${env.X:-${a}}"/></configuration>`))
	f.Fuzz(func(t *testing.T, data []byte) {
		props, err := ReadHadoopXML(bytes.NewReader(data), "fuzz.xml")
		if err != nil {
			return
		}
		hc := NewHadoopConfig(func(string) string { return "" })
		for _, p := range props {
			if p.Name == "" || p.Line <= 0 || p.File != "fuzz.xml" {
				t.Fatalf("bad property %+v", p)
			}
			hc.Set(p.Name, p.Value)
		}
		for _, p := range props {
			_, _, _ = hc.Lookup(p.Name)
		}
	})
}
