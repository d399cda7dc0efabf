package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestReadmeNamesRealTests: every test the README and docs/*.md name as
// proof (the fault table's last column in docs/faults.md, the NodeManager
// modes in the README, the feature notes) is a test function of the repo, so
// a renamed or dropped test cannot leave a row pointing at nothing.
func TestReadmeNamesRealTests(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	named := map[string]string{}
	for _, doc := range userDocs(t, root) {
		b, err := os.ReadFile(filepath.Join(root, doc))
		require.NoError(t, err)
		for _, m := range regexp.MustCompile("`(Test[A-Z][A-Za-z0-9_]*)`").FindAllSubmatch(b, -1) {
			named[string(m[1])] = doc
		}
	}
	require.NotEmpty(t, named, "the README and docs/ name no test")

	declared := map[string]bool{}
	fn := regexp.MustCompile(`(?m)^func (Test[A-Za-z0-9_]*)\(`)
	require.NoError(t, filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "target", "work", "node_modules", ".logs":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range fn.FindAllSubmatch(b, -1) {
			declared[string(m[1])] = true
		}
		return nil
	}))
	var missing []string
	for name, doc := range named {
		if !declared[name] {
			missing = append(missing, doc+": "+name)
		}
	}
	require.Empty(t, missing, "the docs name tests that do not exist")
}
