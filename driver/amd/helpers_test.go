package amd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/driver/drivertest"
)

// copyTree copies a fixture tree, symlinks included, so a test can break it.
func copyTree(t *testing.T, src string) string { return drivertest.CopyTree(t, src) }

func remove(rel string) func(*testing.T, string) {
	return func(t *testing.T, root string) {
		require.NoError(t, os.Remove(filepath.Join(root, rel)))
	}
}

func write(rel, content string) func(*testing.T, string) {
	return func(t *testing.T, root string) {
		require.NoError(t, os.WriteFile(filepath.Join(root, rel), []byte(content), 0o644))
	}
}

func appendTo(rel, content string) func(*testing.T, string) {
	return func(t *testing.T, root string) {
		f, err := os.OpenFile(filepath.Join(root, rel), os.O_APPEND|os.O_WRONLY, 0)
		require.NoError(t, err)
		_, err = f.WriteString(content)
		require.NoError(t, err)
		require.NoError(t, f.Close())
	}
}

// unreadable replaces a file with a directory: reading it fails even as
// root, where a chmod 000 file would still be readable.
func unreadable(rel string) func(*testing.T, string) {
	return func(t *testing.T, root string) {
		p := filepath.Join(root, rel)
		require.NoError(t, os.Remove(p))
		require.NoError(t, os.Mkdir(p, 0o755))
	}
}

// replaceLine replaces the line starting with prefix.
func replaceLine(s, prefix, with string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, prefix) {
			lines[i] = with
		}
	}
	return strings.Join(lines, "\n")
}
