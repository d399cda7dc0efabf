package hdfstoken

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/xres/xres/conf"
	"github.com/xres/xres/yarn"
	"github.com/xres/xres/yarn/internal/logutil"
	"github.com/xres/xres/yarn/security"
)

// Source obtains fresh HDFS delegation tokens: the seam of Renewer.
type Source interface {
	// Obtain returns a new token and when it stops working unless renewed
	// (the earlier of its issue date plus the NameNode's renew interval and
	// its max date).
	Obtain(ctx context.Context) (*security.Token, time.Time, error)
}

// DefaultRenewInterval is the NameNode's dfs.namenode.delegation.token.renew-interval
// default (1 day): KerberosSource assumes it when the NameNode would not
// renew its probe token.
const DefaultRenewInterval = 24 * time.Hour

// KerberosSource obtains tokens from the NameNode of HC as Krb (a keytab
// login), renewable by Renewer (the short name of
// yarn.resourcemanager.principal, as the submission's token). The
// NameNode's renew interval is learnt once, as Flink and Spark do: a probe
// token with the login's own short name (Self) as renewer is renewed once
// and cancelled.
type KerberosSource struct {
	HC      *conf.HadoopConfig
	Krb     *yarn.Kerberos
	Renewer string
	Self    string
	Log     logrus.FieldLogger

	interval time.Duration
}

var _ Source = (*KerberosSource)(nil)

// Obtain gets a new token from the NameNode.
func (s *KerberosSource) Obtain(ctx context.Context) (*security.Token, time.Time, error) {
	if s.interval == 0 {
		s.interval = s.renewInterval(ctx)
	}
	tok, err := Get(ctx, s.HC, s.Krb, s.Renewer, s.Log)
	if err != nil {
		return nil, time.Time{}, err
	}
	id, err := security.ParseDelegationIdentifier(tok.Identifier)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("new HDFS delegation token: %w", err)
	}
	exp := id.IssueDate.Add(s.interval)
	if id.MaxDate.Before(exp) {
		exp = id.MaxDate
	}
	return tok, exp, nil
}

// renewInterval probes the NameNode's renew interval; DefaultRenewInterval
// when it cannot be learnt.
func (s *KerberosSource) renewInterval(ctx context.Context) time.Duration {
	log := logutil.OrDiscard(s.Log)
	probe, err := Get(ctx, s.HC, s.Krb, s.Self, s.Log)
	if err == nil {
		defer func() {
			if err := Cancel(context.WithoutCancel(ctx), s.HC, s.Krb, probe, s.Log); err != nil {
				log.WithError(err).Debug("could not cancel the probe token")
			}
		}()
		var id security.DelegationIdentifier
		if id, err = security.ParseDelegationIdentifier(probe.Identifier); err == nil {
			var exp time.Time
			if exp, err = Renew(ctx, s.HC, s.Krb, probe, s.Log); err == nil && exp.After(id.IssueDate) {
				return exp.Sub(id.IssueDate)
			}
		}
	}
	log.WithError(err).Warnf("could not learn the NameNode's delegation token renew interval; assuming Hadoop's default, %s", DefaultRenewInterval)
	return DefaultRenewInterval
}

// Renewer keeps the workers' credentials fresh: with a Source (the AM
// logged in from a keytab) it obtains a new HDFS delegation token when
// Ratio of the current one's life is over, or RetryBackoff after a failed
// try, and Tokens returns the credentials with the newest token. Without
// one (no keytab) it only warns, once, when Ratio of the token's max
// lifetime is over: nothing can replace it then, and containers started
// after its max date cannot localize their files.
type Renewer struct {
	Source       Source
	Base         *security.Credentials // the workers' credentials at start (never the AMRMToken)
	Ratio        float64               // security.delegation.tokens.renewal.time-ratio
	RetryBackoff time.Duration         // security.delegation.tokens.renewal.retry.backoff
	Now          func() time.Time      // nil: time.Now
	After        func(time.Duration) <-chan time.Time
	Log          logrus.FieldLogger

	mu      sync.Mutex
	creds   *security.Credentials
	current []byte
}

// minWait keeps a token that is already near its end from spinning the loop.
const minWait = time.Second

// Tokens returns the newest credentials (token storage format) for a
// container about to start; nil when there are none.
func (r *Renewer) Tokens() []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.creds == nil {
		r.setLocked(r.Base)
	}
	return r.current
}

func (r *Renewer) setLocked(c *security.Credentials) {
	r.creds = c
	r.current = nil
	if c != nil && len(c.Aliases())+len(c.SecretAliases()) > 0 {
		// Marshal fails only for an unknown format.
		r.current, _ = c.Marshal(security.FormatWritable)
	}
}

func (r *Renewer) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

func (r *Renewer) wait(ctx context.Context, d time.Duration) bool {
	after := r.After
	if after == nil {
		after = time.After
	}
	select {
	case <-ctx.Done():
		return false
	case <-after(d):
		return true
	}
}

// Run obtains tokens (or waits to warn) until ctx ends.
func (r *Renewer) Run(ctx context.Context) {
	log := logutil.OrDiscard(r.Log)
	if r.Source == nil {
		r.warnAtMaxLifetime(ctx, log)
		return
	}
	for ctx.Err() == nil {
		tok, exp, err := r.Source.Obtain(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			log.WithError(err).WithField("retry_in", r.RetryBackoff.String()).Warn("could not obtain a new HDFS delegation token")
			if !r.wait(ctx, r.RetryBackoff) {
				return
			}
			continue
		}
		r.mu.Lock()
		base := r.creds
		if base == nil {
			base = r.Base
		}
		r.setLocked(withToken(base, tok))
		r.mu.Unlock()
		now := r.now()
		next := time.Duration(r.Ratio * float64(exp.Sub(now)))
		if next < minWait {
			next = minWait
		}
		log.WithFields(logrus.Fields{"token": tok.String(), "expires": exp.UTC().Format(time.RFC3339),
			"next": now.Add(next).UTC().Format(time.RFC3339)}).Info("obtained a new HDFS delegation token for the workers")
		if !r.wait(ctx, next) {
			return
		}
	}
}

// warnAtMaxLifetime waits until Ratio of the earliest-ending HDFS token's
// max lifetime is over and warns once.
func (r *Renewer) warnAtMaxLifetime(ctx context.Context, log logrus.FieldLogger) {
	var first *security.DelegationIdentifier
	if r.Base != nil {
		for _, alias := range r.Base.Aliases() {
			t := r.Base.Token(alias)
			if t == nil || t.Kind != security.KindHDFSDelegation {
				continue
			}
			id, err := security.ParseDelegationIdentifier(t.Identifier)
			if err != nil {
				continue
			}
			if first == nil || id.MaxDate.Before(first.MaxDate) {
				first = &id
			}
		}
	}
	if first == nil {
		return
	}
	at := first.IssueDate.Add(time.Duration(r.Ratio * float64(first.MaxDate.Sub(first.IssueDate))))
	if d := at.Sub(r.now()); d > 0 && !r.wait(ctx, d) {
		return
	}
	log.WithField("max_date", first.MaxDate.UTC().Format(time.RFC3339)).Warnf(
		"the application's HDFS delegation token reaches its max lifetime at %s and cannot be replaced: "+
			"without %s and %s the AM obtains no new one, so containers started after then cannot localize their files", first.MaxDate.UTC().Format(time.RFC3339),
		conf.KerberosLoginKeytab.Key, conf.KerberosLoginPrincipal.Key)
}

// withToken is a copy of c with tok in place of the HDFS token for the same
// service (under its alias), or added under its service.
func withToken(c *security.Credentials, tok *security.Token) *security.Credentials {
	out := &security.Credentials{}
	replaced := false
	if c != nil {
		for _, alias := range c.Aliases() {
			t := c.Token(alias)
			if t != nil && t.Kind == tok.Kind && t.MatchesService(tok.Service) {
				t, replaced = tok, true
			}
			out.AddToken(alias, t)
		}
		for _, alias := range c.SecretAliases() {
			out.AddSecret(alias, c.Secret(alias))
		}
	}
	if !replaced {
		out.AddToken(tok.Service, tok)
	}
	return out
}
