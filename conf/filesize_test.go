package conf

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/conf/localfile"
)

// Issue 41: --conf naming a device, a FIFO or a huge file was read without
// bound (24 GB from /dev/zero, then OOM; a FIFO without a writer blocked
// for ever). Every configuration file is now refused when it is not a
// regular file or is larger than MaxFileSize, naming the file, before any
// read.
func TestConfigFilesMustBeRegularAndBounded(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "flink-conf.yaml")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	// A writer holds the FIFO open, so a read would wait for data for ever.
	w, err := os.OpenFile(fifo, os.O_RDWR, 0)
	require.NoError(t, err)
	defer w.Close()
	huge := filepath.Join(dir, "huge", "flink-conf.yaml")
	require.NoError(t, os.MkdirAll(filepath.Dir(huge), 0o755))
	f, err := os.Create(huge)
	require.NoError(t, err)
	require.NoError(t, f.Truncate(MaxFileSize+1)) // sparse: no disk used
	require.NoError(t, f.Close())

	for _, tc := range []struct {
		name string
		path string
		want error
		text string
	}{
		{"dev-zero", "/dev/zero", localfile.ErrNotRegular, "a character device"},
		{"fifo", fifo, localfile.ErrNotRegular, "a FIFO"},
		{"folder", dir, localfile.ErrNotRegular, "a folder"},
		{"huge", huge, localfile.ErrTooLarge, "more than the 16777216 allowed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(tc.path, nil)
			require.ErrorIs(t, err, tc.want)
			require.Contains(t, err.Error(), "read flink configuration "+tc.path)
			require.Contains(t, err.Error(), tc.text)
			_, err = LoadSpark(tc.path, nil)
			require.ErrorIs(t, err, tc.want)
			_, err = ReadDynamicFile(tc.path)
			require.ErrorIs(t, err, tc.want)
			require.Contains(t, err.Error(), tc.path)
		})
	}
	// A Hadoop configuration folder holding a FIFO as its core-site.xml.
	hdir := filepath.Join(dir, "hadoop")
	require.NoError(t, os.MkdirAll(hdir, 0o755))
	require.NoError(t, syscall.Mkfifo(filepath.Join(hdir, "core-site.xml"), 0o600))
	hw, err := os.OpenFile(filepath.Join(hdir, "core-site.xml"), os.O_RDWR, 0)
	require.NoError(t, err)
	defer hw.Close()
	_, err = LoadHadoop(hdir)
	require.ErrorIs(t, err, localfile.ErrNotRegular)
	require.Contains(t, err.Error(), filepath.Join(hdir, "core-site.xml"))
}
