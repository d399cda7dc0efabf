package coord

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestStateRoundTrip(t *testing.T) {
	since := time.Date(2026, 11, 29, 13, 40, 0, 0, time.UTC)
	in := []Entry{
		{Resource: "gpu", Key: "GPU-8b6f", Owner: Owner{PID: 4711, Start: 8812345, Boot: "b", PIDNS: "pid:[4026531836]"}, Since: since},
		{Resource: "fpga", Key: "pci:0000:3b:00.0", Owner: Owner{PID: 12, Start: 3}, Since: since},
	}
	b, err := encodeState(in)
	require.NoError(t, err)
	out, err := decodeState(b)
	require.NoError(t, err)
	require.Equal(t, in, out)

	empty, err := encodeState(nil)
	require.NoError(t, err)
	out, err = decodeState(empty)
	require.NoError(t, err)
	require.Empty(t, out)
}

func TestDecodeStateRejects(t *testing.T) {
	body := `{"entries":[{"resource":"gpu","key":"a","pid":1,"start":1,"since":"2026-11-29T13:40:00Z"},{"resource":"gpu","key":"a","pid":2,"start":1,"since":"2026-11-29T13:40:00Z"}]}`
	dup := withHeader(body)
	tests := []struct {
		name string
		in   string
		msg  string
	}{
		{"empty", "", "empty"},
		{"no header", "{}", "no header"},
		{"foreign header", "0 4711\n", "not written by xres"},
		{"future version", "xres-coordination v9 2 00\n{}", "unsupported version"},
		{"bad length", "xres-coordination v1 x 00\n{}", "bad body length"},
		{"short body", "xres-coordination v1 10 00\n{}", "truncated"},
		{"checksum", "xres-coordination v1 2 00\n{}", "checksum"},
		{"bad json", withHeader("{"), "unexpected EOF"},
		{"unknown field", withHeader(`{"entries":[],"x":1}`), "unknown field"},
		{"incomplete entry", withHeader(`{"entries":[{"resource":"gpu","key":"","pid":1}]}`), "incomplete"},
		{"duplicate device", dup, "recorded twice"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := decodeState([]byte(tc.in))
			require.ErrorIs(t, err, errStateFormat)
			require.Contains(t, err.Error(), tc.msg)
		})
	}
}

func withHeader(body string) string {
	return string(headerFor([]byte(body))) + body
}

// FuzzDecodeState: decoding never panics, and whatever decodes re-encodes
// to a file that decodes to the same entries.
func FuzzDecodeState(f *testing.F) {
	valid, _ := encodeState([]Entry{{Resource: "gpu", Key: "GPU-a", Owner: Owner{PID: 1, Start: 2}}})
	f.Add(valid)
	f.Add([]byte(""))
	f.Add([]byte("0 4711\n1 4712\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		entries, err := decodeState(b)
		if err != nil {
			return
		}
		again, err := encodeState(entries)
		require.NoError(t, err)
		back, err := decodeState(again)
		require.NoError(t, err)
		require.Equal(t, len(entries), len(back))
	})
}
