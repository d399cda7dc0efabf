package yarn

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/xres/xres/hadoopproto/hadoopyarn"
	"github.com/xres/xres/yarn/security"
	"github.com/xres/xres/yarn/yarntest"
)

func TestNMClient(t *testing.T) {
	nm := yarntest.NewServer(t, yarntest.Options{Token: true})
	nmTok := &security.Token{Identifier: []byte("nm-ident"), Password: []byte("nm-pw"), Kind: security.KindNMToken, Service: nm.Addr}
	nm.AddToken(nmTok.Identifier, nmTok.Password)
	containerTok := &security.Token{Identifier: []byte("ctok"), Password: []byte("cpw"), Kind: security.KindContainerToken}
	cid := &hadoopyarn.ContainerIdProto{AppAttemptId: testAttempt, Id: proto.Int64(2)}
	bad := &hadoopyarn.ContainerIdProto{AppAttemptId: testAttempt, Id: proto.Int64(3)}
	var launched *hadoopyarn.StartContainerRequestProto
	nm.Handle("startContainers", func(ctx context.Context, c *yarntest.Call) (proto.Message, error) {
		req := &hadoopyarn.StartContainersRequestProto{}
		if err := c.Decode(req); err != nil {
			return nil, err
		}
		launched = req.GetStartContainerRequest()[0]
		if string(launched.GetContainerToken().GetIdentifier()) != "ctok" {
			return &hadoopyarn.StartContainersResponseProto{FailedRequests: []*hadoopyarn.ContainerExceptionMapProto{{
				ContainerId: bad, Exception: &hadoopyarn.SerializedExceptionProto{
					ClassName: proto.String("org.apache.hadoop.yarn.exceptions.YarnException"), Message: proto.String("Unauthorized request to start container.\nmore")}}}}, nil
		}
		return &hadoopyarn.StartContainersResponseProto{SucceededRequests: []*hadoopyarn.ContainerIdProto{cid}}, nil
	})
	nm.Handle("getContainerStatuses", func(ctx context.Context, c *yarntest.Call) (proto.Message, error) {
		return &hadoopyarn.GetContainerStatusesResponseProto{Status: []*hadoopyarn.ContainerStatusProto{{
			ContainerId: cid, State: hadoopyarn.ContainerStateProto_C_COMPLETE.Enum(), ExitStatus: proto.Int32(0)}}}, nil
	})
	nm.Handle("stopContainers", func(ctx context.Context, c *yarntest.Call) (proto.Message, error) {
		return &hadoopyarn.StopContainersResponseProto{SucceededRequests: []*hadoopyarn.ContainerIdProto{cid}}, nil
	})

	container := Container{ID: ContainerID(cid), NodeID: nm.Addr, Token: *containerTok}
	c := NewNMClient(NMConfig{})
	defer c.Close()
	ctx := testCtx(t)
	launch := LaunchContext{Commands: []string{"/bin/sh", "-c", "'exit 0'"}}

	require.NoError(t, c.StartContainer(ctx, container, *nmTok, launch))
	require.Equal(t, []string{"/bin/sh", "-c", "'exit 0'"}, launched.GetContainerLaunchContext().GetCommand())

	st, err := c.GetContainerStatus(ctx, container, *nmTok)
	require.NoError(t, err)
	require.Equal(t, "COMPLETE", st.State)
	require.Equal(t, 0, st.ExitStatus)
	require.NoError(t, c.StopContainer(ctx, container, *nmTok))

	t.Run("per-container failure", func(t *testing.T) {
		other := container
		other.Token = security.Token{Identifier: []byte("forged"), Kind: security.KindContainerToken}
		err := c.StartContainer(ctx, other, *nmTok, launch)
		var ce *ContainerError
		require.ErrorAs(t, err, &ce)
		require.Equal(t, "container_1700000000000_0003_01_000003", ce.Container)
		require.Equal(t, "container container_1700000000000_0003_01_000003: org.apache.hadoop.yarn.exceptions.YarnException: Unauthorized request to start container.", err.Error())
	})
	t.Run("wrong nm token", func(t *testing.T) {
		wrong := *nmTok
		wrong.Identifier = []byte("other")
		err := c.StartContainer(ctx, container, wrong, launch)
		require.ErrorIs(t, err, ErrUnauthorized)
	})
	t.Run("missing nm token", func(t *testing.T) {
		err := c.StartContainer(ctx, container, security.Token{}, launch)
		require.ErrorIs(t, err, ErrNoToken)
	})
}
