package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// ErrNotLoopback is returned by NewProxy for a listen address outside loopback: the proxy
// forwards anything that reaches it, so it never listens where another host could reach it.
var ErrNotLoopback = errors.New("proxy listen address is not loopback")

// proxyDialTimeout bounds the proxy's dial of its target.
const proxyDialTimeout = 10 * time.Second

// proxyQueue is how many chunks a direction holds between its reader and its writer (at most
// proxyChunk bytes each): the bytes a Delay keeps in flight before the sender feels it.
const (
	proxyQueue = 16
	proxyChunk = 32 << 10
)

// Proxy is a TCP fault proxy for integration tests: put it between a client (the AM) and a
// server (the RM's scheduler port, a NodeManager) and switch its mode to cause the fault a
// real network would, without root networking. Each accepted connection is one link:
//
//	client ──► [listen] reader ─queue─► writer ──► target     (to target)
//	client ◄── writer ◄─queue─ reader [dial]  ◄── target     (to client)
//
// A reader stamps each chunk it reads with the time it may be delivered (now, or now+d under
// Delay); the writer waits for that time, then for the network to be up (not Blackhole),
// then writes. End of stream is passed on as a half-close (CloseWrite); an error on either
// side resets both sides of the link (RST), as the far end of a broken connection sees it.
//
// Modes, one at a time, switched at run time (all methods are safe for concurrent use):
//
//   - Pass (the default): bytes go through as they come.
//   - Delay(d): every chunk, each direction, of old and new links, is delivered d after the
//     proxy read it, so a request-response round trip gains at least 2d. Delay is latency,
//     not bandwidth: chunks are pipelined, in order.
//   - Refuse: a new connection is reset (RST) at once after accept. The kernel completes the
//     handshake before accept, so the peer's connect usually succeeds and its first read or
//     write fails with ECONNRESET ("connection reset by peer"); if the RST arrives before
//     the connect returned, the connect itself fails with ECONNRESET. A write issued before
//     the RST arrives may succeed; its bytes are lost. Open links keep working as under
//     Pass. This is not ECONNREFUSED: for a closed port, Close the proxy and start a new one
//     on the same address later.
//   - Blackhole: a partition. Nothing is forwarded either way, on open links and on new ones
//     (which are accepted, and whose target is not dialled until the partition heals);
//     nothing is closed. The proxy stops reading, so a sender's bytes wait in the socket
//     buffers (once they are full its writes block; a chunk the proxy had already read waits
//     in the proxy), and a client's call hangs until its own timeout. When the mode leaves
//     Blackhole, links carry on and the bytes sent meanwhile are delivered late, as TCP's
//     retransmission would deliver them after a partition shorter than the retransmission
//     timeout. The proxy's kernel still answers TCP keepalive probes, so a keepalive never
//     notices the partition: to model a partition long enough that a real network would
//     have broken the connections, call ResetConns before healing.
//
// A link whose target cannot be dialled (within 10 s) is reset, as under Refuse.
//
// ResetConns is an action, not a mode: it resets every open link now and leaves the mode as
// it was.
type Proxy struct {
	ln     net.Listener
	target string

	mu      sync.Mutex
	mode    proxyMode
	delay   time.Duration
	changed chan struct{} // closed and replaced on every mode change
	links   map[*link]struct{}
	closed  bool

	wg sync.WaitGroup // the accept loop and every link's goroutines

	accepted, refused, reset, dialFailed atomic.Int64
	toTarget, toClient                   atomic.Int64
}

type proxyMode int

const (
	modePass proxyMode = iota
	modeDelay
	modeRefuse
	modeBlackhole
)

func (m proxyMode) String() string {
	switch m {
	case modePass:
		return "pass"
	case modeDelay:
		return "delay"
	case modeRefuse:
		return "refuse"
	case modeBlackhole:
		return "blackhole"
	}
	return fmt.Sprintf("mode(%d)", int(m))
}

// Stats counts what a Proxy did since it started. A byte is counted just after its write
// returns, so a peer may see bytes a moment before Stats does.
type Stats struct {
	Accepted   int64 // connections accepted, the refused ones included
	Refused    int64 // connections reset at once under Refuse
	Reset      int64 // links reset by ResetConns
	DialFailed int64 // links reset because the target could not be dialled
	Open       int64 // links open now, held ones (Blackhole) included
	ToTarget   int64 // bytes delivered to the target
	ToClient   int64 // bytes delivered to clients
}

func (s Stats) String() string {
	return fmt.Sprintf("accepted=%d refused=%d reset=%d dial_failed=%d open=%d "+
		"to_target=%dB to_client=%dB", s.Accepted, s.Refused, s.Reset, s.DialFailed, s.Open, s.ToTarget, s.ToClient)
}

// StartProxy starts a Proxy from listen (a loopback host:port; port 0 picks one) to target
// for the test, and closes it, logging its Stats, when the test ends.
func StartProxy(t testing.TB, listen, target string) *Proxy {
	t.Helper()
	p, err := NewProxy(listen, target)
	if err != nil {
		t.Fatalf("start proxy: %v", err)
	}
	t.Cleanup(func() {
		t.Logf("%s: %s", p, p.Stats())
		if err := p.Close(); err != nil {
			t.Errorf("close %s: %v", p, err)
		}
	})
	return p
}

// NewProxy listens on listen (a loopback host:port: 127.0.0.0/8, ::1 or localhost; port 0
// picks one) and forwards each connection to target, in Pass mode, until Close.
func NewProxy(listen, target string) (*Proxy, error) {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return nil, fmt.Errorf("proxy listen address %q: %w", listen, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("%w: %q", ErrNotLoopback, listen)
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, fmt.Errorf("proxy listen: %w", err)
	}
	p := &Proxy{ln: ln, target: target, changed: make(chan struct{}), links: map[*link]struct{}{}}
	p.wg.Add(1)
	go p.acceptLoop()
	return p, nil
}

// Addr is the address the proxy listens on, for the client to dial.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// String names the proxy's addresses and mode, for logs.
func (p *Proxy) String() string {
	p.mu.Lock()
	m, d := p.mode, p.delay
	p.mu.Unlock()
	mode := m.String()
	if m == modeDelay {
		mode = fmt.Sprintf("delay %s", d)
	}
	return fmt.Sprintf("proxy %s->%s (%s)", p.Addr(), p.target, mode)
}

// Pass forwards bytes as they come (the default); it heals a Blackhole.
func (p *Proxy) Pass() { p.setMode(modePass, 0) }

// Delay delivers every chunk, each direction, d after the proxy read it.
func (p *Proxy) Delay(d time.Duration) { p.setMode(modeDelay, d) }

// Refuse resets new connections at once after accept; open links keep working.
// (The peer sees ECONNRESET from its connect, if the RST came before the connect returned,
// or else from its first read or write.)
func (p *Proxy) Refuse() { p.setMode(modeRefuse, 0) }

// Blackhole stops all forwarding, on open and new links, without closing anything.
func (p *Proxy) Blackhole() { p.setMode(modeBlackhole, 0) }

func (p *Proxy) setMode(m proxyMode, d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mode, p.delay = m, d
	close(p.changed)
	p.changed = make(chan struct{})
}

// ResetConns resets every open link now, both sides (SetLinger(0), then Close: each peer's
// next read or write fails with ECONNRESET once its pending bytes are read), held links
// included, and returns how many it reset. The mode stays as it was.
func (p *Proxy) ResetConns() int {
	n := 0
	for _, l := range p.snapshot() {
		if l.abort() {
			n++
		}
	}
	p.reset.Add(int64(n))
	return n
}

// Stats returns the proxy's counts so far.
func (p *Proxy) Stats() Stats {
	p.mu.Lock()
	open := len(p.links)
	p.mu.Unlock()
	return Stats{
		Accepted:   p.accepted.Load(),
		Refused:    p.refused.Load(),
		Reset:      p.reset.Load(),
		DialFailed: p.dialFailed.Load(),
		Open:       int64(open),
		ToTarget:   p.toTarget.Load(),
		ToClient:   p.toClient.Load(),
	}
}

// Close stops accepting (the port is closed: a dial gets ECONNREFUSED), resets every open
// link and returns once all the proxy's goroutines have ended. A second Close returns nil.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	p.mu.Unlock()
	err := p.ln.Close()
	for _, l := range p.snapshot() {
		l.abort()
	}
	p.wg.Wait()
	if err != nil {
		return fmt.Errorf("close proxy listener: %w", err)
	}
	return nil
}

func (p *Proxy) snapshot() []*link {
	p.mu.Lock()
	defer p.mu.Unlock()
	ls := make([]*link, 0, len(p.links))
	for l := range p.links {
		ls = append(ls, l)
	}
	return ls
}

func (p *Proxy) acceptLoop() {
	defer p.wg.Done()
	var backoff time.Duration
	for {
		c, err := p.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// A transient failure (EMFILE and the like): back off as net/http does.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			time.Sleep(backoff)
			continue
		}
		backoff = 0
		p.accepted.Add(1)
		ctx, cancel := context.WithCancel(context.Background())
		l := &link{proxy: p, client: c, ctx: ctx, cancel: cancel}
		if !p.track(l) {
			cancel()
			resetConn(c)
			continue
		}
		go p.serve(l)
	}
}

// track registers a new link and its goroutine, unless the proxy is closed or refusing.
func (p *Proxy) track(l *link) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	if p.mode == modeRefuse {
		p.refused.Add(1)
		return false
	}
	p.links[l] = struct{}{}
	p.wg.Add(1)
	return true
}

func (p *Proxy) untrack(l *link) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.links, l)
}

// flowing waits while the proxy is blackholed; false when the link ended meanwhile.
func (p *Proxy) flowing(l *link) bool {
	for {
		p.mu.Lock()
		m, changed := p.mode, p.changed
		p.mu.Unlock()
		if m != modeBlackhole {
			return true
		}
		select {
		case <-changed:
		case <-l.ctx.Done():
			return false
		}
	}
}

// deliverAt is when a chunk read now may be delivered.
func (p *Proxy) deliverAt() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	if p.mode == modeDelay {
		return now.Add(p.delay)
	}
	return now
}

// serve runs one link: it waits out a Blackhole, dials the target and pumps both directions
// until both have ended or the link is reset.
func (p *Proxy) serve(l *link) {
	defer p.wg.Done()
	if !p.flowing(l) {
		return
	}
	// The dial ends with the link: a ResetConns or Close does not wait for it.
	ctx, cancel := context.WithTimeout(l.ctx, proxyDialTimeout)
	var d net.Dialer
	target, err := d.DialContext(ctx, "tcp", p.target)
	cancel()
	if err != nil {
		p.dialFailed.Add(1)
		l.abort()
		return
	}
	if !l.setTarget(target) {
		return
	}
	var dirs sync.WaitGroup
	dirs.Add(2)
	go func() { defer dirs.Done(); p.pump(l, l.client, target, &p.toTarget) }()
	go func() { defer dirs.Done(); p.pump(l, target, l.client, &p.toClient) }()
	dirs.Wait()
	l.finish()
}

// chunk is bytes read from one side, with the time they may be written to the other.
type chunk struct {
	b  []byte
	at time.Time
}

// pump copies src to dst: a reader goroutine fills the queue, this one writes it out. It
// returns once both have ended: the writer ends only when src ended cleanly (the reader has
// returned) or when the link ended (which unblocks the reader).
func (p *Proxy) pump(l *link, src, dst net.Conn, delivered *atomic.Int64) {
	q := make(chan chunk, proxyQueue)
	readerDone := make(chan struct{})
	defer func() { <-readerDone }()
	go func() {
		defer close(readerDone)
		defer close(q)
		buf := make([]byte, proxyChunk)
		for p.flowing(l) {
			n, err := src.Read(buf)
			if n > 0 {
				c := chunk{b: append([]byte(nil), buf[:n]...), at: p.deliverAt()}
				select {
				case q <- c:
				case <-l.ctx.Done():
					return
				}
			}
			if errors.Is(err, io.EOF) {
				return
			}
			if err != nil {
				l.abort()
				return
			}
		}
	}()
	for {
		var c chunk
		var ok bool
		select {
		case c, ok = <-q:
		case <-l.ctx.Done():
			return
		}
		if !ok {
			// src ended cleanly: pass the half-close on (a no-op error if the link is reset).
			if cw, isTCP := dst.(interface{ CloseWrite() error }); isTCP {
				cw.CloseWrite()
			}
			return
		}
		if wait := time.Until(c.at); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-l.ctx.Done():
				t.Stop()
				return
			}
		}
		if !p.flowing(l) {
			return
		}
		n, err := dst.Write(c.b)
		delivered.Add(int64(n))
		if err != nil {
			l.abort()
			return
		}
	}
}

// link is one client connection and, once dialled, its target connection.
type link struct {
	proxy  *Proxy
	client net.Conn
	ctx    context.Context // done when the link ends, by reset or by finish
	cancel context.CancelFunc

	mu     sync.Mutex
	target net.Conn // nil until dialled
	ended  bool
}

// setTarget attaches the dialled target; false (and the target reset) if the link ended.
func (l *link) setTarget(c net.Conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ended {
		resetConn(c)
		return false
	}
	l.target = c
	return true
}

// abort resets both sides of the link; false if it had already ended.
func (l *link) abort() bool { return l.end(resetConn) }

// finish closes both sides of a link whose directions both ended cleanly.
func (l *link) finish() { l.end(func(c net.Conn) { c.Close() }) }

func (l *link) end(closeConn func(net.Conn)) bool {
	l.mu.Lock()
	if l.ended {
		l.mu.Unlock()
		return false
	}
	l.ended = true
	target := l.target
	l.mu.Unlock()
	l.cancel()
	l.proxy.untrack(l)
	closeConn(l.client)
	if target != nil {
		closeConn(target)
	}
	return true
}

// resetConn closes c with an RST rather than a FIN (SO_LINGER 0).
func resetConn(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	c.Close()
}
