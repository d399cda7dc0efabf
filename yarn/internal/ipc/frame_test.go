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
		// The fast path agrees with proto.Unmarshal on every header it takes.
		if hb, _, ok, err := splitDelimited(body); err == nil && ok {
			if id, ok := successHeader(hb); ok {
				h := &hadoopcommon.RpcResponseHeaderProto{}
				require.NoError(t, proto.Unmarshal(hb, h))
				require.Equal(t, id, h.GetCallId())
				require.Equal(t, hadoopcommon.RpcResponseHeaderProto_SUCCESS, h.GetStatus())
			}
		}
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

// The hand-encoded headers are byte for byte what proto.Marshal gives for
// the messages Hadoop's client sends.
func TestAppendRequestHeader(t *testing.T) {
	client := bytes.Repeat([]byte{0xab}, 16)
	for _, tt := range []struct {
		name     string
		id       int32
		clientID []byte
		retry    int32
	}{
		{"first call", 0, client, 0},
		{"call", 12345, client, 0},
		{"largest call id", 0x7fffffff, client, 0},
		{"connection context", callIDContext, client, invalidRetryCount},
		{"ping", callIDPing, client, invalidRetryCount},
		{"sasl", callIDSASL, []byte{}, invalidRetryCount},
	} {
		t.Run(tt.name, func(t *testing.T) {
			want, err := proto.Marshal(requestHeader(tt.id, tt.clientID, tt.retry))
			require.NoError(t, err)
			require.Equal(t, hex.EncodeToString(want), hex.EncodeToString(appendRequestHeader(nil, tt.id, tt.clientID, tt.retry)))
		})
	}
}

func TestAppendCall(t *testing.T) {
	client := bytes.Repeat([]byte{0x01}, 16)
	methodHeader := &hadoopcommon.RequestHeaderProto{
		MethodName:                 proto.String("getClusterMetrics"),
		DeclaringClassProtocolName: proto.String("org.apache.hadoop.yarn.api.ApplicationClientProtocolPB"),
		ClientProtocolVersion:      proto.Uint64(protocolVersion),
	}
	mh, err := proto.Marshal(methodHeader)
	require.NoError(t, err)
	req := &hadoopcommon.RpcSaslProto{State: hadoopcommon.RpcSaslProto_INITIATE.Enum(), Token: []byte("request body")}
	want, err := encodePacket(requestHeader(77, client, 0), methodHeader, req)
	require.NoError(t, err)

	prefix := []byte("earlier packet")
	got, err := appendCall(append([]byte{}, prefix...), 77, client, mh, req)
	require.NoError(t, err)
	require.Equal(t, prefix, got[:len(prefix)], "appends, keeping what dst held")
	require.Equal(t, hex.EncodeToString(want), hex.EncodeToString(got[len(prefix):]))

	_, err = appendCall(nil, 1, client, mh, &hadoopcommon.RpcSaslProto{})
	require.ErrorContains(t, err, "required field", "a message missing a required field is refused, not sent")
}

func TestAppendWrap(t *testing.T) {
	for _, token := range [][]byte{{}, []byte("sealed"), bytes.Repeat([]byte{7}, 300)} {
		want, err := encodePacket(requestHeader(callIDSASL, []byte{}, invalidRetryCount),
			&hadoopcommon.RpcSaslProto{State: hadoopcommon.RpcSaslProto_WRAP.Enum(), Token: token})
		require.NoError(t, err)
		require.Equal(t, hex.EncodeToString(want), hex.EncodeToString(appendWrap(nil, token)), "token of %d bytes", len(token))
	}
}
