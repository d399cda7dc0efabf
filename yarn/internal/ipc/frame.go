package ipc

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/xres/xres/hadoopproto/hadoopcommon"
)

// Wire constants (Hadoop's RpcConstants and Server.AuthProtocol).
const (
	rpcVersion        = 0x09
	serviceClass      = 0x00
	authNone          = 0x00
	authSASL          = 0xdf
	protocolVersion   = 1 // clientProtocolVersion of every YARN *PB protocol
	callIDContext     = -3
	callIDPing        = -4
	callIDSASL        = -33
	callIDAuthFailed  = -1
	maxFrameLen       = 64 << 20 // ipc.maximum.data.length default
	invalidRetryCount = -1
)

// ErrFrame marks a packet that does not parse: bad length, truncated
// varint, or a message that is not valid protobuf.
var ErrFrame = errors.New("malformed ipc frame")

// Connection preamble, written once after the TCP connect:
//
//	+------+------+------+------+---------+---------------+---------------+
//	| 'h'  | 'r'  | 'p'  | 'c'  | version | service class | auth protocol |
//	| 0x68 | 0x72 | 0x70 | 0x63 |  0x09   |     0x00      | 0x00 or 0xDF  |
//	+------+------+------+------+---------+---------------+---------------+
//	                                        0x00 = none (SIMPLE), 0xDF = SASL
func preamble(sasl bool) []byte {
	auth := byte(authNone)
	if sasl {
		auth = authSASL
	}
	return []byte{'h', 'r', 'p', 'c', rpcVersion, serviceClass, auth}
}

// Every packet, both directions:
//
//	+-------------------+---------------------------+------------------------+
//	| length: uint32 BE | varint len | header proto | varint len | message   | ...
//	+-------------------+---------------------------+------------------------+
//	  length counts       request: RpcRequestHeaderProto, then for calls a
//	  all that follows    RequestHeaderProto and the request message; for
//	                      SASL/context one RpcSaslProto/IpcConnectionContextProto;
//	                      for a ping nothing.
//	                      response: RpcResponseHeaderProto, then the response
//	                      message (absent on ERROR and FATAL).
func encodePacket(msgs ...proto.Message) ([]byte, error) {
	buf := make([]byte, 4, 128)
	for _, m := range msgs {
		b, err := proto.Marshal(m)
		if err != nil {
			return nil, fmt.Errorf("marshal %s: %w", m.ProtoReflect().Descriptor().Name(), err)
		}
		buf = protowire.AppendVarint(buf, uint64(len(b)))
		buf = append(buf, b...)
	}
	binary.BigEndian.PutUint32(buf, uint32(len(buf)-4))
	return buf, nil
}

// readPacket reads one length-prefixed packet and returns its body.
func readPacket(r *bufio.Reader) ([]byte, error) {
	var lenBuf [4]byte
	if _, err := io.ReadFull(r, lenBuf[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(lenBuf[:])
	if n > maxFrameLen {
		return nil, fmt.Errorf("%w: packet length %d exceeds %d", ErrFrame, n, maxFrameLen)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return body, nil
}

// splitDelimited cuts one varint-length-delimited message off the front of
// b. ok is false when b is empty (the optional message is absent).
func splitDelimited(b []byte) (msg, rest []byte, ok bool, err error) {
	if len(b) == 0 {
		return nil, nil, false, nil
	}
	n, k := protowire.ConsumeVarint(b)
	if k < 0 {
		return nil, nil, false, fmt.Errorf("%w: bad length varint", ErrFrame)
	}
	b = b[k:]
	if n > uint64(len(b)) {
		return nil, nil, false, fmt.Errorf("%w: message length %d exceeds the %d bytes left", ErrFrame, n, len(b))
	}
	return b[:n], b[n:], true, nil
}

// response is one decoded server packet.
type response struct {
	header *hadoopcommon.RpcResponseHeaderProto
	body   []byte // the raw response message, nil when absent
}

// decodeResponse parses a response packet body: the header, then at most one
// message.
func decodeResponse(p []byte) (*response, error) {
	hb, rest, ok, err := splitDelimited(p)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%w: empty packet", ErrFrame)
	}
	h := &hadoopcommon.RpcResponseHeaderProto{}
	if err := proto.Unmarshal(hb, h); err != nil {
		return nil, fmt.Errorf("%w: response header: %v", ErrFrame, err)
	}
	body, rest, _, err := splitDelimited(rest)
	if err != nil {
		return nil, err
	}
	if len(rest) != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes", ErrFrame, len(rest))
	}
	return &response{header: h, body: body}, nil
}

// DecodeResponse parses one server packet body (the bytes after the 4-byte
// length) and returns the response header and the raw response message. It
// exists for tests and fuzzing of the decoder.
func DecodeResponse(p []byte) (*hadoopcommon.RpcResponseHeaderProto, []byte, error) {
	r, err := decodeResponse(p)
	if err != nil {
		return nil, nil, err
	}
	return r.header, r.body, nil
}

// requestHeader builds the RpcRequestHeaderProto of one packet.
func requestHeader(callID int32, clientID []byte, retry int32) *hadoopcommon.RpcRequestHeaderProto {
	return &hadoopcommon.RpcRequestHeaderProto{
		RpcKind:    hadoopcommon.RpcKindProto_RPC_PROTOCOL_BUFFER.Enum(),
		RpcOp:      hadoopcommon.RpcRequestHeaderProto_RPC_FINAL_PACKET.Enum(),
		CallId:     proto.Int32(callID),
		ClientId:   clientID,
		RetryCount: proto.Int32(retry),
	}
}

// EncodePacket frames msgs as one packet (4-byte length, then each message
// varint-delimited). Exported for the in-process fake servers in yarntest.
func EncodePacket(msgs ...proto.Message) ([]byte, error) { return encodePacket(msgs...) }

// ReadPacket reads one length-prefixed packet body. Exported for yarntest.
func ReadPacket(r *bufio.Reader) ([]byte, error) { return readPacket(r) }

// SplitDelimited cuts one varint-delimited message off b; ok is false when
// b is empty. Exported for yarntest.
func SplitDelimited(b []byte) (msg, rest []byte, ok bool, err error) { return splitDelimited(b) }
