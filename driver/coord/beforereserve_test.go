package coord

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/driver"
)

// The host's state records a reservation only once the launcher can let
// it go (its signal subscription, driver.WithBeforeReserve): ReservePlaced
// waits for it under its lock, after its read and choice, before its
// write; a dry run does not wait for it at all.
func TestReserveWaitsBeforeWriting(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	h := newHost(t, state, liveOwner(t))
	other := newHost(t, state, liveOwner(t))
	var heldWhenCalled []Holder
	calls := 0
	ctx := driver.WithBeforeReserve(ctxT(t), func() {
		calls++
		var err error
		heldWhenCalled, err = other.Holders()
		require.NoError(t, err)
	})
	_, err := h.ReserveCandidates(ctx, "gpu", []driver.Candidate{{Key: "GPU-a"}, {Key: "GPU-b"}}, 1, true)
	require.NoError(t, err)
	require.Zero(t, calls, "a dry run holds nothing and does not wait")
	got, err := h.ReserveCandidates(ctx, "gpu", []driver.Candidate{{Key: "GPU-a"}, {Key: "GPU-b"}}, 1, false)
	require.NoError(t, err)
	require.Equal(t, []string{"GPU-a"}, got)
	require.Equal(t, 1, calls)
	require.Empty(t, heldWhenCalled, "nothing recorded before the wait")
	held, err := other.Holders()
	require.NoError(t, err)
	require.Len(t, held, 1, "recorded once it returned")
	var _ driver.WriteGated = h
}
