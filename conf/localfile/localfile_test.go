package localfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestReadFileAsOS(t *testing.T) {
	dir := t.TempDir()
	for _, size := range []int{0, 1, 511, 512, 513, 4096, 100000} {
		p := filepath.Join(dir, "f")
		data := []byte(strings.Repeat("x", size))
		require.NoError(t, os.WriteFile(p, data, 0o644))
		got, err := ReadFile(p)
		require.NoError(t, err)
		require.Equal(t, data, got)
	}
	// /proc files say size 0 and are read to their end.
	want, err := os.ReadFile("/proc/self/status")
	require.NoError(t, err)
	got, err := ReadFile("/proc/self/status")
	require.NoError(t, err)
	require.Equal(t, strings.SplitN(string(want), "\n", 2)[0], strings.SplitN(string(got), "\n", 2)[0])

	_, err = ReadFile(filepath.Join(dir, "missing"))
	var pe *fs.PathError
	require.True(t, errors.As(err, &pe), "%T", err)
	require.ErrorIs(t, err, fs.ErrNotExist)
	require.Contains(t, err.Error(), "missing")
	_, err = ReadFile(dir)
	require.Error(t, err, "a directory")
}

func TestOpenFileFlags(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	f, err := OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o640)
	require.NoError(t, err)
	_, err = f.WriteString("hello")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	st, err := os.Stat(p)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o640), st.Mode().Perm()) // umask 022 or less
	_, err = OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o640)
	require.ErrorIs(t, err, fs.ErrExist)

	d, err := OpenFile(dir, os.O_RDONLY, 0)
	require.NoError(t, err)
	names, err := d.Readdirnames(-1)
	require.NoError(t, err)
	require.Equal(t, []string{"f"}, names)
	require.NoError(t, d.Close())
}

func TestCreateTemp(t *testing.T) {
	dir := t.TempDir()
	seen := map[string]bool{}
	for i := 0; i < 50; i++ {
		f, err := CreateTemp(dir, "xres-resources-*.json")
		require.NoError(t, err)
		name := filepath.Base(f.Name())
		require.True(t, strings.HasPrefix(name, "xres-resources-") && strings.HasSuffix(name, ".json"), name)
		require.False(t, seen[name])
		seen[name] = true
		st, err := f.Stat()
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o600), st.Mode().Perm())
		require.NoError(t, f.Close())
	}
	f, err := CreateTemp(dir, "nostar")
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(filepath.Base(f.Name()), "nostar"))
	require.NoError(t, f.Close())
	_, err = CreateTemp(dir, "a/b*")
	require.Error(t, err)
	_, err = CreateTemp(filepath.Join(dir, "missing"), "x*")
	require.ErrorIs(t, err, fs.ErrNotExist)
}

func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "info.json")
	require.NoError(t, os.WriteFile(p, []byte("old"), 0o600))
	require.NoError(t, WriteFileAtomic(p, []byte("new"), 0o644))
	got, err := os.ReadFile(p)
	require.NoError(t, err)
	require.Equal(t, "new", string(got))
	st, err := os.Stat(p)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o644), st.Mode().Perm(), "the mode is perm, not the old file's or the temporary's 0600")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temporary file is left")
	// A directory that does not exist: an error naming it, nothing written.
	err = WriteFileAtomic(filepath.Join(dir, "missing", "f"), []byte("x"), 0o644)
	require.ErrorIs(t, err, fs.ErrNotExist)
	require.ErrorContains(t, err, filepath.Join(dir, "missing"))
}
