package yarn

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/xres/xres/hadoopproto/hadoopyarn"
	"github.com/xres/xres/yarn/security"
	"github.com/xres/xres/yarn/yarntest"
)

// StartContainersEach sends one startContainers call in which each
// container has its own credentials and the rest of the launch context is
// the same; a container without its own keeps the launch context's.
func TestNMClientStartContainersEach(t *testing.T) {
	nm := yarntest.NewServer(t, yarntest.Options{Token: true})
	nmTok := &security.Token{Identifier: []byte("nm-ident"), Password: []byte("nm-pw"), Kind: security.KindNMToken, Service: nm.Addr}
	nm.AddToken(nmTok.Identifier, nmTok.Password)
	var mu sync.Mutex
	var calls [][]*hadoopyarn.StartContainerRequestProto
	nm.Handle("startContainers", func(ctx context.Context, c *yarntest.Call) (proto.Message, error) {
		req := &hadoopyarn.StartContainersRequestProto{}
		if err := c.Decode(req); err != nil {
			return nil, err
		}
		mu.Lock()
		calls = append(calls, req.GetStartContainerRequest())
		mu.Unlock()
		return &hadoopyarn.StartContainersResponseProto{}, nil
	})
	var cs []Container
	for i := int64(2); i <= 4; i++ {
		id := &hadoopyarn.ContainerIdProto{AppAttemptId: testAttempt, Id: proto.Int64(i)}
		cs = append(cs, Container{ID: ContainerID(id), NodeID: nm.Addr, Token: security.Token{Identifier: []byte(ContainerID(id)), Kind: security.KindContainerToken}})
	}
	c := NewNMClient(NMConfig{})
	defer c.Close()
	launch := LaunchContext{Commands: []string{"run"}, Env: map[string]string{"A": "1"}, Tokens: []byte("shared")}
	errs := c.StartContainersEach(testCtx(t), cs, *nmTok, launch, [][]byte{[]byte("own-2"), nil, []byte("own-4")})
	require.Equal(t, []error{nil, nil, nil}, errs)
	require.Len(t, calls, 1, "one call for the batch")
	var got []string
	for _, r := range calls[0] {
		lc := r.GetContainerLaunchContext()
		got = append(got, string(lc.GetTokens()))
		require.Equal(t, []string{"run"}, lc.GetCommand())
		require.Len(t, lc.GetEnvironment(), 1)
		require.Equal(t, "A", lc.GetEnvironment()[0].GetKey())
	}
	require.Equal(t, []string{"own-2", "shared", "own-4"}, got)
}
