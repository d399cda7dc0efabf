package coord

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/driver"
)

// lastPlacement picks the last amount free candidates and records what
// it was offered.
type lastPlacement struct {
	offered [][]string
	broken  bool // return a key that was not offered
}

func (p *lastPlacement) Pick(free []driver.Candidate, amount int) []driver.Candidate {
	keys := make([]string, len(free))
	for i, c := range free {
		keys[i] = c.Key
	}
	p.offered = append(p.offered, keys)
	if p.broken {
		return []driver.Candidate{{Key: "GPU-9"}}
	}
	return free[len(free)-amount:]
}

func (p *lastPlacement) Describe([]string) map[string]string { return nil }

// A Placement chooses among the candidates that are free under the lock
// (never a held one); partitions leave it out; a Placement that returns
// something it was not offered gets the first free.
func TestReservePlaced(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	a, b := newHost(t, state, liveOwner(t)), newHost(t, state, liveOwner(t))
	gpus := []driver.Candidate{{Key: "GPU-0"}, {Key: "GPU-1"}, {Key: "GPU-2"}, {Key: "GPU-3"}}
	got, err := a.ReserveCandidates(ctxT(t), "gpu", gpus, 1, false)
	require.NoError(t, err)
	require.Equal(t, []string{"GPU-0"}, got)

	p := &lastPlacement{}
	got, err = b.ReservePlaced(ctxT(t), "gpu", gpus, 2, false, p)
	require.NoError(t, err)
	require.Equal(t, []string{"GPU-2", "GPU-3"}, got)
	require.Equal(t, [][]string{{"GPU-1", "GPU-2", "GPU-3"}}, p.offered, "only the free ones, in preference order")

	// Dry run: the same choice, nothing recorded.
	p = &lastPlacement{}
	got, err = a.ReservePlaced(ctxT(t), "gpu", gpus, 1, true, p)
	require.NoError(t, err)
	require.Equal(t, []string{"GPU-1"}, got)

	// Exactly as many free as asked: no choice to make.
	p = &lastPlacement{}
	got, err = a.ReservePlaced(ctxT(t), "gpu", gpus, 1, false, p)
	require.NoError(t, err)
	require.Equal(t, []string{"GPU-1"}, got)
	require.Empty(t, p.offered)

	// Too few: the usual error, naming the holders.
	_, err = a.ReservePlaced(ctxT(t), "gpu", gpus, 1, false, p)
	require.ErrorIs(t, err, driver.ErrNotEnoughDevices)

	// MIG instances: the Placement is not asked.
	state2 := filepath.Join(t.TempDir(), "state")
	c := newHost(t, state2, liveOwner(t))
	p = &lastPlacement{}
	got, err = c.ReservePlaced(ctxT(t), "mig", migs, 2, false, p)
	require.NoError(t, err)
	require.Equal(t, []string{"MIG-00", "MIG-01"}, got)
	require.Empty(t, p.offered)

	// A broken Placement: the first free.
	state3 := filepath.Join(t.TempDir(), "state")
	d := newHost(t, state3, liveOwner(t))
	got, err = d.ReservePlaced(ctxT(t), "gpu", gpus, 2, false, &lastPlacement{broken: true})
	require.NoError(t, err)
	require.Equal(t, []string{"GPU-0", "GPU-1"}, got)
}

var _ driver.PlacingReserver = (*Host)(nil)
