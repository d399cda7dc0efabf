package yarn

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	"google.golang.org/protobuf/proto"

	"github.com/xres/xres/yarn/internal/ipc"
)

// DialFunc opens a TCP connection; (*net.Dialer).DialContext fits.
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// Backoff bounds retries. A call goes to the current address; on a standby
// answer or a connection failure it moves to the next address, and after
// each full round over the addresses it sleeps (Base, doubling up to Max).
// It gives up after Attempts tries in all.
type Backoff struct {
	Attempts int           // total tries; 0 means 3 per address
	Base     time.Duration // first sleep; 0 means 200 ms
	Max      time.Duration // longest sleep; 0 means 5 s
}

func (b Backoff) withDefaults(n int) Backoff {
	if b.Attempts <= 0 {
		b.Attempts = 3 * n
	}
	if b.Base <= 0 {
		b.Base = 200 * time.Millisecond
	}
	if b.Max <= 0 {
		b.Max = 5 * time.Second
	}
	return b
}

// endpoints is one logical service behind one or more addresses.
type endpoints struct {
	addrs   []string
	clients []*ipc.Client
	backoff Backoff
	log     logrus.FieldLogger
	giveUp  error // wrapped into the final error, e.g. ErrNoActiveRM

	mu  sync.Mutex
	cur int
}

func newEndpoints(addrs []string, cfg func(addr string) ipc.Config, idle time.Duration, b Backoff, log logrus.FieldLogger, giveUp error) (*endpoints, error) {
	if len(addrs) == 0 {
		return nil, errors.New("no server address given")
	}
	e := &endpoints{addrs: addrs, backoff: b.withDefaults(len(addrs)), log: log, giveUp: giveUp}
	for _, a := range addrs {
		if _, _, err := net.SplitHostPort(a); err != nil {
			return nil, fmt.Errorf("server address %q: %w", a, err)
		}
		e.clients = append(e.clients, ipc.NewClient(cfg(a), idle))
	}
	return e, nil
}

// retryable says whether another address, or the same one later, may
// succeed.
func retryable(err error) bool {
	return errors.Is(err, ipc.ErrStandby) || errors.Is(err, ipc.ErrConnection) || errors.Is(err, ipc.ErrRetriable)
}

func (e *endpoints) call(ctx context.Context, method string, req, resp proto.Message) error {
	var last error
	delay := e.backoff.Base
	for attempt := 1; ; attempt++ {
		e.mu.Lock()
		i := e.cur
		e.mu.Unlock()
		err := e.clients[i].Call(ctx, method, req, resp)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			if errors.Is(err, ctx.Err()) {
				return err
			}
			return fmt.Errorf("call %s: %w (last error: %v)", method, ctx.Err(), err)
		}
		if !retryable(err) {
			return err
		}
		last = err
		if attempt >= e.backoff.Attempts {
			break
		}
		next := (i + 1) % len(e.addrs)
		e.mu.Lock()
		if e.cur == i {
			e.cur = next
		}
		e.mu.Unlock()
		e.log.WithFields(logrus.Fields{"method": method, "addr": e.addrs[i], "next": e.addrs[next], "attempt": attempt}).
			WithError(err).Info("yarn call failed, trying next address")
		if next == 0 || errors.Is(err, ipc.ErrRetriable) {
			t := time.NewTimer(delay)
			select {
			case <-ctx.Done():
				t.Stop()
				return fmt.Errorf("call %s: %w (last error: %v)", method, ctx.Err(), last)
			case <-t.C:
			}
			delay = min(2*delay, e.backoff.Max)
		}
	}
	if e.giveUp != nil {
		return fmt.Errorf("call %s: %w among [%s] after %d attempts: %w", method, e.giveUp, strings.Join(e.addrs, " "), e.backoff.Attempts, last)
	}
	return fmt.Errorf("call %s: gave up on [%s] after %d attempts: %w", method, strings.Join(e.addrs, " "), e.backoff.Attempts, last)
}

func (e *endpoints) close() error {
	var errs []error
	for _, c := range e.clients {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}
