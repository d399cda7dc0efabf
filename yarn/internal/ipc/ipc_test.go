package ipc_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/xres/xres/hadoopproto/hadoopyarn"
	"github.com/xres/xres/yarn/internal/ipc"
	"github.com/xres/xres/yarn/internal/sasl"
	"github.com/xres/xres/yarn/yarntest"
)

const testProtocol = "org.apache.hadoop.yarn.api.ApplicationClientProtocolPB"

func appReq(id int32) *hadoopyarn.GetApplicationReportRequestProto {
	return &hadoopyarn.GetApplicationReportRequestProto{ApplicationId: &hadoopyarn.ApplicationIdProto{Id: proto.Int32(id), ClusterTimestamp: proto.Int64(1)}}
}

// echo answers getApplicationReport with a report naming the asked id.
func echo(release <-chan struct{}) yarntest.Handler {
	return func(ctx context.Context, c *yarntest.Call) (proto.Message, error) {
		req := &hadoopyarn.GetApplicationReportRequestProto{}
		if err := c.Decode(req); err != nil {
			return nil, err
		}
		if release != nil && req.GetApplicationId().GetId() == 1 {
			select {
			case <-release:
			case <-ctx.Done():
			}
		}
		return &hadoopyarn.GetApplicationReportResponseProto{ApplicationReport: &hadoopyarn.ApplicationReportProto{
			ApplicationId: req.GetApplicationId(), User: proto.String(c.Conn.User), Queue: proto.String(c.Protocol),
		}}, nil
	}
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func TestSimpleCall(t *testing.T) {
	srv := yarntest.NewServer(t, yarntest.Options{})
	srv.Handle("getApplicationReport", echo(nil))
	conn, err := ipc.Dial(ctxT(t, 5*time.Second), ipc.Config{Addr: srv.Addr, Protocol: testProtocol, User: "alice"})
	require.NoError(t, err)
	defer conn.Close()

	resp := &hadoopyarn.GetApplicationReportResponseProto{}
	require.NoError(t, conn.Call(ctxT(t, 5*time.Second), "getApplicationReport", appReq(7), resp))
	require.Equal(t, int32(7), resp.GetApplicationReport().GetApplicationId().GetId())
	require.Equal(t, "alice", resp.GetApplicationReport().GetUser(), "SIMPLE sends the effective user")
	require.Equal(t, testProtocol, resp.GetApplicationReport().GetQueue(), "declaringClassProtocolName")
}

func TestConcurrentCallsOutOfOrder(t *testing.T) {
	srv := yarntest.NewServer(t, yarntest.Options{})
	release := make(chan struct{})
	srv.Handle("getApplicationReport", echo(release))
	conn, err := ipc.Dial(ctxT(t, 5*time.Second), ipc.Config{Addr: srv.Addr, Protocol: testProtocol, User: "u"})
	require.NoError(t, err)
	defer conn.Close()

	slow := make(chan error, 1)
	go func() {
		resp := &hadoopyarn.GetApplicationReportResponseProto{}
		err := conn.Call(ctxT(t, 5*time.Second), "getApplicationReport", appReq(1), resp)
		if err == nil && resp.GetApplicationReport().GetApplicationId().GetId() != 1 {
			err = errors.New("slow call got another call's answer")
		}
		slow <- err
	}()
	var wg sync.WaitGroup
	for i := int32(2); i < 12; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp := &hadoopyarn.GetApplicationReportResponseProto{}
			if err := conn.Call(ctxT(t, 5*time.Second), "getApplicationReport", appReq(i), resp); err != nil {
				t.Error(err)
				return
			}
			if got := resp.GetApplicationReport().GetApplicationId().GetId(); got != i {
				t.Errorf("call %d got answer for %d", i, got)
			}
		}()
	}
	wg.Wait() // the fast calls finished while call 1 still waits
	close(release)
	require.NoError(t, <-slow)
	require.Equal(t, int64(1), srv.Connects(), "all calls share one connection")
}

func TestCancelledCallKeepsConnection(t *testing.T) {
	srv := yarntest.NewServer(t, yarntest.Options{})
	release := make(chan struct{})
	defer close(release)
	srv.Handle("getApplicationReport", echo(release))
	conn, err := ipc.Dial(ctxT(t, 5*time.Second), ipc.Config{Addr: srv.Addr, Protocol: testProtocol, User: "u"})
	require.NoError(t, err)
	defer conn.Close()

	err = conn.Call(ctxT(t, 50*time.Millisecond), "getApplicationReport", appReq(1), &hadoopyarn.GetApplicationReportResponseProto{})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	resp := &hadoopyarn.GetApplicationReportResponseProto{}
	require.NoError(t, conn.Call(ctxT(t, 5*time.Second), "getApplicationReport", appReq(2), resp))
	require.Equal(t, int32(2), resp.GetApplicationReport().GetApplicationId().GetId())
	require.NoError(t, conn.Err())
}

func TestRemoteErrors(t *testing.T) {
	srv := yarntest.NewServer(t, yarntest.Options{})
	srv.Handle("getApplicationReport", func(ctx context.Context, c *yarntest.Call) (proto.Message, error) {
		return nil, &yarntest.Exception{Class: "org.apache.hadoop.yarn.exceptions.ApplicationNotFoundException",
			Message: "Application with id 'application_1_0007' doesn't exist in RM.\n\tat org.apache.hadoop..."}
	})
	conn, err := ipc.Dial(ctxT(t, 5*time.Second), ipc.Config{Addr: srv.Addr, Protocol: testProtocol, User: "u"})
	require.NoError(t, err)
	defer conn.Close()

	tests := []struct {
		name   string
		method string
		want   error
		class  string
	}{
		{"application exception", "getApplicationReport", ipc.ErrApplicationNotFound, "org.apache.hadoop.yarn.exceptions.ApplicationNotFoundException"},
		{"unknown method", "noSuchCall", ipc.ErrNoSuchMethod, "org.apache.hadoop.ipc.RpcNoSuchMethodException"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := conn.Call(ctxT(t, 5*time.Second), tt.method, appReq(7), &hadoopyarn.GetApplicationReportResponseProto{})
			require.ErrorIs(t, err, tt.want)
			var re *ipc.RemoteError
			require.ErrorAs(t, err, &re)
			require.Equal(t, tt.class, re.Class)
			require.Equal(t, tt.method, re.Method)
			require.False(t, re.Fatal)
			require.NotContains(t, err.Error(), "\tat ", "stack traces stay out of Error()")
		})
	}
	require.NoError(t, conn.Err(), "ERROR responses leave the connection open")
	srv.SetStandby(true)
	err = conn.Call(ctxT(t, 5*time.Second), "getApplicationReport", appReq(7), &hadoopyarn.GetApplicationReportResponseProto{})
	require.ErrorIs(t, err, ipc.ErrStandby)
}

func TestServerHangsUpMidCall(t *testing.T) {
	srv := yarntest.NewServer(t, yarntest.Options{})
	var hang sync.Once
	srv.Handle("getApplicationReport", func(ctx context.Context, c *yarntest.Call) (proto.Message, error) {
		hung := false
		hang.Do(func() { hung = true })
		if hung {
			return nil, yarntest.ErrHangUp
		}
		return echo(nil)(ctx, c)
	})
	cl := ipc.NewClient(ipc.Config{Addr: srv.Addr, Protocol: testProtocol, User: "u"}, 0)
	defer cl.Close()
	err := cl.Call(ctxT(t, 10*time.Second), "getApplicationReport", appReq(1), &hadoopyarn.GetApplicationReportResponseProto{})
	require.ErrorIs(t, err, ipc.ErrConnection)
	require.NotErrorIs(t, err, context.DeadlineExceeded, "a hang-up fails the call at once")
	// The client redials for the next call.
	require.NoError(t, cl.Call(ctxT(t, 5*time.Second), "getApplicationReport", appReq(2), &hadoopyarn.GetApplicationReportResponseProto{}))
	require.Equal(t, int64(2), srv.Connects())
}

func TestPingWhileWaiting(t *testing.T) {
	srv := yarntest.NewServer(t, yarntest.Options{})
	// The answer waits for the client's first ping (pings every 50 ms
	// while a call waits), not for a fixed time a loaded host may not
	// schedule the pinger in.
	srv.Handle("getApplicationReport", func(ctx context.Context, c *yarntest.Call) (proto.Message, error) {
		for srv.Pings() == 0 && ctx.Err() == nil {
			time.Sleep(5 * time.Millisecond)
		}
		return &hadoopyarn.GetApplicationReportResponseProto{}, nil
	})
	conn, err := ipc.Dial(ctxT(t, 5*time.Second), ipc.Config{Addr: srv.Addr, Protocol: testProtocol, User: "u", PingInterval: 50 * time.Millisecond})
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.Call(ctxT(t, 5*time.Second), "getApplicationReport", appReq(1), &hadoopyarn.GetApplicationReportResponseProto{}))
	require.Positive(t, srv.Pings())
}

func TestTokenAuth(t *testing.T) {
	srv := yarntest.NewServer(t, yarntest.Options{Token: true})
	srv.Handle("getApplicationReport", echo(nil))
	ident, pass := []byte("identifier-bytes"), []byte("password-bytes")
	srv.AddToken(ident, pass)
	mech := func(id, pw []byte) func() (sasl.Mechanism, error) {
		return func() (sasl.Mechanism, error) {
			u, p := sasl.TokenCredentials(id, pw)
			return &sasl.DigestMD5{Username: u, Password: p}, nil
		}
	}
	tests := []struct {
		name string
		mech func() (sasl.Mechanism, error)
		want []error
	}{
		{"right token", mech(ident, pass), nil},
		{"wrong password", mech(ident, []byte("nope")), []error{ipc.ErrUnauthorized}},
		{"unknown token", mech([]byte("other"), pass), []error{ipc.ErrUnauthorized, ipc.ErrInvalidToken}},
		{"simple on a token-only server", nil, []error{ipc.ErrUnauthorized, ipc.ErrAccessControl}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conn, err := ipc.Dial(ctxT(t, 5*time.Second), ipc.Config{Addr: srv.Addr, Protocol: testProtocol, User: "u", Mechanism: tt.mech})
			if err == nil {
				defer conn.Close()
				err = conn.Call(ctxT(t, 5*time.Second), "getApplicationReport", appReq(3), &hadoopyarn.GetApplicationReportResponseProto{})
			}
			if tt.want == nil {
				require.NoError(t, err)
				return
			}
			for _, w := range tt.want {
				require.ErrorIs(t, err, w)
			}
			require.NotContains(t, err.Error(), "password-bytes")
		})
	}
}

func TestDialErrors(t *testing.T) {
	srv := yarntest.NewServer(t, yarntest.Options{})
	addr := srv.Addr
	srv.Close()
	_, err := ipc.Dial(ctxT(t, 5*time.Second), ipc.Config{Addr: addr, Protocol: testProtocol})
	require.ErrorIs(t, err, ipc.ErrConnection)
	require.ErrorContains(t, err, addr)
}

// hadoop.rpc.protection integrity and privacy: every packet after SASL is
// wrapped, including large ones cut into several WRAP messages.
func TestProtectedConnections(t *testing.T) {
	for _, qop := range []string{"auth-int", "auth-conf", "auth,auth-int,auth-conf"} {
		for _, ciphers := range []string{"rc4", "3des"} {
			t.Run(qop+"/"+ciphers, func(t *testing.T) {
				srv := yarntest.NewServer(t, yarntest.Options{Token: true, QOP: qop, Ciphers: ciphers})
				srv.Handle("getApplicationReport", echo(nil))
				srv.AddToken([]byte("id"), []byte("pw"))
				u, p := sasl.TokenCredentials([]byte("id"), []byte("pw"))
				conn, err := ipc.Dial(ctxT(t, 5*time.Second), ipc.Config{Addr: srv.Addr, Protocol: testProtocol,
					Mechanism: func() (sasl.Mechanism, error) { return &sasl.DigestMD5{Username: u, Password: p}, nil }})
				require.NoError(t, err)
				defer conn.Close()
				var wg sync.WaitGroup
				for i := int32(1); i <= 20; i++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						req := appReq(i)
						resp := &hadoopyarn.GetApplicationReportResponseProto{}
						if err := conn.Call(ctxT(t, 5*time.Second), "getApplicationReport", req, resp); err != nil {
							t.Error(err)
							return
						}
						if resp.GetApplicationReport().GetApplicationId().GetId() != i {
							t.Errorf("call %d: wrong answer", i)
						}
					}()
				}
				wg.Wait()
				// 200 KiB: more than one SASL buffer (64 KiB), so it is cut.
				big := &hadoopyarn.SubmitApplicationRequestProto{ApplicationSubmissionContext: &hadoopyarn.ApplicationSubmissionContextProto{
					AmContainerSpec: &hadoopyarn.ContainerLaunchContextProto{Tokens: make([]byte, 200<<10)}}}
				srv.Handle("submitApplication", func(ctx context.Context, c *yarntest.Call) (proto.Message, error) {
					req := &hadoopyarn.SubmitApplicationRequestProto{}
					if err := c.Decode(req); err != nil {
						return nil, err
					}
					if len(req.GetApplicationSubmissionContext().GetAmContainerSpec().GetTokens()) != 200<<10 {
						return nil, errors.New("big request arrived damaged")
					}
					return &hadoopyarn.SubmitApplicationResponseProto{}, nil
				})
				require.NoError(t, conn.Call(ctxT(t, 5*time.Second), "submitApplication", big, &hadoopyarn.SubmitApplicationResponseProto{}))
			})
		}
	}
	t.Run("auth only client refuses", func(t *testing.T) {
		srv := yarntest.NewServer(t, yarntest.Options{Token: true, QOP: "auth-conf"})
		srv.AddToken([]byte("id"), []byte("pw"))
		u, p := sasl.TokenCredentials([]byte("id"), []byte("pw"))
		_, err := ipc.Dial(ctxT(t, 5*time.Second), ipc.Config{Addr: srv.Addr, Protocol: testProtocol,
			Mechanism: func() (sasl.Mechanism, error) { return &sasl.DigestMD5{Username: u, Password: p, AuthOnly: true}, nil }})
		require.ErrorIs(t, err, sasl.ErrQOP)
		require.ErrorContains(t, err, "hadoop.rpc.protection")
	})
}

func TestClientClosed(t *testing.T) {
	srv := yarntest.NewServer(t, yarntest.Options{})
	srv.Handle("getApplicationReport", echo(nil))
	cl := ipc.NewClient(ipc.Config{Addr: srv.Addr, Protocol: testProtocol, User: "u"}, 0)
	require.NoError(t, cl.Call(ctxT(t, 5*time.Second), "getApplicationReport", appReq(1), &hadoopyarn.GetApplicationReportResponseProto{}))
	require.NoError(t, cl.Close())
	err := cl.Call(ctxT(t, 5*time.Second), "getApplicationReport", appReq(1), &hadoopyarn.GetApplicationReportResponseProto{})
	require.ErrorIs(t, err, ipc.ErrClosed)
	require.Equal(t, int64(1), srv.Connects(), "no redial after Close")
}

// An idle connection is replaced before the server would drop it.
func TestClientRedialsWhenIdle(t *testing.T) {
	srv := yarntest.NewServer(t, yarntest.Options{})
	srv.Handle("getApplicationReport", echo(nil))
	cl := ipc.NewClient(ipc.Config{Addr: srv.Addr, Protocol: testProtocol, User: "u"}, 50*time.Millisecond)
	defer cl.Close()
	for i := 0; i < 2; i++ {
		require.NoError(t, cl.Call(ctxT(t, 5*time.Second), "getApplicationReport", appReq(1), &hadoopyarn.GetApplicationReportResponseProto{}))
		time.Sleep(100 * time.Millisecond)
	}
	require.Equal(t, int64(2), srv.Connects())
}

// A server that accepts but never answers the handshake does not hang the
// dial, even with a context that has no deadline.
func TestConnectTimeout(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close() // silent: reads nothing, answers nothing
		}
	}()
	u, p := sasl.TokenCredentials([]byte("id"), []byte("pw"))
	start := time.Now()
	_, err = ipc.Dial(context.Background(), ipc.Config{Addr: ln.Addr().String(), Protocol: testProtocol, ConnectTimeout: 200 * time.Millisecond,
		Mechanism: func() (sasl.Mechanism, error) { return &sasl.DigestMD5{Username: u, Password: p}, nil }})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.ErrorContains(t, err, ln.Addr().String())
	require.Less(t, time.Since(start), 5*time.Second)
}

// 64 goroutines share one connection, calling back to back while the server
// answers out of order; then the server closes the connection mid-flight.
// Every call returns (its own answer or a connection error), none hangs,
// none gets another call's answer. With a privacy layer too, where queued
// packets are wrapped as one batch. Meant for -race too:
//
//	go test -race -run 'Concurrent|SharedConn|Blocked' ./yarn/internal/ipc
func TestSharedConnServerClosesMidFlight(t *testing.T) {
	for _, tt := range []struct {
		name string
		opt  yarntest.Options
	}{
		{"plain", yarntest.Options{}},
		{"privacy", yarntest.Options{Token: true, QOP: "auth-conf", Ciphers: "rc4"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := yarntest.NewServer(t, tt.opt)
			srv.Handle("getApplicationReport", func(ctx context.Context, c *yarntest.Call) (proto.Message, error) {
				if srv.Calls()%3 == 0 {
					time.Sleep(time.Duration(srv.Calls()%7) * 100 * time.Microsecond) // out of order
				}
				return echo(nil)(ctx, c)
			})
			cfg := ipc.Config{Addr: srv.Addr, Protocol: testProtocol, User: "u"}
			if tt.opt.Token {
				srv.AddToken([]byte("id"), []byte("pw"))
				u, p := sasl.TokenCredentials([]byte("id"), []byte("pw"))
				cfg.Mechanism = func() (sasl.Mechanism, error) { return &sasl.DigestMD5{Username: u, Password: p}, nil }
			}
			conn, err := ipc.Dial(ctxT(t, 5*time.Second), cfg)
			require.NoError(t, err)
			defer conn.Close()

			const callers = 64
			type result struct {
				answered int
				err      error
			}
			results := make(chan result, callers)
			for g := range callers {
				go func() {
					r := result{}
					for i := 0; ; i++ {
						id := int32(g*1_000_000 + i)
						resp := &hadoopyarn.GetApplicationReportResponseProto{}
						// No deadline: a call that hangs must show up as a hang.
						if r.err = conn.Call(context.Background(), "getApplicationReport", appReq(id), resp); r.err != nil {
							break
						}
						if got := resp.GetApplicationReport().GetApplicationId().GetId(); got != id {
							r.err = fmt.Errorf("call for %d got the answer to %d", id, got)
							break
						}
						r.answered++
					}
					results <- r
				}()
			}
			require.Eventually(t, func() bool { return srv.Calls() >= 3000 }, 20*time.Second, time.Millisecond)
			srv.DropConnections()
			hang := time.After(10 * time.Second)
			answered := 0
			for range callers {
				select {
				case r := <-results:
					require.ErrorIs(t, r.err, ipc.ErrConnection, "a broken connection, not a wrong answer")
					answered += r.answered
				case <-hang:
					t.Fatal("calls still waiting 10 s after the server closed the connection")
				}
			}
			require.GreaterOrEqual(t, answered, 2000, "calls were answered before the close")
			require.ErrorIs(t, conn.Err(), ipc.ErrConnection)
		})
	}
}

// A server that stops reading: the socket fills, the write in progress
// blocks, and the packets queued behind it wait. Every caller still
// returns once its context ends, and the connection, whose stream is now
// cut, is reported broken.
func TestBlockedWriteQueuedCallsReturn(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		if nc, err := ln.Accept(); err == nil {
			accepted <- nc // held open, never read
		}
	}()
	// SIMPLE set-up needs no answer from the server.
	conn, err := ipc.Dial(ctxT(t, 5*time.Second), ipc.Config{Addr: ln.Addr().String(), Protocol: testProtocol, User: "u"})
	require.NoError(t, err)
	defer conn.Close()
	defer func() {
		select {
		case nc := <-accepted:
			nc.Close()
		default:
		}
	}()

	big := &hadoopyarn.SubmitApplicationRequestProto{ApplicationSubmissionContext: &hadoopyarn.ApplicationSubmissionContextProto{
		AmContainerSpec: &hadoopyarn.ContainerLaunchContextProto{Tokens: make([]byte, 1<<20)}}}
	const callers = 16
	errs := make(chan error, callers)
	for range callers {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			errs <- conn.Call(ctx, "submitApplication", big, &hadoopyarn.SubmitApplicationResponseProto{})
		}()
	}
	hang := time.After(10 * time.Second)
	for range callers {
		select {
		case err := <-errs:
			require.Error(t, err)
			if !errors.Is(err, context.DeadlineExceeded) {
				require.ErrorIs(t, err, ipc.ErrConnection)
			}
		case <-hang:
			t.Fatal("a call queued behind a blocked write did not return")
		}
	}
	require.ErrorIs(t, conn.Err(), ipc.ErrConnection, "a write cut mid-packet breaks the connection")
}
