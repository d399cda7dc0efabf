package am

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/yarn"
	"github.com/xres/xres/yarn/amnm"
	"github.com/xres/xres/yarn/security"
)

// A worker started after the tokens were renewed (the replacement of one
// that failed) carries the newest tokens, not those its group's launch
// context was built with.
func TestWithTokensReplacementGetsNewestTokens(t *testing.T) {
	c1, c2 := ctr(2, "nm1"), ctr(3, "nm2")
	var current atomic.Value
	current.Store([]byte("HDTS-first"))
	rm := &fakeRM{register: gpuLimits, steps: []func(yarn.AllocateRequest) (yarn.AllocateResponse, error){
		alloc(c1),
		func(req yarn.AllocateRequest) (yarn.AllocateResponse, error) {
			current.Store([]byte("HDTS-renewed")) // the renewal loop obtained a new token meanwhile
			return complete(done(c1, 1))(req)
		},
		alloc(c2),
		complete(done(c2, 0)),
	}}
	nm := &fakeNM{}
	cfg := testConfig(1, 1)
	cfg.Launch.Tokens = []byte("HDTS-submission")
	a, err := New(cfg, rm, amnm.WithTokens(nm, func() []byte { return current.Load().([]byte) }), nil)
	require.NoError(t, err)
	a.cfg.After = settled(a, a.cfg.After)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := a.Run(ctx)
	require.NoError(t, err)
	require.Equal(t, yarn.StatusSucceeded, res.Status)
	require.Equal(t, []string{c1.ID, c2.ID}, nm.started)
	require.Equal(t, "HDTS-first", string(nm.launches[0].Tokens))
	require.Equal(t, "HDTS-renewed", string(nm.launches[1].Tokens))
	require.Equal(t, cfg.Launch.Commands, nm.launches[1].Commands, "the rest of the launch context is the group's")
}

type tokenBatchFake struct {
	fakeNM
	batches [][]byte
}

func (b *tokenBatchFake) StartContainers(ctx context.Context, cs []yarn.Container, tok security.Token, l yarn.LaunchContext) []error {
	b.batches = append(b.batches, l.Tokens)
	return make([]error, len(cs))
}

func TestWithTokensKeepsBatchStarts(t *testing.T) {
	b := &tokenBatchFake{}
	nm := amnm.WithTokens(b, func() []byte { return []byte("new") })
	bs, ok := nm.(amnm.BatchStarter)
	require.True(t, ok, "a batch-starting amnm.NMClient stays one")
	bs.StartContainers(context.Background(), []yarn.Container{ctr(2, "nm1")}, security.Token{}, yarn.LaunchContext{Tokens: []byte("old")})
	require.Equal(t, [][]byte{[]byte("new")}, b.batches)
	_, ok = amnm.WithTokens(&fakeNM{}, nil).(amnm.BatchStarter)
	require.False(t, ok)
}
