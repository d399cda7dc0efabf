package amcli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sync"
	"time"

	"github.com/colinmarc/hdfs/v2"
	"github.com/xres/xres/yarn/amstate"
)

// stateFS is what the AM's state file needs of HDFS.
type stateFS interface {
	ReadFile(name string) ([]byte, error)
	Create(name string) (io.WriteCloser, error)
	Rename(from, to string) error
	Remove(name string) error
}

// hdfsStateFS adapts a colinmarc/hdfs client.
type hdfsStateFS struct{ c *hdfs.Client }

func (h hdfsStateFS) ReadFile(name string) ([]byte, error)       { return h.c.ReadFile(name) }
func (h hdfsStateFS) Create(name string) (io.WriteCloser, error) { return h.c.Create(name) }
func (h hdfsStateFS) Rename(from, to string) error               { return h.c.Rename(from, to) }
func (h hdfsStateFS) Remove(name string) error                   { return h.c.Remove(name) }

// stagingState keeps the AM's state (amstate.File) in the application's
// staging folder, so that a next attempt of the AM, on any node, reads
// what this one knew. A save writes a temporary file beside it and renames
// it over the old one (HDFS rename2 with overwrite: atomic), so a reader
// sees a whole state or the previous one. The HDFS client is dialled on
// first use and kept.
type stagingState struct {
	dir  string
	dial func() (stateFS, func(), error)

	mu    sync.Mutex
	fs    stateFS
	close func()
	op    sync.Mutex // one read or write at a time, also one given up on
}

var _ amstate.Store = (*stagingState)(nil)

func (s *stagingState) path() string { return path.Join(s.dir, amstate.File) }

func (s *stagingState) client() (stateFS, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fs == nil {
		f, closeFS, err := s.dial()
		if err != nil {
			return nil, err
		}
		s.fs, s.close = f, closeFS
	}
	return s.fs, nil
}

// Close closes the HDFS client, if one was dialled.
func (s *stagingState) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.close != nil {
		s.close()
	}
	s.fs, s.close = nil, nil
}

// within runs fn, giving up (fn goes on in the background) when ctx ends:
// the HDFS client takes no context.
func within(ctx context.Context, fn func() error) error {
	ch := make(chan error, 1)
	go func() { ch <- fn() }()
	select {
	case err := <-ch:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Load reads the state file; nil when there is none.
func (s *stagingState) Load(ctx context.Context) ([]byte, error) {
	var data []byte
	err := within(ctx, func() error {
		s.op.Lock()
		defer s.op.Unlock()
		f, err := s.client()
		if err != nil {
			return err
		}
		data, err = f.ReadFile(s.path())
		if errors.Is(err, fs.ErrNotExist) {
			data, err = nil, nil
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", s.path(), err)
	}
	return data, nil
}

// closeWritten closes a file written to HDFS, again while the NameNode
// answers that its last block is still replicating (the client's Close
// returns ErrReplicating until it is; calling it again retries), pausing
// 50 ms and doubling, at most 20 times.
func closeWritten(ctx context.Context, w io.Closer) error {
	pause := 50 * time.Millisecond
	for try := 1; ; try++ {
		err := w.Close()
		if !hdfs.IsErrReplicating(err) || try == 20 {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (still replicating when %w)", err, ctx.Err())
		case <-time.After(pause):
		}
		pause = min(2*pause, 2*time.Second)
	}
}

// Save replaces the state file with data.
func (s *stagingState) Save(ctx context.Context, data []byte) error {
	err := within(ctx, func() error {
		s.op.Lock()
		defer s.op.Unlock()
		f, err := s.client()
		if err != nil {
			return err
		}
		tmp := s.path() + ".tmp"
		if err := f.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		w, err := f.Create(tmp)
		if err != nil {
			return err
		}
		if _, err := w.Write(data); err != nil {
			_ = w.Close()
			return err
		}
		if err := closeWritten(ctx, w); err != nil {
			return err
		}
		return f.Rename(tmp, s.path())
	})
	if err != nil {
		return fmt.Errorf("write %s: %w", s.path(), err)
	}
	return nil
}
