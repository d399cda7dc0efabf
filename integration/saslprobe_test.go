//go:build integration

package integration

import (
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/xres/xres/hadoopproto/hadoopcommon"
)

// saslOffers asks the Hadoop RPC server at addr what it accepts, independently of
// xres's client: it sends the connection preamble and a SASL NEGOTIATE, returns the
// auths of the server's NEGOTIATE answer (method, mechanism, protocol, serverId and,
// for DIGEST-MD5, the first challenge with its qop list), and hangs up.
//
//	"hrpc" 9 0 0xDF | len | RpcRequestHeaderProto{callId=-33} | RpcSaslProto{NEGOTIATE}
//	                ◄── len | RpcResponseHeaderProto | RpcSaslProto{NEGOTIATE, auths}
func saslOffers(t *testing.T, addr string) []*hadoopcommon.RpcSaslProto_SaslAuth {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 10*time.Second)
	require.NoError(t, err, "dial %s", addr)
	defer conn.Close()
	require.NoError(t, conn.SetDeadline(time.Now().Add(20*time.Second)))

	pkt := appendDelimited(t, nil, &hadoopcommon.RpcRequestHeaderProto{
		RpcKind:    hadoopcommon.RpcKindProto_RPC_PROTOCOL_BUFFER.Enum(),
		RpcOp:      hadoopcommon.RpcRequestHeaderProto_RPC_FINAL_PACKET.Enum(),
		CallId:     proto.Int32(-33),
		ClientId:   []byte{},
		RetryCount: proto.Int32(-1),
	})
	pkt = appendDelimited(t, pkt, &hadoopcommon.RpcSaslProto{State: hadoopcommon.RpcSaslProto_NEGOTIATE.Enum()})
	out := append([]byte("hrpc"), 9, 0, 0xDF)
	out = binary.BigEndian.AppendUint32(out, uint32(len(pkt)))
	_, err = conn.Write(append(out, pkt...))
	require.NoError(t, err, "write to %s", addr)

	var n [4]byte
	_, err = io.ReadFull(conn, n[:])
	require.NoError(t, err, "read from %s", addr)
	size := binary.BigEndian.Uint32(n[:])
	require.Less(t, size, uint32(1<<20), "answer length from %s", addr)
	in := make([]byte, size)
	_, err = io.ReadFull(conn, in)
	require.NoError(t, err, "read from %s", addr)

	header := &hadoopcommon.RpcResponseHeaderProto{}
	in = consumeDelimited(t, in, header)
	require.Equal(t, hadoopcommon.RpcResponseHeaderProto_SUCCESS, header.GetStatus(),
		"%s answered NEGOTIATE with %s: %s", addr, header.GetExceptionClassName(), header.GetErrorMsg())
	msg := &hadoopcommon.RpcSaslProto{}
	consumeDelimited(t, in, msg)
	require.Equal(t, hadoopcommon.RpcSaslProto_NEGOTIATE, msg.GetState(), "%s", addr)
	return msg.GetAuths()
}

func appendDelimited(t *testing.T, b []byte, m proto.Message) []byte {
	t.Helper()
	enc, err := proto.Marshal(m)
	require.NoError(t, err)
	return append(protowire.AppendVarint(b, uint64(len(enc))), enc...)
}

func consumeDelimited(t *testing.T, b []byte, m proto.Message) []byte {
	t.Helper()
	v, n := protowire.ConsumeVarint(b)
	require.Positive(t, n, "bad length prefix")
	require.LessOrEqual(t, v, uint64(len(b)-n), "short message")
	require.NoError(t, proto.Unmarshal(b[n:n+int(v)], m))
	return b[n+int(v):]
}

// offer returns the auth with the given method, or nil.
func offer(auths []*hadoopcommon.RpcSaslProto_SaslAuth, method string) *hadoopcommon.RpcSaslProto_SaslAuth {
	for _, a := range auths {
		if a.GetMethod() == method {
			return a
		}
	}
	return nil
}
