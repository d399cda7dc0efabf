package main

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/conf"
)

var update = flag.Bool("update", false, "rewrite docs/configuration.md's config table from the declarations")

// TestReadmeConfigTable fails when the configuration reference's generated
// table (docs/configuration.md, linked from README.md) differs from the
// declarations (conf's and the drivers'); go test ./conf/cmd/gendoc -update
// (or go run ./conf/cmd/gendoc) rewrites it.
func TestReadmeConfigTable(t *testing.T) {
	path := filepath.Join("..", "..", "..", "docs", "configuration.md")
	if *update {
		require.NoError(t, run(path, false, false))
	}
	require.NoError(t, run(path, true, false), "docs/configuration.md's config table is out of date: run go run ./conf/cmd/gendoc")
}

func TestTableHasDriverParams(t *testing.T) {
	table := conf.MarkdownTable()
	for _, row := range []string{
		"| `external-resource.<name>.param.discovery.source` | String | `auto` | ",
		"| `external-resource.<name>.param.coordination.enabled` | Boolean | `true` | ",
		"| `external-resource.<name>.param.vendor` | String | (none) | PCI driver",
		"| `external-resource.<name>.amount` | Long | (none) | ",
	} {
		require.Contains(t, table, row)
	}
}

func TestStaleReadme(t *testing.T) {
	path := filepath.Join(t.TempDir(), "README.md")
	require.NoError(t, os.WriteFile(path, []byte("x\n"+conf.TableBegin+"\nold\n"+conf.TableEnd+"\n"), 0o644))
	require.ErrorContains(t, run(path, true, false), "config table is out of date")
	require.NoError(t, run(path, false, false))
	require.NoError(t, run(path, true, false))
}
