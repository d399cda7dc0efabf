package hdfstoken

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
	"github.com/stretchr/testify/require"

	"github.com/xres/xres/yarn/security"
)

// fakeClock advances by every wait asked of it; the stopAt-th wait
// cancels the run instead.
type fakeClock struct {
	now    time.Time
	waits  []time.Duration
	stopAt int
	cancel context.CancelFunc
}

func (c *fakeClock) Now() time.Time { return c.now }

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	c.waits = append(c.waits, d)
	if len(c.waits) >= c.stopAt {
		c.cancel()
		return nil
	}
	c.now = c.now.Add(d)
	ch := make(chan time.Time, 1)
	ch <- c.now
	return ch
}

// fakeSource hands out numbered tokens living life from the clock's now,
// failing where fail says.
type fakeSource struct {
	clock *fakeClock
	life  time.Duration
	fail  []bool // per call
	calls int
}

func (s *fakeSource) Obtain(ctx context.Context) (*security.Token, time.Time, error) {
	s.calls++
	if s.calls <= len(s.fail) && s.fail[s.calls-1] {
		return nil, time.Time{}, errors.New("namenode unreachable")
	}
	return hdfsToken(byte(s.calls), s.clock.now, s.clock.now.Add(7*24*time.Hour)), s.clock.now.Add(s.life), nil
}

const nnService = "127.0.0.1:8020"

func hdfsToken(n byte, issue, maxDate time.Time) *security.Token {
	id := security.DelegationIdentifier{Owner: "client", Renewer: "hadoop", IssueDate: issue, MaxDate: maxDate, SequenceNumber: int32(n)}
	return &security.Token{Identifier: id.Marshal(), Password: []byte{'p', n}, Kind: security.KindHDFSDelegation, Service: nnService}
}

// baseCreds are a submission's worker credentials: the first HDFS token
// and a secret.
func baseCreds(issue, maxDate time.Time) *security.Credentials {
	c := &security.Credentials{}
	c.AddToken(nnService, hdfsToken(0, issue, maxDate))
	c.AddSecret("xres.report", []byte("s"))
	return c
}

func newTestRenewer(t *testing.T, src Source, clock *fakeClock, stopAt int) (*Renewer, context.Context, *logtest.Hook) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	clock.stopAt, clock.cancel = stopAt, cancel
	log, hook := logtest.NewNullLogger()
	r := &Renewer{Source: src, Base: baseCreds(clock.now, clock.now.Add(7*24*time.Hour)), Ratio: 0.75, RetryBackoff: time.Hour,
		Now: clock.Now, After: clock.After, Log: log}
	return r, ctx, hook
}

func tokenSeq(t *testing.T, creds []byte) int32 {
	t.Helper()
	c, err := security.ParseCredentials(creds)
	require.NoError(t, err)
	require.Equal(t, []string{nnService}, c.Aliases(), "one HDFS token, under the submission's alias")
	require.Equal(t, []byte("s"), c.Secret("xres.report"), "the secrets pass on")
	id, err := security.ParseDelegationIdentifier(c.Token(nnService).Identifier)
	require.NoError(t, err)
	return id.SequenceNumber
}

// The loop obtains a token at once and then whenever 0.75 of the current
// one's life is over; Tokens always has the newest, in the place of the
// submission's.
func TestRenewerSchedule(t *testing.T) {
	clock := &fakeClock{now: time.UnixMilli(1764780000000)}
	src := &fakeSource{clock: clock, life: 100 * time.Second}
	r, ctx, _ := newTestRenewer(t, src, clock, 3)
	require.Equal(t, int32(0), tokenSeq(t, r.Tokens()), "before the first renewal: the submission's token")
	r.Run(ctx)
	require.Equal(t, []time.Duration{75 * time.Second, 75 * time.Second, 75 * time.Second}, clock.waits)
	require.Equal(t, 3, src.calls)
	require.Equal(t, int32(3), tokenSeq(t, r.Tokens()), "the newest token")
}

// A failed try is retried after the backoff; a token already near its end
// is replaced after a second, not in a spin.
func TestRenewerRetriesAfterBackoff(t *testing.T) {
	clock := &fakeClock{now: time.UnixMilli(1764780000000)}
	src := &fakeSource{clock: clock, life: 100 * time.Second, fail: []bool{true, false, true, true, false}}
	r, ctx, hook := newTestRenewer(t, src, clock, 5)
	r.Run(ctx)
	require.Equal(t, []time.Duration{time.Hour, 75 * time.Second, time.Hour, time.Hour, 75 * time.Second}, clock.waits)
	require.Equal(t, int32(5), tokenSeq(t, r.Tokens()))
	warned := 0
	for _, e := range hook.AllEntries() {
		if e.Level == logrus.WarnLevel {
			warned++
			require.Contains(t, e.Message, "could not obtain a new HDFS delegation token")
		}
	}
	require.Equal(t, 3, warned)

	clock = &fakeClock{now: time.UnixMilli(1764780000000)}
	src = &fakeSource{clock: clock, life: 0}
	r, ctx, _ = newTestRenewer(t, src, clock, 2)
	r.Run(ctx)
	require.Equal(t, []time.Duration{minWait, minWait}, clock.waits)
}

// Without a keytab (no Source) the loop warns once, when 0.75 of the
// token's max lifetime is over, naming the keys; the token stays.
func TestRenewerWarnsAtMaxLifetimeWithoutKeytab(t *testing.T) {
	issue := time.UnixMilli(1764780000000)
	clock := &fakeClock{now: issue.Add(10 * time.Second)}
	r, ctx, hook := newTestRenewer(t, nil, clock, 100)
	r.Base = baseCreds(issue, issue.Add(100*time.Second))
	r.Run(ctx)
	require.Equal(t, []time.Duration{65 * time.Second}, clock.waits)
	var warns []string
	for _, e := range hook.AllEntries() {
		if e.Level == logrus.WarnLevel {
			warns = append(warns, e.Message)
		}
	}
	require.Len(t, warns, 1)
	require.Contains(t, warns[0], "reaches its max lifetime at "+issue.Add(100*time.Second).UTC().Format(time.RFC3339))
	require.Contains(t, warns[0], "security.kerberos.login.keytab")
	require.Equal(t, int32(0), tokenSeq(t, r.Tokens()))

	// Past that point already: at once. No HDFS token: no warning.
	clock = &fakeClock{now: issue.Add(90 * time.Second)}
	r, ctx, hook = newTestRenewer(t, nil, clock, 100)
	r.Base = baseCreds(issue, issue.Add(100*time.Second))
	r.Run(ctx)
	require.Empty(t, clock.waits)
	require.Len(t, hook.AllEntries(), 1)
	r.Base = &security.Credentials{}
	hook.Reset()
	r.Run(ctx)
	require.Empty(t, hook.AllEntries())
}
