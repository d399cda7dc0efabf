package drivertest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// CopyTree copies a fixture tree (a fake sysfs, symlinks included) into a
// fresh temporary "sys" folder, so a test can break the copy.
func CopyTree(t testing.TB, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "sys")
	err := filepath.Walk(src, func(path string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		to := filepath.Join(dst, rel)
		switch {
		case info.Mode()&os.ModeSymlink != 0:
			target, err := os.Readlink(path)
			if err != nil {
				return err
			}
			return os.Symlink(target, to)
		case info.IsDir():
			return os.MkdirAll(to, 0o755)
		default:
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			return os.WriteFile(to, b, 0o644)
		}
	})
	require.NoError(t, err)
	return dst
}

// Remove returns a fixture edit that deletes rel (a path inside the tree
// CopyTree made).
func Remove(rel string) func(*testing.T, string) {
	return func(t *testing.T, root string) {
		require.NoError(t, os.Remove(filepath.Join(root, rel)))
	}
}

// Write returns a fixture edit that writes content to rel.
func Write(rel, content string) func(*testing.T, string) {
	return func(t *testing.T, root string) {
		require.NoError(t, os.WriteFile(filepath.Join(root, rel), []byte(content), 0o644))
	}
}

// AppendTo returns a fixture edit that appends content to rel.
func AppendTo(rel, content string) func(*testing.T, string) {
	return func(t *testing.T, root string) {
		f, err := os.OpenFile(filepath.Join(root, rel), os.O_APPEND|os.O_WRONLY, 0)
		require.NoError(t, err)
		_, err = f.WriteString(content)
		require.NoError(t, err)
		require.NoError(t, f.Close())
	}
}

// Unreadable returns a fixture edit that replaces the file rel with a
// directory: reading it fails even as root, where a chmod 000 file would
// still be readable.
func Unreadable(rel string) func(*testing.T, string) {
	return func(t *testing.T, root string) {
		p := filepath.Join(root, rel)
		require.NoError(t, os.Remove(p))
		require.NoError(t, os.Mkdir(p, 0o755))
	}
}
