package submit

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/colinmarc/hdfs/v2"
	"github.com/stretchr/testify/require"
)

func TestCloseReplicated(t *testing.T) {
	replicating := &os.PathError{Op: "create", Path: "/x", Err: hdfs.ErrReplicating}
	t.Run("retries until complete", func(t *testing.T) {
		calls := 0
		err := closeReplicated(context.Background(), func() error {
			calls++
			if calls < 3 {
				return replicating
			}
			return nil
		})
		require.NoError(t, err)
		require.Equal(t, 3, calls)
	})
	t.Run("other errors are not retried", func(t *testing.T) {
		calls := 0
		err := closeReplicated(context.Background(), func() error { calls++; return errors.New("lease expired") })
		require.EqualError(t, err, "lease expired")
		require.Equal(t, 1, calls)
	})
	t.Run("gives up with the context", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		err := closeReplicated(ctx, func() error { return replicating })
		require.True(t, hdfs.IsErrReplicating(errors.Unwrap(err)) || errors.Is(err, context.DeadlineExceeded))
		require.ErrorIs(t, err, context.DeadlineExceeded)
	})
}
