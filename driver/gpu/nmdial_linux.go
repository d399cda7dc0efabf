package gpu

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// dialNM connects to a NodeManager with blocking system calls, the
// connection bounded by the socket's timeouts: a connect to the node's own
// NodeManager completes in tens of microseconds, where net's non-blocking
// connect parks the goroutine in the network poller and costs a launch
// 0.1-0.3 ms of thread hand-overs before the request is even written. A
// host name is resolved by net's resolver. The connection is closed by
// its Close; ctx ending shuts it down, which ends a blocked read.
func dialNM(ctx context.Context, host, port string) (io.ReadWriteCloser, error) {
	p, err := strconv.Atoi(port)
	if err != nil || p <= 0 || p > 65535 {
		return nil, fmt.Errorf("port %q: not a TCP port", port)
	}
	var ips []net.IP
	if ip := net.ParseIP(host); ip != nil {
		ips = []net.IP{ip}
	} else {
		addrs, err := net.DefaultResolver.LookupIPAddr(ctx, host)
		if err != nil {
			return nil, err
		}
		for _, a := range addrs {
			ips = append(ips, a.IP)
		}
	}
	var lastErr error
	for _, ip := range ips {
		c, err := connectBlocking(ctx, ip, p)
		if err == nil {
			return c, nil
		}
		lastErr = fmt.Errorf("dial tcp %s: %w", net.JoinHostPort(ip.String(), port), err)
		if ctx.Err() != nil {
			break
		}
	}
	if lastErr == nil {
		lastErr = fmt.Errorf("%s: no address", host)
	}
	return nil, lastErr
}

// blockingConn is a connected TCP socket used with blocking reads and
// writes, each bounded by the socket's timeouts (SO_RCVTIMEO,
// SO_SNDTIMEO), which the context's deadline sets. The context ending or
// Close shuts the socket down, which ends a read or write in progress;
// the descriptor is closed once none is (never under one: its number
// could be reused by then).
type blockingConn struct {
	mu     sync.Mutex
	idle   sync.Cond // signalled when busy drops to 0
	fd     int
	closed bool // Close called: no new read or write
	busy   int  // reads and writes in progress
	stop   func() bool
	ctx    context.Context
}

func connectBlocking(ctx context.Context, ip net.IP, port int) (*blockingConn, error) {
	family, sa := syscall.AF_INET6, syscall.Sockaddr(nil)
	if ip4 := ip.To4(); ip4 != nil {
		family, sa = syscall.AF_INET, &syscall.SockaddrInet4{Port: port, Addr: [4]byte(ip4)}
	} else if ip16 := ip.To16(); ip16 != nil {
		sa = &syscall.SockaddrInet6{Port: port, Addr: [16]byte(ip16)}
	} else {
		return nil, fmt.Errorf("not an IP address: %v", ip)
	}
	fd, err := syscall.Socket(family, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("socket: %w", err)
	}
	c := &blockingConn{fd: fd, ctx: ctx}
	c.idle.L = &c.mu
	if dl, ok := ctx.Deadline(); ok {
		tv := syscall.NsecToTimeval(max(time.Until(dl), time.Millisecond).Nanoseconds())
		for _, opt := range []int{syscall.SO_SNDTIMEO, syscall.SO_RCVTIMEO} {
			if err := syscall.SetsockoptTimeval(fd, syscall.SOL_SOCKET, opt, &tv); err != nil {
				_ = syscall.Close(fd)
				return nil, fmt.Errorf("socket timeout: %w", err)
			}
		}
	}
	c.stop = context.AfterFunc(ctx, c.shutdown)
	err = syscall.Connect(fd, sa)
	if errors.Is(err, syscall.EINTR) {
		// Interrupted by a signal, the connection goes on being made:
		// wait until it is, or is refused.
		err = c.waitConnected()
	}
	if errors.Is(err, syscall.EINPROGRESS) || errors.Is(err, syscall.EAGAIN) {
		err = errTimeout
	}
	if err != nil {
		c.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	return c, nil
}

var errTimeout = errors.New("i/o timeout")

// waitConnected waits for an interrupted connect to complete.
func (c *blockingConn) waitConnected() error {
	for {
		ms := -1
		if dl, ok := c.ctx.Deadline(); ok {
			if ms = int(time.Until(dl).Milliseconds()); ms <= 0 {
				return errTimeout
			}
		}
		n, err := unix.Poll([]unix.PollFd{{Fd: int32(c.fd), Events: unix.POLLOUT}}, ms)
		if errors.Is(err, syscall.EINTR) {
			if c.ctx.Err() != nil {
				return c.ctx.Err()
			}
			continue
		}
		if err != nil {
			return err
		}
		if n == 0 {
			return errTimeout
		}
		soErr, err := syscall.GetsockoptInt(c.fd, syscall.SOL_SOCKET, syscall.SO_ERROR)
		if err != nil {
			return err
		}
		if soErr != 0 {
			return syscall.Errno(soErr)
		}
		return nil
	}
}

// shutdown ends what blocks on the socket (ctx ended).
func (c *blockingConn) shutdown() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.closed {
		_ = syscall.Shutdown(c.fd, syscall.SHUT_RDWR)
	}
}

// begin registers a read or write; false once closed.
func (c *blockingConn) begin() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	c.busy++
	return true
}

func (c *blockingConn) end() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.busy--; c.busy == 0 {
		c.idle.Broadcast()
	}
}

var errClosed = errors.New("use of closed connection")

func (c *blockingConn) Read(p []byte) (int, error) {
	if !c.begin() {
		return 0, errClosed
	}
	defer c.end()
	for {
		n, err := syscall.Read(c.fd, p)
		switch {
		case errors.Is(err, syscall.EINTR) && c.ctx.Err() == nil:
			continue
		case errors.Is(err, syscall.EAGAIN):
			return 0, errTimeout
		case err != nil:
			return 0, err
		case n == 0 && len(p) > 0:
			return 0, io.EOF
		}
		return n, nil
	}
}

func (c *blockingConn) Write(p []byte) (int, error) {
	if !c.begin() {
		return 0, errClosed
	}
	defer c.end()
	done := 0
	for done < len(p) {
		n, err := syscall.Write(c.fd, p[done:])
		switch {
		case errors.Is(err, syscall.EINTR) && c.ctx.Err() == nil:
			continue
		case errors.Is(err, syscall.EAGAIN):
			return done, errTimeout
		case err != nil:
			return done, err
		}
		done += n
	}
	return done, nil
}

// Close shuts the socket down, waits for a read or write in progress to
// end (the shutdown ends it) and closes it; once.
func (c *blockingConn) Close() error {
	c.stop()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	_ = syscall.Shutdown(c.fd, syscall.SHUT_RDWR)
	for c.busy > 0 {
		c.idle.Wait()
	}
	return syscall.Close(c.fd)
}
