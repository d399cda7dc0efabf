package gpu

import (
	"context"
	"io"
	"net"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A listener that accepts and then says nothing (a NodeManager that
// hangs); its accepted connections are closed at the end.
func silentListener(t *testing.T) (host, port string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		<-done
		for _, c := range conns {
			_ = c.Close()
		}
	})
	h, p, err := net.SplitHostPort(ln.Addr().String())
	require.NoError(t, err)
	return h, p
}

// within fails the test if f has not returned after a long while: what
// it guards is that f returns at all (a launch must never hang on its
// NodeManager), not how fast.
func within(t *testing.T, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("still blocked after 60 s")
	}
}

// dialNM (blocking sockets on Linux) talks to a NodeManager by address or
// by name, and says which address refused it.
func TestDialNM(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func(c net.Conn) {
				defer c.Close()
				b := make([]byte, 4)
				if _, err := io.ReadFull(c, b); err == nil {
					_, _ = c.Write(append([]byte("re:"), b...))
				}
			}(c)
		}
	}()
	_, port, err := net.SplitHostPort(ln.Addr().String())
	require.NoError(t, err)
	for _, host := range []string{"127.0.0.1", "localhost"} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		c, err := dialNM(ctx, host, port)
		require.NoError(t, err, host)
		_, err = c.Write([]byte("ping"))
		require.NoError(t, err)
		got, err := io.ReadAll(c)
		require.NoError(t, err)
		require.Equal(t, "re:ping", string(got), host)
		require.NoError(t, c.Close())
		require.NoError(t, c.Close(), "closing twice is harmless")
		cancel()
	}
	// Refused: the error names the address.
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	_, cport, _ := net.SplitHostPort(closed.Addr().String())
	require.NoError(t, closed.Close())
	_, err = dialNM(context.Background(), "127.0.0.1", cport)
	require.ErrorContains(t, err, "127.0.0.1:"+cport)
	require.ErrorContains(t, err, "connection refused")
	_, err = dialNM(context.Background(), "127.0.0.1", "0")
	require.ErrorContains(t, err, `port "0": not a TCP port`)
	_, err = dialNM(context.Background(), "127.0.0.1", strconv.Itoa(70000))
	require.ErrorContains(t, err, "not a TCP port")
}

// A NodeManager that accepts and never answers ends the read when the
// deadline passes, or when the context is cancelled before it.
func TestDialNMSilent(t *testing.T) {
	host, port := silentListener(t)
	t.Run("deadline", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		c, err := dialNM(ctx, host, port)
		require.NoError(t, err)
		defer c.Close()
		within(t, func() {
			_, err = c.Read(make([]byte, 10))
		})
		require.Error(t, err)
	})
	t.Run("closed", func(t *testing.T) {
		c, err := dialNM(context.Background(), host, port)
		require.NoError(t, err)
		go func() { time.Sleep(50 * time.Millisecond); _ = c.Close() }()
		within(t, func() {
			_, err = c.Read(make([]byte, 10))
		})
		require.Error(t, err, "Close ends a read in progress")
		_, err = c.Read(make([]byte, 10))
		require.ErrorContains(t, err, "closed")
	})
	t.Run("cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		c, err := dialNM(ctx, host, port)
		require.NoError(t, err)
		defer c.Close()
		go func() { time.Sleep(50 * time.Millisecond); cancel() }()
		within(t, func() {
			_, err = c.Read(make([]byte, 10))
		})
		require.Error(t, err)
		require.Error(t, ctx.Err())
	})
}

// Through the client: a NodeManager that hangs fails the GET naming its
// URL once the timeout passes; the launch is not left waiting.
func TestNMClientSilentNodeManager(t *testing.T) {
	host, port := silentListener(t)
	c := &nmClient{host: host, port: port, timeout: 300 * time.Millisecond, getenv: func(string) string { return "" }}
	var err error
	within(t, func() { _, err = c.get(context.Background(), YarnGPU) })
	require.ErrorContains(t, err, "GET http://"+net.JoinHostPort(host, port)+"/ws/v1/node/resources/yarn.io%2Fgpu")
}

// A connection the NodeManager's host does not complete (its accept queue
// full: the SYN is dropped and the connect waits) ends at the deadline.
func TestDialNMConnectBounded(t *testing.T) {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	require.NoError(t, err)
	t.Cleanup(func() { _ = syscall.Close(fd) })
	require.NoError(t, syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}))
	require.NoError(t, syscall.Listen(fd, 0)) // never accepted
	sa, err := syscall.Getsockname(fd)
	require.NoError(t, err)
	port := strconv.Itoa(sa.(*syscall.SockaddrInet4).Port)
	var held []io.Closer
	t.Cleanup(func() {
		for _, c := range held {
			_ = c.Close()
		}
	})
	// Fill the queue until a connect no longer completes at once.
	for i := 0; i < 16; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		var c io.ReadWriteCloser
		within(t, func() { c, err = dialNM(ctx, "127.0.0.1", port) })
		cancel()
		if err != nil {
			require.ErrorContains(t, err, "127.0.0.1:"+port)
			return
		}
		held = append(held, c)
	}
	t.Skip("this kernel completed 16 connections to a listener that accepts none (tcp_abort_on_overflow or syncookies): the connect bound is not reachable here")
}
