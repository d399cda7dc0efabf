package conf

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestHadoopKeysDeclaredOnce: a Hadoop key of hadoopkeys.go is spelled as a
// string literal nowhere else in the code of conf, resources, yarn and
// driver (tests, test helpers and testdata may spell them).
func TestHadoopKeysDeclaredOnce(t *testing.T) {
	fset := token.NewFileSet()
	decl, err := parser.ParseFile(fset, "hadoopkeys.go", nil, 0)
	require.NoError(t, err)
	keys := map[string]string{}
	ast.Inspect(decl, func(n ast.Node) bool {
		if vs, ok := n.(*ast.ValueSpec); ok {
			for i, v := range vs.Values {
				if lit, ok := v.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					s, _ := strconv.Unquote(lit.Value)
					keys[s] = vs.Names[i].Name
				}
			}
		}
		return true
	})
	require.Contains(t, keys, "yarn.resourcemanager.address")
	require.Contains(t, keys, "fs.defaultFS")

	var found []string
	for _, root := range []string{".", "../resources", "../yarn", "../driver"} {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if d.Name() == "testdata" || strings.HasSuffix(d.Name(), "test") && path != root {
					return filepath.SkipDir
				}
				return nil
			}
			if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || path == "hadoopkeys.go" {
				return nil
			}
			f, err := parser.ParseFile(fset, path, nil, 0)
			require.NoError(t, err)
			ast.Inspect(f, func(n ast.Node) bool {
				if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					if s, _ := strconv.Unquote(lit.Value); keys[s] != "" {
						found = append(found, fset.Position(lit.Pos()).String()+": "+lit.Value+" (conf."+keys[s]+")")
					}
				}
				return true
			})
			return nil
		})
		require.NoError(t, err)
	}
	require.Empty(t, found, "spell these Hadoop keys by their conf constant")
}
