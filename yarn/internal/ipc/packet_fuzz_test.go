package ipc

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/xres/xres/hadoopproto/hadoopcommon"
)

// FuzzReadPacket reads packets off an arbitrary byte stream, as the
// connection's read loop does: each packet is the stream's next length and
// that many bytes; the stream ends cleanly (io.EOF) only at a packet
// boundary, else with io.ErrUnexpectedEOF or ErrFrame (a length beyond
// ipc.maximum.data.length); never a panic, and each body decodes or fails
// with ErrFrame.
func FuzzReadPacket(f *testing.F) {
	p, err := EncodePacket(&hadoopcommon.RpcResponseHeaderProto{CallId: proto.Uint32(7), Status: hadoopcommon.RpcResponseHeaderProto_SUCCESS.Enum()})
	require.NoError(f, err)
	f.Add(append(append([]byte{}, p...), p...))
	f.Add([]byte{0, 0, 0, 0})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 1})
	f.Add([]byte{0, 0, 0, 9, 1, 2})
	f.Fuzz(func(t *testing.T, stream []byte) {
		r := bufio.NewReader(bytes.NewReader(stream))
		off := 0
		for {
			body, err := readPacket(r)
			if err != nil {
				switch {
				case errors.Is(err, io.EOF):
					require.Equal(t, len(stream), off, "a clean end inside a packet")
				case errors.Is(err, io.ErrUnexpectedEOF):
					require.Less(t, off, len(stream))
				default:
					require.ErrorIs(t, err, ErrFrame)
					require.Greater(t, binary.BigEndian.Uint32(stream[off:]), uint32(maxFrameLen))
				}
				return
			}
			require.Equal(t, uint32(len(body)), binary.BigEndian.Uint32(stream[off:]))
			require.Equal(t, stream[off+4:off+4+len(body)], body)
			off += 4 + len(body)
			if _, err := decodeResponse(body); err != nil {
				require.ErrorIs(t, err, ErrFrame)
			}
		}
	})
}

// identityLayer is a security layer that protects nothing, for the fuzzer
// to reach the WRAP framing.
type identityLayer struct{}

func (identityLayer) Wrap(m []byte) ([]byte, error)   { return m, nil }
func (identityLayer) Unwrap(t []byte) ([]byte, error) { return t, nil }
func (identityLayer) MaxSend() int                    { return 1 << 16 }

// FuzzUnwrapReader reads a protected connection's stream (WRAP messages
// inside packets) of arbitrary bytes: never a panic, and what comes out is
// the concatenation of the WRAP tokens in order.
func FuzzUnwrapReader(f *testing.F) {
	saslID := int32(callIDSASL)
	sasl32 := uint32(saslID)
	wrap := func(token []byte) []byte {
		h := &hadoopcommon.RpcResponseHeaderProto{CallId: proto.Uint32(sasl32), Status: hadoopcommon.RpcResponseHeaderProto_SUCCESS.Enum()}
		p, err := EncodePacket(h, &hadoopcommon.RpcSaslProto{State: hadoopcommon.RpcSaslProto_WRAP.Enum(), Token: token})
		require.NoError(f, err)
		return p
	}
	f.Add(append(wrap([]byte("abc")), wrap([]byte("def"))...))
	f.Add(wrap(nil))
	f.Add([]byte{0, 0, 0, 2, 0, 0})
	f.Fuzz(func(t *testing.T, stream []byte) {
		u := &unwrapReader{src: bufio.NewReader(bytes.NewReader(stream)), layer: identityLayer{}}
		out, err := io.ReadAll(io.LimitReader(u, int64(len(stream))+1))
		require.LessOrEqual(t, len(out), len(stream), "more bytes out than in")
		if err != nil {
			var re *RemoteError
			if !errors.Is(err, ErrFrame) && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.As(err, &re) {
				t.Fatalf("unexpected error type %T: %v", err, err)
			}
		}
	})
}
