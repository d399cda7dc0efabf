package harness

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// ioWait bounds a read or dial that should succeed; blackholeWait is how long a read waits to
// show that nothing comes.
const (
	ioWait        = 5 * time.Second
	blackholeWait = 300 * time.Millisecond
)

// echoServer echoes every connection back until EOF, then closes it.
type echoServer struct {
	ln       net.Listener
	accepted atomic.Int64
	ended    chan error // how each connection's read ended: nil for EOF
	wg       sync.WaitGroup
	mu       sync.Mutex
	conns    map[net.Conn]struct{}
}

func startEcho(t *testing.T) *echoServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := &echoServer{ln: ln, ended: make(chan error, 256), conns: map[net.Conn]struct{}{}}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.accepted.Add(1)
			s.mu.Lock()
			s.conns[c] = struct{}{}
			s.mu.Unlock()
			s.wg.Add(1)
			go s.serve(c)
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		s.mu.Lock()
		for c := range s.conns {
			c.Close()
		}
		s.mu.Unlock()
		s.wg.Wait()
	})
	return s
}

func (s *echoServer) serve(c net.Conn) {
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		c.Close()
	}()
	buf := make([]byte, 4096)
	for {
		n, err := c.Read(buf)
		if n > 0 {
			if _, werr := c.Write(buf[:n]); werr != nil {
				err = werr
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = nil
			}
			select {
			case s.ended <- err:
			default:
			}
			return
		}
	}
}

func (s *echoServer) addr() string { return s.ln.Addr().String() }

// noLeaks fails the test if, after its cleanups, more goroutines run than at its start.
// Call it first, so that its cleanup runs last.
func noLeaks(t *testing.T) {
	base := runtime.NumGoroutine()
	t.Cleanup(func() {
		deadline := time.Now().Add(ioWait)
		for runtime.NumGoroutine() > base && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if n := runtime.NumGoroutine(); n > base {
			buf := make([]byte, 1<<20)
			buf = buf[:runtime.Stack(buf, true)]
			t.Errorf("%d goroutines at the end, %d at the start:\n%s", n, base, buf)
		}
	})
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, ioWait)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

func send(t *testing.T, c net.Conn, msg string) {
	t.Helper()
	require.NoError(t, c.SetWriteDeadline(time.Now().Add(ioWait)))
	_, err := io.WriteString(c, msg)
	require.NoError(t, err)
}

// receive reads len(want) bytes within d.
func receive(c net.Conn, n int, d time.Duration) (string, error) {
	if err := c.SetReadDeadline(time.Now().Add(d)); err != nil {
		return "", err
	}
	buf := make([]byte, n)
	n, err := io.ReadFull(c, buf)
	return string(buf[:n]), err
}

func roundTrip(t *testing.T, c net.Conn, msg string) {
	t.Helper()
	send(t, c, msg)
	got, err := receive(c, len(msg), ioWait)
	require.NoError(t, err)
	require.Equal(t, msg, got)
}

// resetErr is the error of a dial, or else of the new connection's first read: a connection
// the proxy resets at once may fail either (ECONNRESET in both).
func resetErr(t *testing.T, addr string) error {
	c, err := net.DialTimeout("tcp", addr, ioWait)
	if err != nil {
		return err
	}
	t.Cleanup(func() { c.Close() })
	return readErr(c)
}

// readErr is the error of c's next read (within ioWait).
func readErr(c net.Conn) error {
	_, err := receive(c, 1, ioWait)
	return err
}

// bytesSettle waits for the byte counts to reach what the client saw go through (a count
// follows its write).
func bytesSettle(t *testing.T, p *Proxy, toTarget, toClient int64) {
	t.Helper()
	require.Eventually(t, func() bool {
		s := p.Stats()
		return s.ToTarget == toTarget && s.ToClient == toClient
	}, ioWait, time.Millisecond)
}

func TestProxyPass(t *testing.T) {
	noLeaks(t)
	echo := startEcho(t)
	p := StartProxy(t, "127.0.0.1:0", echo.addr())
	c := dial(t, p.Addr())
	roundTrip(t, c, "hello")
	roundTrip(t, c, "again")

	bytesSettle(t, p, 10, 10)
	s := p.Stats()
	require.Equal(t, int64(1), s.Accepted)
	require.Equal(t, int64(1), s.Open)
	require.Equal(t, int64(1), echo.accepted.Load())
}

func TestProxyDelay(t *testing.T) {
	const d = 100 * time.Millisecond
	for _, tc := range []struct {
		name     string
		existing bool // the connection is opened before Delay
	}{
		{"existing connection", true},
		{"new connection", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			noLeaks(t)
			echo := startEcho(t)
			p := StartProxy(t, "127.0.0.1:0", echo.addr())
			var c net.Conn
			if tc.existing {
				c = dial(t, p.Addr())
				roundTrip(t, c, "warm")
			}
			p.Delay(d)
			require.Contains(t, p.String(), "delay 100ms")
			if !tc.existing {
				c = dial(t, p.Addr())
			}
			start := time.Now()
			roundTrip(t, c, "slow")
			// Each direction waits d: a round trip takes at least 2d (no upper bound asserted).
			require.GreaterOrEqual(t, time.Since(start), 2*d)
		})
	}
}

func TestProxyRefuse(t *testing.T) {
	noLeaks(t)
	echo := startEcho(t)
	p := StartProxy(t, "127.0.0.1:0", echo.addr())
	old := dial(t, p.Addr())
	roundTrip(t, old, "before")

	p.Refuse()
	// The kernel completes the handshake, then the proxy resets the connection.
	require.ErrorIs(t, resetErr(t, p.Addr()), syscall.ECONNRESET)
	roundTrip(t, old, "still works")

	s := p.Stats()
	require.Equal(t, int64(2), s.Accepted)
	require.Equal(t, int64(1), s.Refused)
	require.Equal(t, int64(1), echo.accepted.Load(), "a refused connection never reaches the target")

	p.Pass()
	roundTrip(t, dial(t, p.Addr()), "after")
}

func TestProxyBlackhole(t *testing.T) {
	noLeaks(t)
	echo := startEcho(t)
	p := StartProxy(t, "127.0.0.1:0", echo.addr())
	old := dial(t, p.Addr())
	roundTrip(t, old, "before")

	bytesSettle(t, p, 6, 6)
	p.Blackhole()
	send(t, old, "late-old")
	_, err := receive(old, 1, blackholeWait)
	require.ErrorIs(t, err, os.ErrDeadlineExceeded, "an open connection hangs")

	held := dial(t, p.Addr()) // accepted, but held
	send(t, held, "late-new")
	_, err = receive(held, 1, blackholeWait)
	require.ErrorIs(t, err, os.ErrDeadlineExceeded, "a new connection hangs")

	s := p.Stats()
	require.Equal(t, int64(6), s.ToTarget, "nothing reached the target")
	require.Equal(t, int64(2), s.Open, "nothing was closed")
	require.Equal(t, int64(1), echo.accepted.Load(), "the held connection's target is not dialled yet")

	// Healing delivers what was sent during the partition, late, on both connections.
	p.Pass()
	got, err := receive(old, len("late-old"), ioWait)
	require.NoError(t, err)
	require.Equal(t, "late-old", got)
	got, err = receive(held, len("late-new"), ioWait)
	require.NoError(t, err)
	require.Equal(t, "late-new", got)
	require.Equal(t, int64(2), echo.accepted.Load())
}

func TestProxyResetConns(t *testing.T) {
	for _, tc := range []struct {
		name      string
		blackhole bool // reset during a Blackhole, a held new connection included
	}{
		{"pass", false},
		{"blackhole", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			noLeaks(t)
			echo := startEcho(t)
			p := StartProxy(t, "127.0.0.1:0", echo.addr())
			conns := []net.Conn{dial(t, p.Addr())}
			roundTrip(t, conns[0], "before")
			if tc.blackhole {
				p.Blackhole()
				conns = append(conns, dial(t, p.Addr()))
				require.Eventually(t, func() bool { return p.Stats().Open == 2 },
					ioWait, 5*time.Millisecond)
			}

			require.Equal(t, len(conns), p.ResetConns())
			for i, c := range conns {
				require.ErrorIs(t, readErr(c), syscall.ECONNRESET, "client side of connection %d", i)
			}
			// The target side is reset too (only the first connection had reached it).
			select {
			case err := <-echo.ended:
				require.ErrorIs(t, err, syscall.ECONNRESET, "target side")
			case <-time.After(ioWait):
				t.Fatal("the target's connection did not end")
			}
			s := p.Stats()
			require.Equal(t, int64(len(conns)), s.Reset)
			require.Equal(t, int64(0), s.Open)

			// The mode is as it was.
			c := dial(t, p.Addr())
			if tc.blackhole {
				require.Contains(t, p.String(), "(blackhole)")
				send(t, c, "x")
				_, err := receive(c, 1, blackholeWait)
				require.ErrorIs(t, err, os.ErrDeadlineExceeded)
			} else {
				require.Contains(t, p.String(), "(pass)")
				roundTrip(t, c, "after")
			}
		})
	}
}

func TestProxyHalfClose(t *testing.T) {
	noLeaks(t)
	echo := startEcho(t)
	p := StartProxy(t, "127.0.0.1:0", echo.addr())
	c := dial(t, p.Addr())
	send(t, c, "last words")
	require.NoError(t, c.(*net.TCPConn).CloseWrite())

	// The half-close reaches the echo server, whose close comes back as EOF.
	require.NoError(t, c.SetReadDeadline(time.Now().Add(ioWait)))
	got, err := io.ReadAll(c)
	require.NoError(t, err)
	require.Equal(t, "last words", string(got))
	require.Eventually(t, func() bool { return p.Stats().Open == 0 }, ioWait, 5*time.Millisecond)
}

func TestProxyDialFailed(t *testing.T) {
	noLeaks(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closed := ln.Addr().String()
	require.NoError(t, ln.Close())

	p := StartProxy(t, "127.0.0.1:0", closed)
	require.ErrorIs(t, resetErr(t, p.Addr()), syscall.ECONNRESET)
	require.Equal(t, int64(1), p.Stats().DialFailed)
}

func TestProxyClose(t *testing.T) {
	noLeaks(t)
	echo := startEcho(t)
	p, err := NewProxy("127.0.0.1:0", echo.addr())
	require.NoError(t, err)
	c := dial(t, p.Addr())
	roundTrip(t, c, "hello")

	require.NoError(t, p.Close())
	require.ErrorIs(t, readErr(c), syscall.ECONNRESET, "open connections are reset")
	_, err = net.DialTimeout("tcp", p.Addr(), ioWait)
	require.ErrorIs(t, err, syscall.ECONNREFUSED, "the port is closed")
	require.NoError(t, p.Close(), "a second Close")
}

func TestProxyConcurrent(t *testing.T) {
	noLeaks(t)
	echo := startEcho(t)
	p := StartProxy(t, "127.0.0.1:0", echo.addr())

	const clients = 32
	var stop atomic.Bool
	var trips atomic.Int64
	var wg sync.WaitGroup
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var c net.Conn
			defer func() {
				if c != nil {
					c.Close()
				}
			}()
			buf := make([]byte, 64)
			for n := 0; !stop.Load(); n++ {
				if c == nil {
					var err error
					if c, err = net.DialTimeout("tcp", p.Addr(), ioWait); err != nil {
						t.Errorf("client %d: dial: %v", i, err)
						return
					}
				}
				// A fault shows as an error: the client starts over on a new connection.
				msg := fmt.Sprintf("client %d trip %d", i, n)
				c.SetDeadline(time.Now().Add(200 * time.Millisecond))
				_, err := io.WriteString(c, msg)
				if err == nil {
					_, err = io.ReadFull(c, buf[:len(msg)])
				}
				if err != nil {
					c.Close()
					c = nil
					continue
				}
				if got := string(buf[:len(msg)]); got != msg {
					t.Errorf("client %d: got %q, want %q", i, got, msg)
					return
				}
				trips.Add(1)
			}
		}()
	}

	flips := []func(){
		p.Pass, func() { p.Delay(2 * time.Millisecond) }, p.Refuse, p.Pass, p.Blackhole,
		func() { p.ResetConns() }, p.Pass, func() { p.Stats() },
	}
	for i := range 4 * len(flips) {
		flips[i%len(flips)]()
		_ = p.String()
		time.Sleep(25 * time.Millisecond)
	}
	p.Pass()
	stop.Store(true)
	wg.Wait()
	require.Positive(t, trips.Load())

	// After the faults, every client gets through again.
	errs := make(chan error, clients)
	for i := range clients {
		go func() {
			c, err := net.DialTimeout("tcp", p.Addr(), ioWait)
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			msg := fmt.Sprintf("final %d", i)
			c.SetDeadline(time.Now().Add(ioWait))
			if _, err := io.WriteString(c, msg); err != nil {
				errs <- err
				return
			}
			got, err := receive(c, len(msg), ioWait)
			if err == nil && got != msg {
				err = fmt.Errorf("got %q, want %q", got, msg)
			}
			errs <- err
		}()
	}
	for range clients {
		require.NoError(t, <-errs)
	}
	s := p.Stats()
	t.Logf("%d round trips; %s", trips.Load(), s)
	require.GreaterOrEqual(t, s.Accepted, int64(2*clients))
}

func TestNewProxyListenAddr(t *testing.T) {
	for _, tc := range []struct {
		listen      string
		notLoopback bool // ErrNotLoopback; else it starts
	}{
		{"127.0.0.1:0", false},
		{"127.0.0.5:0", false}, // a minicluster host of its own
		{"localhost:0", false},
		{"0.0.0.0:0", true},
		{":0", true},
		{"10.1.2.3:0", true},
		{"example.com:0", true},
	} {
		t.Run(tc.listen, func(t *testing.T) {
			p, err := NewProxy(tc.listen, "127.0.0.1:1")
			if tc.notLoopback {
				require.ErrorIs(t, err, ErrNotLoopback)
				return
			}
			require.NoError(t, err)
			require.NoError(t, p.Close())
		})
	}
	_, err := NewProxy("no port", "127.0.0.1:1")
	require.Error(t, err)
	require.NotErrorIs(t, err, ErrNotLoopback)
}

func TestProxyString(t *testing.T) {
	p := StartProxy(t, "127.0.0.1:0", "127.0.0.1:8030")
	for _, tc := range []struct {
		set  func()
		want string
	}{
		{func() {}, "(pass)"},
		{func() { p.Delay(1500 * time.Millisecond) }, "(delay 1.5s)"},
		{p.Refuse, "(refuse)"},
		{p.Blackhole, "(blackhole)"},
		{p.Pass, "(pass)"},
	} {
		tc.set()
		s := p.String()
		require.True(t, strings.HasPrefix(s, "proxy "+p.Addr()+"->127.0.0.1:8030 "), s)
		require.True(t, strings.HasSuffix(s, tc.want), s)
	}
}
