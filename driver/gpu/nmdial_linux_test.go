//go:build linux

package gpu

import (
	"context"
	"net"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestDialNM(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte("hello"))
			_ = c.Close()
		}
	}()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	for _, host := range []string{"127.0.0.1", "localhost"} {
		c, err := dialNM(ctxT(t), host, port)
		require.NoError(t, err, host)
		b := make([]byte, 5)
		_, err = c.Read(b)
		require.NoError(t, err)
		require.Equal(t, "hello", string(b))
		require.NoError(t, c.Close())
	}

	// A closed port is refused.
	l2, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	_, closed, _ := net.SplitHostPort(l2.Addr().String())
	require.NoError(t, l2.Close())
	_, err = dialNM(ctxT(t), "127.0.0.1", closed)
	require.ErrorIs(t, err, syscall.ECONNREFUSED)

	_, err = dialNM(ctxT(t), "127.0.0.1", "no-such-port")
	require.Error(t, err)
}

// TestDialNMHangingConnectEndsWithContext: a NodeManager port that drops
// SYNs (here: a listener whose accept queue is full) does not hold the
// launcher past its context.
func TestDialNMHangingConnectEndsWithContext(t *testing.T) {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	require.NoError(t, err)
	defer syscall.Close(fd)
	require.NoError(t, syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}))
	require.NoError(t, syscall.Listen(fd, 0))
	sa, err := syscall.Getsockname(fd)
	require.NoError(t, err)
	port := strconv.Itoa(sa.(*syscall.SockaddrInet4).Port)
	// Fill the accept queue, never accepting: later SYNs are dropped. A
	// blocking connect over loopback is through within the system call
	// once queued, and returns EINPROGRESS after SO_SNDTIMEO once not.
	for i := 0; ; i++ {
		require.Less(t, i, 64, "the accept queue never filled")
		c, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
		require.NoError(t, err)
		defer syscall.Close(c)
		tv := syscall.NsecToTimeval((100 * time.Millisecond).Nanoseconds())
		require.NoError(t, syscall.SetsockoptTimeval(c, syscall.SOL_SOCKET, syscall.SO_SNDTIMEO, &tv))
		if err := syscall.Connect(c, sa); err != nil {
			require.ErrorIs(t, err, syscall.EINPROGRESS)
			break
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err = dialNM(ctx, "127.0.0.1", port)
	require.ErrorIs(t, err, context.DeadlineExceeded)
}
