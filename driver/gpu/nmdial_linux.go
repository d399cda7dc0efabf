//go:build linux

package gpu

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"syscall"
	"time"
)

// connectSlice is how long one blocking connect waits before the
// context is looked at again.
const connectSlice = 50 * time.Millisecond

// dialNM connects to the NodeManager with plain system calls and returns
// the connection in the runtime's network poller for the reading. On the
// launch path this costs a fraction of net.Dialer's connect (no poller
// round trip for the connect, no keep-alive set-up, no goroutine watching
// the context): the NodeManager is this host's, and its connect is
// immediate. A connect that hangs (a port that drops SYNs) is bounded by
// ctx, looked at every connectSlice. Each address of host is tried in
// turn, as net.Dialer does.
func dialNM(ctx context.Context, host, port string) (net.Conn, error) {
	addrs, err := nmAddrs(ctx, host, port)
	if err != nil {
		return nil, err
	}
	var first error
	for _, ap := range addrs {
		c, err := dialAddr(ctx, ap)
		if err == nil {
			return c, nil
		}
		if first == nil {
			first = err
		}
		if ctx.Err() != nil {
			break
		}
	}
	return nil, first
}

// nmAddrs resolves host (a literal address without a lookup).
func nmAddrs(ctx context.Context, host, port string) ([]netip.AddrPort, error) {
	p, err := net.LookupPort("tcp", port)
	if err != nil {
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: err}
	}
	if a, err := netip.ParseAddr(host); err == nil {
		return []netip.AddrPort{netip.AddrPortFrom(a.Unmap(), uint16(p))}, nil
	}
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: err}
	}
	out := make([]netip.AddrPort, 0, len(ips))
	for _, ip := range ips {
		out = append(out, netip.AddrPortFrom(ip.Unmap(), uint16(p)))
	}
	if len(out) == 0 {
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: fmt.Errorf("no address for %s", host)}
	}
	return out, nil
}

func dialAddr(ctx context.Context, ap netip.AddrPort) (net.Conn, error) {
	opErr := func(err error) error {
		return &net.OpError{Op: "dial", Net: "tcp", Addr: net.TCPAddrFromAddrPort(ap), Err: os.NewSyscallError("connect", err)}
	}
	var sa syscall.Sockaddr
	family := syscall.AF_INET
	if ap.Addr().Is4() {
		sa = &syscall.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().As4()}
	} else {
		family = syscall.AF_INET6
		sa = &syscall.SockaddrInet6{Port: int(ap.Port()), Addr: ap.Addr().As16()}
	}
	fd, err := syscall.Socket(family, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, syscall.IPPROTO_TCP)
	if err != nil {
		return nil, opErr(err)
	}
	ok := false
	defer func() {
		if !ok {
			_ = syscall.Close(fd)
		}
	}()
	tv := syscall.NsecToTimeval(connectSlice.Nanoseconds())
	if err := syscall.SetsockoptTimeval(fd, syscall.SOL_SOCKET, syscall.SO_SNDTIMEO, &tv); err != nil {
		return nil, opErr(err)
	}
	// A blocking connect returns EINPROGRESS after SO_SNDTIMEO with the
	// connect still under way; called again it waits again (EALREADY
	// where the kernel does not), and EISCONN once it is through.
	for {
		err := syscall.Connect(fd, sa)
		if err == nil || errors.Is(err, syscall.EISCONN) {
			break
		}
		if !errors.Is(err, syscall.EINPROGRESS) && !errors.Is(err, syscall.EALREADY) && !errors.Is(err, syscall.EINTR) {
			return nil, opErr(err)
		}
		if cerr := ctx.Err(); cerr != nil {
			return nil, opErr(cerr)
		}
		if errors.Is(err, syscall.EALREADY) {
			time.Sleep(time.Millisecond)
		}
	}
	f := os.NewFile(uintptr(fd), "nodemanager") // blocking: not in the poller
	ok = true                                   // f owns fd now
	defer f.Close()
	c, err := net.FileConn(f) // a non-blocking dup of fd, in the poller
	if err != nil {
		return nil, opErr(err)
	}
	return c, nil
}
