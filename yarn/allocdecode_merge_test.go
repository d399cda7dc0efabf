package yarn

import (
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/xres/xres/hadoopproto/hadoopcommon"
	"github.com/xres/xres/hadoopproto/hadoopyarn"
)

// A container whose message fields arrive in parts (the node's host in one
// encoding, its port in the next; the token's identifier and password in
// one, its kind and service in the next) is the merge of the parts, as
// proto.Unmarshal merges a message field seen twice: not the last part
// alone. Caught: the decoder taking NodeId, ContainerId or the token
// last-wins (the random answers of TestDecodeAllocateResponseMatchesProto
// always send these fields whole, so both give the same there).
func TestDecodeAllocateResponseMergesSplitFields(t *testing.T) {
	part1 := &hadoopyarn.ContainerProto{
		Id:             &hadoopyarn.ContainerIdProto{AppId: &hadoopyarn.ApplicationIdProto{Id: proto.Int32(7), ClusterTimestamp: proto.Int64(1700000000000)}},
		NodeId:         &hadoopyarn.NodeIdProto{Host: proto.String("nm7.example")},
		ContainerToken: &hadoopcommon.TokenProto{Identifier: []byte("ident"), Password: []byte("pass")},
	}
	part2 := &hadoopyarn.ContainerProto{
		Id: &hadoopyarn.ContainerIdProto{Id: proto.Int64(3),
			AppAttemptId: &hadoopyarn.ApplicationAttemptIdProto{AttemptId: proto.Int32(2)}},
		NodeId:         &hadoopyarn.NodeIdProto{Port: proto.Int32(45454)},
		ContainerToken: &hadoopcommon.TokenProto{Kind: proto.String("ContainerToken"), Service: proto.String("nm7.example:45454")},
	}
	opts := proto.MarshalOptions{AllowPartial: true}
	b1, err := opts.Marshal(part1)
	require.NoError(t, err)
	b2, err := opts.Marshal(part2)
	require.NoError(t, err)
	msg := protowire.AppendBytes(protowire.AppendTag(nil, allocatedField, protowire.BytesType), append(b1, b2...))

	want, err := viaProto(msg)
	require.NoError(t, err)
	got, err := DecodeAllocateResponse(msg)
	require.NoError(t, err)
	require.Equal(t, want, got)
	require.Len(t, got.Allocated, 1)
	c := got.Allocated[0]
	require.Equal(t, "nm7.example:45454", c.NodeID)
	require.Equal(t, "container_1700000000000_0007_02_000003", c.ID)
	require.Equal(t, "ident", string(c.Token.Identifier))
	require.Equal(t, "pass", string(c.Token.Password))
	require.Equal(t, "ContainerToken", c.Token.Kind)
	require.Equal(t, "nm7.example:45454", c.Token.Service)
}
