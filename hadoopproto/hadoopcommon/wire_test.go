package hadoopcommon_test

import (
	"encoding/hex"
	"testing"

	// Linked only to prove that both sets of Hadoop messages can live in one
	// binary: a clash in the global protobuf registry panics at init.
	_ "github.com/colinmarc/hdfs/v2"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/xres/xres/hadoopproto/hadoopcommon"
)

// The SASL NEGOTIATE header and body as Hadoop's own client writes them
// (worked out from RpcHeader.proto's field numbers and zigzag encoding).
func TestWireBytes(t *testing.T) {
	tests := []struct {
		name string
		msg  proto.Message
		want string
	}{
		{
			name: "sasl header",
			msg: &hadoopcommon.RpcRequestHeaderProto{
				RpcKind:    hadoopcommon.RpcKindProto_RPC_PROTOCOL_BUFFER.Enum(),
				RpcOp:      hadoopcommon.RpcRequestHeaderProto_RPC_FINAL_PACKET.Enum(),
				CallId:     proto.Int32(-33),
				ClientId:   []byte{},
				RetryCount: proto.Int32(-1),
			},
			want: "0802100018412200" + "2801",
		},
		{
			name: "negotiate",
			msg:  &hadoopcommon.RpcSaslProto{State: hadoopcommon.RpcSaslProto_NEGOTIATE.Enum()},
			want: "1001",
		},
		{
			name: "response header call id -33 arrives unsigned",
			msg: &hadoopcommon.RpcResponseHeaderProto{
				CallId: proto.Uint32(uint32(0xffffffdf)),
				Status: hadoopcommon.RpcResponseHeaderProto_SUCCESS.Enum(),
			},
			want: "08dfffffff0f1000",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := proto.Marshal(tt.msg)
			require.NoError(t, err)
			require.Equal(t, tt.want, hex.EncodeToString(b))
		})
	}
}

// A SaslAuth echoed to the server must keep an explicitly empty protocol:
// Java compares the echo with its own entry, presence included.
func TestSaslAuthKeepsEmptyProtocol(t *testing.T) {
	a := &hadoopcommon.RpcSaslProto_SaslAuth{
		Method: proto.String("TOKEN"), Mechanism: proto.String("DIGEST-MD5"),
		Protocol: proto.String(""), ServerId: proto.String("default"),
	}
	b, err := proto.Marshal(a)
	require.NoError(t, err)
	var back hadoopcommon.RpcSaslProto_SaslAuth
	require.NoError(t, proto.Unmarshal(b, &back))
	require.NotNil(t, back.Protocol, "empty protocol must stay present on the wire")
	require.Contains(t, hex.EncodeToString(b), "1a00")
}
