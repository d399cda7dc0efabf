package conf

import (
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkLoad compares the flat loader with the nested YAML reader on the
// two fixtures (same settings, both formats).
func BenchmarkLoad(b *testing.B) {
	for _, p := range []string{"flink-conf.yaml", filepath.Join("nested", "config.yaml")} {
		data, err := os.ReadFile(filepath.Join("testdata", p))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(filepath.Base(p), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if IsNested(p) {
					if _, _, err := parseNested(p, data); err != nil {
						b.Fatal(err)
					}
				} else {
					if _, _, err := parseFlat(p, data); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
