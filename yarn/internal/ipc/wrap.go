package ipc

import (
	"bufio"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/xres/xres/hadoopproto/hadoopcommon"
	"github.com/xres/xres/yarn/internal/sasl"
)

// With a SASL security layer (hadoop.rpc.protection integrity or privacy)
// every packet after the SASL exchange travels inside a WRAP message:
//
//	+-------------------+------------------------------+--------------------------------------+
//	| length: uint32 BE | varint | RpcRequestHeader    | varint | RpcSaslProto{state=WRAP,     |
//	|                   |          callId=-33          |          token=wrap(packet bytes)}   |
//	+-------------------+------------------------------+--------------------------------------+
//
// The wrapped bytes are ordinary packets, length prefix included, so the
// unwrapped tokens form the same byte stream a plain connection carries. A
// batch of packets (see send) is wrapped as one stream: cut into pieces no
// longer than the peer's buffer, one WRAP message each, all of them sent
// with one write.
func (c *Conn) writeWire(pkt []byte) (int, error) {
	if c.layer == nil {
		return c.nc.Write(pkt)
	}
	out := c.wrapBuf[:0]
	for len(pkt) > 0 {
		n := min(len(pkt), c.layer.MaxSend())
		token, err := c.layer.Wrap(pkt[:n])
		if err != nil {
			return 0, err
		}
		out = appendWrap(out, token)
		pkt = pkt[n:]
	}
	if cap(out) <= maxKeptBuffer {
		c.wrapBuf = out[:0]
	}
	return c.nc.Write(out)
}

// unwrapReader turns the WRAP messages of a protected connection back into
// the plain packet stream.
type unwrapReader struct {
	src   *bufio.Reader
	layer sasl.Layer
	buf   []byte
}

func (u *unwrapReader) Read(p []byte) (int, error) {
	for len(u.buf) == 0 {
		pkt, err := readPacket(u.src)
		if err != nil {
			return 0, err
		}
		r, err := decodeResponse(pkt)
		if err != nil {
			return 0, err
		}
		if r.status != hadoopcommon.RpcResponseHeaderProto_SUCCESS {
			return 0, remoteError("connection", r.header)
		}
		m := &hadoopcommon.RpcSaslProto{}
		if err := proto.Unmarshal(r.body, m); err != nil || m.GetState() != hadoopcommon.RpcSaslProto_WRAP {
			return 0, fmt.Errorf("%w: expected a SASL WRAP message on a protected connection", ErrFrame)
		}
		if u.buf, err = u.layer.Unwrap(m.GetToken()); err != nil {
			return 0, fmt.Errorf("%w: %v", ErrFrame, err)
		}
	}
	n := copy(p, u.buf)
	u.buf = u.buf[n:]
	return n, nil
}
