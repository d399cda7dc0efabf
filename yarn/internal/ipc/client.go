package ipc

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/proto"
)

// DefaultIdleTimeout is how long an unused connection is kept before the
// next call dials afresh (Hadoop's ipc.client.connection.maxidletime; the
// server drops idle connections a little later).
const DefaultIdleTimeout = 10 * time.Second

// Client keeps one Conn to one address: it dials on first use, again after
// the connection broke, and again when it sat idle longer than IdleTimeout
// (so a call never lands on a socket the server is about to drop). It does
// not retry calls; failover and retries belong to the caller, which knows
// which calls are safe to repeat.
type Client struct {
	cfg  Config
	idle time.Duration

	mu     sync.Mutex
	conn   *Conn
	closed bool
	// Calls finish without the lock: put stores lastUse, then drops
	// inflight; get reads them in the other order, so inflight == 0 there
	// means lastUse is the last call's end.
	lastUse  atomic.Int64 // unix nanoseconds
	inflight atomic.Int64
}

// NewClient returns a Client for cfg. idle <= 0 uses DefaultIdleTimeout.
func NewClient(cfg Config, idle time.Duration) *Client {
	if idle <= 0 {
		idle = DefaultIdleTimeout
	}
	return &Client{cfg: cfg, idle: idle}
}

// Addr returns the server address.
func (c *Client) Addr() string { return c.cfg.Addr }

// Call runs one call, dialing first when needed.
func (c *Client) Call(ctx context.Context, method string, req, resp proto.Message) error {
	conn, err := c.get(ctx)
	if err != nil {
		return err
	}
	defer c.put()
	return conn.Call(ctx, method, req, resp)
}

func (c *Client) get(ctx context.Context) (*Conn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, fmt.Errorf("ipc %s: %w", c.cfg.Addr, ErrClosed)
	}
	if c.conn != nil && (c.conn.Err() != nil || (c.inflight.Load() == 0 && time.Since(time.Unix(0, c.lastUse.Load())) > c.idle)) {
		_ = c.conn.Close()
		c.conn = nil
	}
	if c.conn == nil {
		conn, err := Dial(ctx, c.cfg)
		if err != nil {
			return nil, err
		}
		c.conn = conn
	}
	c.inflight.Add(1)
	return c.conn, nil
}

func (c *Client) put() {
	c.lastUse.Store(time.Now().UnixNano())
	c.inflight.Add(-1)
}

// Reset drops the current connection, so the next call dials again (used
// after the credentials changed).
func (c *Client) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn != nil && c.inflight.Load() == 0 {
		_ = c.conn.Close()
		c.conn = nil
	}
}

// Close closes the connection; later calls fail with ErrClosed.
func (c *Client) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	if c.conn != nil {
		err := c.conn.Close()
		c.conn = nil
		return err
	}
	return nil
}
