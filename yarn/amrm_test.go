package yarn

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/xres/xres/hadoopproto/hadoopyarn"
	"github.com/xres/xres/yarn/security"
	"github.com/xres/xres/yarn/yarntest"
)

var testAttempt = &hadoopyarn.ApplicationAttemptIdProto{ApplicationId: testApp, AttemptId: proto.Int32(1)}

func amrmToken(t *testing.T, keyID int32, service string) *security.Token {
	id, err := proto.Marshal(&hadoopyarn.AMRMTokenIdentifierProto{AppAttemptId: testAttempt, KeyId: proto.Int32(keyID)})
	require.NoError(t, err)
	return &security.Token{Identifier: id, Password: []byte{byte(keyID), 0xaa}, Kind: security.KindAMRMToken, Service: service}
}

// fakeScheduler is an RM scheduler port: TOKEN only, register/allocate/finish.
type fakeScheduler struct {
	*yarntest.Server
	registered  atomic.Bool
	responseIDs []int32
	rollTo      *security.Token
	finishes    atomic.Int32
}

func newFakeScheduler(t *testing.T, tok *security.Token) *fakeScheduler {
	f := &fakeScheduler{Server: yarntest.NewServer(t, yarntest.Options{Token: true})}
	f.AddToken(tok.Identifier, tok.Password)
	f.Handle("registerApplicationMaster", func(ctx context.Context, c *yarntest.Call) (proto.Message, error) {
		if c.Conn.Protocol != ProtocolApplicationMaster || c.Conn.User != "" {
			return nil, &yarntest.Exception{Class: "java.lang.IllegalStateException", Message: "bad context " + c.Conn.Protocol + " user " + c.Conn.User}
		}
		f.registered.Store(true)
		return &hadoopyarn.RegisterApplicationMasterResponseProto{
			MaximumCapability: NewResource(8192, 4, map[string]int64{"yarn.io/gpu": 2}),
			ResourceTypes:     []*hadoopyarn.ResourceTypeInfoProto{{Name: proto.String("yarn.io/gpu")}},
		}, nil
	})
	var next atomic.Int32
	f.Handle("allocate", func(ctx context.Context, c *yarntest.Call) (proto.Message, error) {
		if !f.registered.Load() {
			return nil, &yarntest.Exception{Class: "org.apache.hadoop.yarn.exceptions.ApplicationMasterNotRegisteredException",
				Message: "AM is not registered for known application attempt: " + AttemptID(testAttempt)}
		}
		req := &hadoopyarn.AllocateRequestProto{}
		if err := c.Decode(req); err != nil {
			return nil, err
		}
		f.responseIDs = append(f.responseIDs, req.GetResponseId())
		resp := &hadoopyarn.AllocateResponseProto{ResponseId: proto.Int32(next.Add(1))}
		if f.rollTo != nil {
			resp.AmRmToken = f.rollTo.Proto()
			resp.AmRmToken.Service = proto.String("")
		}
		return resp, nil
	})
	f.Handle("finishApplicationMaster", func(ctx context.Context, c *yarntest.Call) (proto.Message, error) {
		return &hadoopyarn.FinishApplicationMasterResponseProto{IsUnregistered: proto.Bool(f.finishes.Add(1) >= 3)}, nil
	})
	return f
}

func TestAMRMClient(t *testing.T) {
	tok := amrmToken(t, 1, "placeholder")
	rm := newFakeScheduler(t, tok)
	tok.Service = rm.Addr
	c, err := NewAMRMClient(AMConfig{Addrs: []string{rm.Addr}, Token: tok})
	require.NoError(t, err)
	defer c.Close()
	ctx := testCtx(t)

	_, err = c.Allocate(ctx, AllocateRequest{})
	require.ErrorIs(t, err, ErrApplicationMasterNotRegistered)

	reg, err := c.Register(ctx, RegisterRequest{Host: "h", RPCPort: -1})
	require.NoError(t, err)
	require.True(t, HasResourceType(reg.ResourceTypes, "yarn.io/gpu"))

	for i := 0; i < 3; i++ {
		_, err := c.Allocate(ctx, AllocateRequest{})
		require.NoError(t, err)
	}
	require.Equal(t, []int32{0, 1, 2}, rm.responseIDs, "the client keeps response_id, starting at 0")

	// The RM rolls its key: the next handshake must use the new token.
	newTok := amrmToken(t, 2, "")
	rm.AddToken(newTok.Identifier, newTok.Password)
	rm.rollTo = newTok
	_, err = c.Allocate(ctx, AllocateRequest{})
	require.NoError(t, err)
	require.Equal(t, newTok.Identifier, c.Token().Identifier)
	require.Equal(t, rm.Addr, c.Token().Service, "the service of the old token is kept")
	rm.rollTo = nil
	rm.RemoveToken(tok.Identifier)
	rm.DropConnections()
	_, err = c.Allocate(ctx, AllocateRequest{})
	require.NoError(t, err, "reconnect authenticates with the rolled token")

	require.NoError(t, c.Finish(ctx, FinishRequest{Status: StatusSucceeded}))
	require.Equal(t, int32(3), rm.finishes.Load(), "finish repeats until unregistered")
}

func TestAMRMClientAuthErrors(t *testing.T) {
	good := amrmToken(t, 1, "")
	rm := newFakeScheduler(t, good)
	ctx := testCtx(t)
	t.Run("wrong password", func(t *testing.T) {
		bad := *good
		bad.Password = []byte("wrong")
		c, err := NewAMRMClient(AMConfig{Addrs: []string{rm.Addr}, Token: &bad, Backoff: Backoff{Attempts: 1}})
		require.NoError(t, err)
		defer c.Close()
		_, err = c.Register(ctx, RegisterRequest{})
		require.ErrorIs(t, err, ErrUnauthorized)
		require.NotContains(t, err.Error(), "wrong")
	})
	t.Run("unknown token", func(t *testing.T) {
		c, err := NewAMRMClient(AMConfig{Addrs: []string{rm.Addr}, Token: amrmToken(t, 9, "")})
		require.NoError(t, err)
		defer c.Close()
		_, err = c.Register(ctx, RegisterRequest{})
		require.ErrorIs(t, err, ErrInvalidToken)
	})
	t.Run("no token", func(t *testing.T) {
		_, err := NewAMRMClient(AMConfig{Addrs: []string{rm.Addr}})
		require.ErrorIs(t, err, ErrNoToken)
		_, err = NewAMRMClient(AMConfig{Addrs: []string{rm.Addr}, Token: &security.Token{Kind: security.KindNMToken}})
		require.ErrorIs(t, err, ErrNoToken)
	})
}
