package coord

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Issue 12, finding 1: a holder keeps excluding others while the lock
// file is deleted or replaced under it.
func TestLockSurvivesLockFileRemoval(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, lock string)
	}{
		{"deleted", func(t *testing.T, lock string) { require.NoError(t, os.Remove(lock)) }},
		{"replaced", func(t *testing.T, lock string) {
			require.NoError(t, os.WriteFile(lock+".new", nil, 0o644))
			require.NoError(t, os.Rename(lock+".new", lock))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			state := filepath.Join(t.TempDir(), "state")
			holder := newHost(t, state, Owner{})
			other := newHost(t, state, liveOwner(t))
			inside, leave := make(chan struct{}), make(chan struct{})
			held := make(chan error, 1)
			go func() {
				held <- holder.locked(ctxT(t), func() error { close(inside); <-leave; return nil })
			}()
			<-inside
			tc.change(t, holder.lock)
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			_, err := other.Reserve(ctx, "gpu", []string{"a"}, 1, false)
			require.ErrorIs(t, err, ErrLockTimeout, "a second holder got in while the first held the lock")
			close(leave)
			require.NoError(t, <-held)
			_, err = other.Reserve(ctxT(t), "gpu", []string{"a"}, 1, false)
			require.NoError(t, err)
		})
	}
}

// A temp file removed before its rename is written again.
func TestWriteSurvivesTempRemoval(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	h := newHost(t, state, Owner{})
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			tmps, _ := filepath.Glob(filepath.Join(dir, ".state.*.tmp"))
			for _, f := range tmps {
				_ = os.Remove(f)
			}
		}
	}()
	for i := 0; i < 50; i++ {
		_, err := h.Reserve(ctxT(t), "gpu", []string{"a"}, 1, false)
		require.NoError(t, err)
		require.NoError(t, h.Release(ctxT(t), "gpu"))
	}
	close(stop)
	<-done
}
