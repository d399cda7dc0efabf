package submit

import (
	"context"
	"io"
	"os"
)

// RemoteFile is an opened HDFS file read at offsets (what aggregated log
// readers need: a TFile is read from its tail).
type RemoteFile interface {
	io.ReaderAt
	io.Closer
	Size() int64
}

// ReadFS is the reading side of an HDFS client (am logs lists and reads
// aggregated log files with it). The FS made by NewHDFS implements it.
type ReadFS interface {
	ReadDir(ctx context.Context, dir string) ([]os.FileInfo, error)
	Open(ctx context.Context, name string) (RemoteFile, error)
}

var _ ReadFS = hdfsFS{}

// ReadDir lists dir (os.FileInfo names are base names).
func (h hdfsFS) ReadDir(ctx context.Context, dir string) ([]os.FileInfo, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return h.c.ReadDir(dir)
}

// Open opens name for reading at offsets.
func (h hdfsFS) Open(ctx context.Context, name string) (RemoteFile, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f, err := h.c.Open(name)
	if err != nil {
		return nil, err
	}
	return hdfsFile{f}, nil
}

type hdfsFile struct {
	f interface {
		io.ReaderAt
		io.Closer
		Stat() os.FileInfo
	}
}

func (h hdfsFile) ReadAt(p []byte, off int64) (int, error) { return h.f.ReadAt(p, off) }
func (h hdfsFile) Close() error                            { return h.f.Close() }
func (h hdfsFile) Size() int64                             { return h.f.Stat().Size() }
