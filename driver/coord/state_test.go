package coord

import (
	"os"
	"path/filepath"
	"strings"
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
	b := encodeState(in)
	out, err := decodeState(b)
	require.NoError(t, err)
	require.Equal(t, in, out)

	empty := encodeState(nil)
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
		{"bad json", withHeader("{"), "unexpected end"},
		{"data after the document", withHeader(`{"entries":[]} {}`), "data after"},
		{"pid not a number", withHeader(`{"entries":[{"resource":"gpu","key":"a","pid":"1","start":1,"since":"2026-11-29T13:40:00Z"}]}`), "want a number"},
		{"pid not an integer", withHeader(`{"entries":[{"resource":"gpu","key":"a","pid":1.5,"start":1,"since":"2026-11-29T13:40:00Z"}]}`), "not an integer"},
		{"negative start", withHeader(`{"entries":[{"resource":"gpu","key":"a","pid":1,"start":-1,"since":"2026-11-29T13:40:00Z"}]}`), "not an unsigned"},
		{"bad time", withHeader(`{"entries":[{"resource":"gpu","key":"a","pid":1,"start":1,"since":"yesterday"}]}`), "cannot parse"},
		{"unknown field", withHeader(`{"entries":[],"x":1}`), "unknown field"},
		{"incomplete entry", withHeader(`{"entries":[{"resource":"gpu","key":"","pid":1}]}`), "incomplete"},
		{"duplicate device", dup, "recorded twice"},
		// encoding/json merged a member given twice: the second
		// "quarantine":{} kept the first one's reason, a second "key"
		// replaced the first.
		{"member given twice", withHeader(`{"entries":[{"resource":"gpu","key":"a","key":"b","pid":1,"start":1,"since":"2026-11-29T13:40:00Z"}]}`),
			`member "key" given twice`},
		{"quarantine given twice", withVersion(stateV4, `{"entries":[{"resource":"gpu","key":"a","pid":1,"start":1,"since":"2026-11-29T13:40:00Z",`+
			`"quarantine":{"reason":"Xid 79","event":"xid","xid":79,"last":"2026-11-29T13:40:00Z","return":"seen"},"quarantine":{}}]}`),
			`member "quarantine" given twice`},
		{"entries given twice", withHeader(`{"entries":[],"entries":[{"resource":"gpu","key":"a","pid":1,"start":1,"since":"2026-11-29T13:40:00Z"}]}`),
			`member "entries" given twice`},
		{"parent in a v1 file", withHeader(`{"entries":[{"resource":"mig","key":"MIG-b","parent":"GPU-a","pid":1,"start":1,"since":"2026-11-29T13:40:00Z"}]}`),
			"a v1 file cannot have"},
		{"own parent", withVersion(stateV2, `{"entries":[{"resource":"mig","key":"MIG-b","parent":"MIG-b","pid":1,"start":1,"since":"2026-11-29T13:40:00Z"}]}`),
			"its own parent"},
		{"v2 unknown field", withVersion(stateV2, `{"entries":[{"resource":"mig","key":"MIG-b","parents":"GPU-a","pid":1,"start":1,"since":"2026-11-29T13:40:00Z"}]}`),
			"unknown field"},
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
	return withVersion(stateV1, body)
}

func withVersion(version, body string) string {
	return string(headerFor(version, []byte(body))) + body
}

// Parents need version 2; without them the file is written as version 1,
// byte for byte what the previous version wrote, so that its launchers
// sharing the host still read it.
func TestStateVersions(t *testing.T) {
	since := time.Date(2026, 11, 29, 13, 40, 0, 0, time.UTC)
	whole := Entry{Resource: "gpu", Key: "GPU-a", Owner: Owner{PID: 1, Start: 2}, Since: since}
	part := Entry{Resource: "mig", Key: "MIG-b", Parent: "GPU-a", Owner: Owner{PID: 3, Start: 4}, Since: since}
	tests := []struct {
		name    string
		entries []Entry
		header  string
	}{
		{"no parents: v1", []Entry{whole}, "xres-coordination v1 "},
		{"empty: v1", nil, "xres-coordination v1 "},
		{"a parent: v2", []Entry{whole, part}, "xres-coordination v2 "},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := encodeState(tc.entries)
			require.True(t, strings.HasPrefix(string(b), tc.header), "%q", b)
			out, err := decodeState(b)
			require.NoError(t, err)
			if len(tc.entries) == 0 {
				require.Empty(t, out)
				return
			}
			require.Equal(t, tc.entries, out)
		})
	}
}

// A state file written by the previous version (v1, no parents) is read
// as it is; tampered with, it is refused like any corrupt file.
func TestStateV1Fixture(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "state-v1"))
	require.NoError(t, err)
	entries, err := decodeState(b)
	require.NoError(t, err)
	require.Equal(t, []Entry{
		{Resource: "gpu", Key: "GPU-3f1c5a2e-8d4b-4e61-a0c7-1b2d3e4f5a60", Owner: Owner{PID: 4711, Start: 8812345, PIDNS: "pid:[1]"},
			Since: time.Date(2026, 11, 29, 13, 40, 0, 0, time.UTC)},
		{Resource: "mig", Key: "MIG-7a0e2c41-55d3-5b8e-9f10-2c3d4e5f6a11", Owner: Owner{PID: 4712, Start: 8812399, PIDNS: "pid:[1]"},
			Since: time.Date(2026, 11, 29, 13, 41, 0, 0, time.UTC)},
		{Resource: "gpu", Key: "GPU-3f1c5a2e-8d4b-4e61-a0c7-1b2d3e4f5a62",
			Owner: Owner{PID: 4713, Start: 8812400, Boot: "00000000-0000-4000-8000-0000000000ff", PIDNS: "pid:[1]"},
			Since: time.Date(2026, 11, 29, 13, 42, 0, 0, time.UTC)},
	}, entries)
	again := encodeState(entries)
	require.Equal(t, string(b), string(again), "re-encoded byte for byte as the previous version wrote it")

	flipped := append([]byte{}, b...)
	flipped[len(flipped)-10] ^= 1
	_, err = decodeState(flipped)
	require.ErrorIs(t, err, errStateFormat)
	require.Contains(t, err.Error(), "checksum")
}

// FuzzDecodeState: decoding never panics, and whatever decodes re-encodes
// to a file that decodes to the same entries.
func FuzzDecodeState(f *testing.F) {
	valid := encodeState([]Entry{{Resource: "gpu", Key: "GPU-a", Owner: Owner{PID: 1, Start: 2}}})
	f.Add(valid)
	v2 := encodeState([]Entry{{Resource: "mig", Key: "MIG-b", Parent: "GPU-a", Owner: Owner{PID: 1, Start: 2}}})
	f.Add(v2)
	f.Add(encodeState([]Entry{{Resource: "gpu", Key: "GPU-a", Owner: Owner{PID: 1, Start: 2}, Quarantine: &Quarantine{Reason: "Xid 48", Event: "xid", XID: 48, Return: ReturnQuiet}}}))
	if v1, err := os.ReadFile(filepath.Join("testdata", "state-v1")); err == nil {
		f.Add(v1)
	}
	f.Add([]byte(""))
	f.Add([]byte("0 4711\n1 4712\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		entries, err := decodeState(b)
		if err != nil {
			return
		}
		again := encodeState(entries)
		back, err := decodeState(again)
		require.NoError(t, err)
		require.Equal(t, len(entries), len(back))
		for i := range entries {
			require.Equal(t, entries[i].Parent, back[i].Parent)
		}
	})
}
