package amcli

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/colinmarc/hdfs/v2"
	"github.com/stretchr/testify/require"
	"github.com/xres/xres/yarn/amstate"
)

// localStateFS is stateFS over a local folder; failRename makes a save
// fail after its temporary file is written, and each file's Close answers
// "replication in progress" replicating times first, as HDFS does while
// the last block is not yet replicated.
type localStateFS struct {
	failRename  bool
	replicating int
}

func (localStateFS) ReadFile(name string) ([]byte, error) { return os.ReadFile(name) }
func (l localStateFS) Create(name string) (io.WriteCloser, error) {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	return &replicatingFile{File: f, left: l.replicating}, err
}

type replicatingFile struct {
	*os.File
	left int
}

func (r *replicatingFile) Close() error {
	if r.left > 0 {
		r.left--
		return &os.PathError{Op: "create", Path: r.Name(), Err: hdfs.ErrReplicating}
	}
	return r.File.Close()
}
func (l localStateFS) Rename(from, to string) error {
	if l.failRename {
		return errors.New("rename refused")
	}
	return os.Rename(from, to)
}
func (localStateFS) Remove(name string) error { return os.Remove(name) }

// The state file in the staging folder: absent reads as nothing, a save
// replaces it whole (a stale temporary file is no obstacle, nor a Close
// that HDFS answers with "replication in progress": on the real cluster
// every save after the first failed so), and a save that fails half-way
// leaves the previous state readable.
func TestStagingState(t *testing.T) {
	dir := t.TempDir()
	fsys := &localStateFS{replicating: 2}
	s := &stagingState{dir: dir, dial: func() (stateFS, func(), error) { return fsys, func() {}, nil }}
	ctx := context.Background()

	data, err := s.Load(ctx)
	require.NoError(t, err)
	require.Nil(t, data, "no state saved yet")

	require.NoError(t, s.Save(ctx, []byte(`{"version":1}`)))
	require.NoError(t, os.WriteFile(filepath.Join(dir, amstate.File+".tmp"), []byte("left over"), 0o600))
	require.NoError(t, s.Save(ctx, []byte(`{"version":1,"app":"a"}`)))
	data, err = s.Load(ctx)
	require.NoError(t, err)
	require.Equal(t, `{"version":1,"app":"a"}`, string(data))

	fsys.failRename = true
	err = s.Save(ctx, []byte(`{"version":1,"app":"b"}`))
	require.ErrorContains(t, err, filepath.Join(dir, amstate.File))
	data, err = s.Load(ctx)
	require.NoError(t, err)
	require.Equal(t, `{"version":1,"app":"a"}`, string(data), "a failed save leaves the old state")
}
