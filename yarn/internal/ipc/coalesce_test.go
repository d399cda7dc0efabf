package ipc_test

import (
	"context"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/hadoopproto/hadoopyarn"
	"github.com/xres/xres/yarn/internal/ipc"
	"github.com/xres/xres/yarn/yarntest"
)

// countConn counts the writes that reach the socket.
type countConn struct {
	net.Conn
	writes *atomic.Int32
}

func (c *countConn) Write(b []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(b)
}

// While other calls are in flight, a caller about to write lets the callers
// that are ready to run go first, so that their packets join its write:
// with one P (so the order is fixed) and a call already waiting, 8 callers
// started together reach the socket in one write (at most 3 when the
// scheduler looks at its global queue first), not 8.
func TestConcurrentCallsShareWrites(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	srv := yarntest.NewServer(t, yarntest.Options{})
	release := make(chan struct{})
	srv.Handle("getApplicationReport", echo(release))
	var writes atomic.Int32
	var d net.Dialer
	conn, err := ipc.Dial(ctxT(t, 5*time.Second), ipc.Config{Addr: srv.Addr, Protocol: testProtocol, User: "u",
		Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
			nc, err := d.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return &countConn{Conn: nc, writes: &writes}, nil
		}})
	require.NoError(t, err)
	defer conn.Close()

	held := make(chan error, 1)
	go func() { // call 1 waits for release: the others are never alone
		held <- conn.Call(context.Background(), "getApplicationReport", appReq(1), &hadoopyarn.GetApplicationReportResponseProto{})
	}()
	require.Eventually(t, func() bool { return srv.Calls() >= 1 }, 5*time.Second, time.Millisecond)

	before := writes.Load()
	const callers = 8
	var wg sync.WaitGroup
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp := &hadoopyarn.GetApplicationReportResponseProto{}
			if err := conn.Call(ctxT(t, 5*time.Second), "getApplicationReport", appReq(int32(2+i)), resp); err != nil {
				t.Error(err)
				return
			}
			if got := resp.GetApplicationReport().GetApplicationId().GetId(); got != int32(2+i) {
				t.Errorf("call %d got the answer to %d", 2+i, got)
			}
		}()
	}
	wg.Wait()
	n := writes.Load() - before
	close(release)
	require.NoError(t, <-held)
	require.LessOrEqual(t, n, int32(3), "%d callers took %d writes", callers, n)
	t.Logf("%d callers, %d writes", callers, n)
}
