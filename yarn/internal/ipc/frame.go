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
	callID int32
	status hadoopcommon.RpcResponseHeaderProto_RpcStatusProto
	// header is the whole header; decodeResponse leaves it nil for a plain
	// SUCCESS, whose callId and status are all a caller needs.
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
	r := &response{}
	if id, ok := successHeader(hb); ok {
		r.callID, r.status = int32(id), hadoopcommon.RpcResponseHeaderProto_SUCCESS
	} else {
		h := &hadoopcommon.RpcResponseHeaderProto{}
		if err := proto.Unmarshal(hb, h); err != nil {
			return nil, fmt.Errorf("%w: response header: %v", ErrFrame, err)
		}
		r.callID, r.status, r.header = int32(h.GetCallId()), h.GetStatus(), h
	}
	body, rest, _, err := splitDelimited(rest)
	if err != nil {
		return nil, err
	}
	if len(rest) != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes", ErrFrame, len(rest))
	}
	r.body = body
	return r, nil
}

// successHeader reads callId (field 1) and status (field 2) of an
// RpcResponseHeaderProto without building the message, skipping the other
// fields. ok is true only for a well-formed header with both set and status
// SUCCESS; anything else goes through proto.Unmarshal, which reports what
// is wrong and keeps the error fields.
func successHeader(b []byte) (callID uint32, ok bool) {
	var haveID, success bool
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 || num > protowire.MaxValidNumber { // ConsumeTag takes numbers up to 2^31-1; proto.Unmarshal refuses those above 2^29-1
			return 0, false
		}
		b = b[n:]
		if (num == 1 || num == 2) && typ == protowire.VarintType {
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return 0, false
			}
			b = b[n:]
			if num == 1 {
				callID, haveID = uint32(v), true
			} else {
				success = v == uint64(hadoopcommon.RpcResponseHeaderProto_SUCCESS)
			}
			continue
		}
		if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
			return 0, false
		}
		b = b[n:]
	}
	return callID, haveID && success
}

// fullHeader returns the response header, rebuilding it for a SUCCESS read
// on the fast path.
func (r *response) fullHeader() *hadoopcommon.RpcResponseHeaderProto {
	if r.header != nil {
		return r.header
	}
	return &hadoopcommon.RpcResponseHeaderProto{CallId: proto.Uint32(uint32(r.callID)), Status: r.status.Enum()}
}

// DecodeResponse parses one server packet body (the bytes after the 4-byte
// length) and returns the response header and the raw response message. It
// exists for tests and fuzzing of the decoder.
func DecodeResponse(p []byte) (*hadoopcommon.RpcResponseHeaderProto, []byte, error) {
	r, err := decodeResponse(p)
	if err != nil {
		return nil, nil, err
	}
	if r.header == nil { // the fast path kept callId and status only
		hb, _, _, _ := splitDelimited(p)
		r.header = &hadoopcommon.RpcResponseHeaderProto{}
		if err := proto.Unmarshal(hb, r.header); err != nil {
			return nil, nil, fmt.Errorf("%w: response header: %v", ErrFrame, err)
		}
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

// appendRequestHeader appends the bytes proto.Marshal gives for
// requestHeader(callID, clientID, retry), without building the message:
//
//	0x08 rpcKind=2 (protocol buffer) | 0x10 rpcOp=0 (final packet) |
//	0x18 zigzag(callId) | 0x22 len clientId | 0x28 zigzag(retryCount)
func appendRequestHeader(dst []byte, callID int32, clientID []byte, retry int32) []byte {
	dst = protowire.AppendTag(dst, 1, protowire.VarintType)
	dst = protowire.AppendVarint(dst, uint64(hadoopcommon.RpcKindProto_RPC_PROTOCOL_BUFFER))
	dst = protowire.AppendTag(dst, 2, protowire.VarintType)
	dst = protowire.AppendVarint(dst, uint64(hadoopcommon.RpcRequestHeaderProto_RPC_FINAL_PACKET))
	dst = protowire.AppendTag(dst, 3, protowire.VarintType)
	dst = protowire.AppendVarint(dst, protowire.EncodeZigZag(int64(callID)))
	dst = protowire.AppendTag(dst, 4, protowire.BytesType)
	dst = protowire.AppendBytes(dst, clientID)
	dst = protowire.AppendTag(dst, 5, protowire.VarintType)
	return protowire.AppendVarint(dst, protowire.EncodeZigZag(int64(retry)))
}

// appendCall appends one call packet (see encodePacket) to dst: the
// RpcRequestHeaderProto for callID, methodHeader (a RequestHeaderProto
// already marshalled) and req, marshalled straight into dst.
func appendCall(dst []byte, callID int32, clientID, methodHeader []byte, req proto.Message) ([]byte, error) {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	var hb [64]byte
	dst = protowire.AppendBytes(dst, appendRequestHeader(hb[:0], callID, clientID, 0))
	dst = protowire.AppendBytes(dst, methodHeader)
	n := proto.Size(req)
	dst = protowire.AppendVarint(dst, uint64(n))
	before := len(dst)
	dst, err := proto.MarshalOptions{UseCachedSize: true}.MarshalAppend(dst, req)
	if err != nil {
		return dst[:start], fmt.Errorf("marshal %s: %w", req.ProtoReflect().Descriptor().Name(), err)
	}
	if len(dst)-before != n {
		return dst[:start], fmt.Errorf("marshal %s: message changed while being sent", req.ProtoReflect().Descriptor().Name())
	}
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst, nil
}

// appendWrap appends one SASL WRAP packet carrying token (see writeWire).
func appendWrap(dst, token []byte) []byte {
	var hb [16]byte
	h := appendRequestHeader(hb[:0], callIDSASL, nil, invalidRetryCount)
	msgLen := protowire.SizeTag(2) + protowire.SizeVarint(uint64(hadoopcommon.RpcSaslProto_WRAP)) +
		protowire.SizeTag(3) + protowire.SizeBytes(len(token))
	n := protowire.SizeBytes(len(h)) + protowire.SizeBytes(msgLen)
	dst = binary.BigEndian.AppendUint32(dst, uint32(n))
	dst = protowire.AppendBytes(dst, h)
	dst = protowire.AppendVarint(dst, uint64(msgLen))
	dst = protowire.AppendTag(dst, 2, protowire.VarintType)
	dst = protowire.AppendVarint(dst, uint64(hadoopcommon.RpcSaslProto_WRAP))
	dst = protowire.AppendTag(dst, 3, protowire.BytesType)
	return protowire.AppendBytes(dst, token)
}

// EncodePacket frames msgs as one packet (4-byte length, then each message
// varint-delimited). Exported for the in-process fake servers in yarntest.
func EncodePacket(msgs ...proto.Message) ([]byte, error) { return encodePacket(msgs...) }

// ReadPacket reads one length-prefixed packet body. Exported for yarntest.
func ReadPacket(r *bufio.Reader) ([]byte, error) { return readPacket(r) }

// SplitDelimited cuts one varint-delimited message off b; ok is false when
// b is empty. Exported for yarntest.
func SplitDelimited(b []byte) (msg, rest []byte, ok bool, err error) { return splitDelimited(b) }
