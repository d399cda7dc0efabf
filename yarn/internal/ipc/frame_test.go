package ipc

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/xres/xres/hadoopproto/hadoopcommon"
)

func TestPreamble(t *testing.T) {
	require.Equal(t, "68727063090000", hex.EncodeToString(preamble(false)))
	require.Equal(t, "687270630900df", hex.EncodeToString(preamble(true)))
}

// The SASL NEGOTIATE packet, byte for byte as Hadoop's client sends it.
func TestEncodeNegotiate(t *testing.T) {
	pkt, err := encodePacket(requestHeader(callIDSASL, []byte{}, invalidRetryCount),
		&hadoopcommon.RpcSaslProto{State: hadoopcommon.RpcSaslProto_NEGOTIATE.Enum()})
	require.NoError(t, err)
	require.Equal(t, "0000000e"+"0a08021000184122002801"+"021001", hex.EncodeToString(pkt))
}

func TestDecodeResponse(t *testing.T) {
	tests := []struct {
		name     string
		file     string
		wantID   int32
		status   hadoopcommon.RpcResponseHeaderProto_RpcStatusProto
		wantBody bool
		wantErr  string
	}{
		{name: "success with body", file: "success.hex", wantID: 5, status: hadoopcommon.RpcResponseHeaderProto_SUCCESS, wantBody: true},
		{name: "fatal without body", file: "fatal-simple-not-enabled.hex", wantID: -1, status: hadoopcommon.RpcResponseHeaderProto_FATAL},
		{name: "sasl reply", file: "sasl-negotiate.hex", wantID: -33, status: hadoopcommon.RpcResponseHeaderProto_SUCCESS, wantBody: true},
		{name: "truncated body", file: "truncated.hex", wantErr: "exceeds"},
		{name: "trailing bytes", file: "trailing.hex", wantErr: "trailing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := readHex(t, filepath.Join("testdata", "frames", tt.file))
			body, err := readPacket(bufio.NewReader(bytes.NewReader(p)))
			require.NoError(t, err)
			h, msg, err := DecodeResponse(body)
			if tt.wantErr != "" {
				require.ErrorIs(t, err, ErrFrame)
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.wantID, int32(h.GetCallId()))
			require.Equal(t, tt.status, h.GetStatus())
			require.Equal(t, tt.wantBody, msg != nil)
		})
	}
}

func TestReadPacketTooLong(t *testing.T) {
	_, err := readPacket(bufio.NewReader(bytes.NewReader([]byte{0x7f, 0xff, 0xff, 0xff})))
	require.ErrorIs(t, err, ErrFrame)
}

// rawMessage re-frames already-encoded bytes as a message.
func rawMessage(b []byte) proto.Message {
	m := &hadoopcommon.RpcSaslProto{}
	m.ProtoReflect().SetUnknown(b)
	return m
}

func readHex(t testing.TB, path string) []byte {
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	b, err := hex.DecodeString(strings.Join(strings.Fields(string(raw)), ""))
	require.NoError(t, err)
	return b
}

// FuzzDecodeResponse feeds arbitrary packet bodies to the decoder: it must
// fail cleanly, never panic, and what it accepts must re-encode.
func FuzzDecodeResponse(f *testing.F) {
	files, err := filepath.Glob("testdata/frames/*.hex")
	require.NoError(f, err)
	for _, file := range files {
		p := readHex(f, file)
		if len(p) >= 4 {
			f.Add(p[4:])
		}
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		h, msg, err := DecodeResponse(body)
		if err != nil {
			require.ErrorIs(t, err, ErrFrame)
			return
		}
		// What the decoder accepts is a header plus at most one message
		// that re-frames to the same bytes.
		msgs := []proto.Message{h}
		if msg != nil {
			msgs = append(msgs, rawMessage(msg))
		}
		if _, err := encodePacket(msgs...); err != nil {
			require.ErrorContains(t, err, "required field")
		}
	})
}
