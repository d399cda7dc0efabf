package tokenfile

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protowire"
)

func TestVLong(t *testing.T) {
	for _, v := range []int64{0, 1, -1, 127, -112, 128, -113, 255, 256, 65535, 1 << 31, -(1 << 40), 1<<63 - 1, -1 << 63} {
		t.Run(fmt.Sprint(v), func(t *testing.T) {
			b := AppendVLong(nil, v)
			r := &Reader{B: b}
			got, err := r.VLong()
			require.NoError(t, err)
			require.Equal(t, v, got)
			require.Equal(t, len(b), r.Off)
		})
	}
	// Values from Hadoop's WritableUtils: 200 is 0x8f 0xc8, -200 is 0x87 0xc7.
	require.Equal(t, []byte{0x8f, 0xc8}, AppendVLong(nil, 200))
	require.Equal(t, []byte{0x87, 0xc7}, AppendVLong(nil, -200))
	_, err := (&Reader{B: []byte{0x8e, 1}}).VLong() // says 2 bytes follow, 1 does
	require.ErrorIs(t, err, ErrShort)
}

func TestParseFixtures(t *testing.T) {
	b, err := os.ReadFile("testdata/v0-two-tokens-one-secret.hdts")
	require.NoError(t, err)
	f, err := Parse(b)
	require.NoError(t, err)
	require.Equal(t, []string{"rm1:8030,rm2:8030", "ha-hdfs:cluster"}, aliases(f.Tokens))
	require.Equal(t, []byte("pw-amrm"), f.Tokens[0].Token.Password)
	require.Equal(t, []byte{0, 1, 2}, f.Secret("my-secret"))
	require.Nil(t, f.Secret("none"))

	b, err = os.ReadFile("testdata/v1-nmtoken.hdts")
	require.NoError(t, err)
	f, err = Parse(b)
	require.NoError(t, err)
	require.NoError(t, f.CheckRequired())
	require.Equal(t, "NMToken", f.Tokens[0].Token.Kind)
	require.Equal(t, []byte("xyz"), f.Secret("s"))

	for file, want := range map[string]string{"bad-magic.hdts": "no HDTS magic", "truncated-v0.hdts": "at byte",
		"unknown-version.hdts": "unknown format version 7"} {
		b, err := os.ReadFile(filepath.Join("testdata", file))
		require.NoError(t, err)
		_, err = Parse(b)
		require.ErrorIs(t, err, ErrMalformed, file)
		require.ErrorContains(t, err, want, file)
	}
}

// A protobuf file leaving out a field Hadoop's CredentialsProto requires
// parses (the launcher looks up its secret regardless) but CheckRequired
// refuses it, as Hadoop's reader and yarn/security do.
func TestCheckRequired(t *testing.T) {
	ld := func(num protowire.Number, v []byte) []byte {
		return protowire.AppendBytes(protowire.AppendTag(nil, num, protowire.BytesType), v)
	}
	file := func(msg []byte) []byte {
		return append(protowire.AppendVarint([]byte("HDTS\x01"), uint64(len(msg))), msg...)
	}
	noAlias := ld(2, ld(3, []byte("v")))
	f, err := Parse(file(noAlias))
	require.NoError(t, err)
	require.ErrorContains(t, f.CheckRequired(), "secret 0 alias")
	noKind := ld(1, append(ld(1, []byte("a")), ld(2, append(append(ld(1, nil), ld(2, nil)...), ld(4, []byte("svc"))...))...))
	f, err = Parse(file(noKind))
	require.NoError(t, err)
	require.ErrorIs(t, f.CheckRequired(), ErrMalformed)
	full := ld(1, append(ld(1, []byte("a")), ld(2, append(append(append(ld(1, nil), ld(2, nil)...), ld(3, []byte("K"))...), ld(4, []byte("svc"))...))...))
	f, err = Parse(file(full))
	require.NoError(t, err)
	require.NoError(t, f.CheckRequired())
}

func aliases(es []Entry) []string {
	out := []string{}
	for _, e := range es {
		out = append(out, e.Alias)
	}
	return out
}

// writable and protobuf encode f (tests only: yarn/security has the
// writer).
func writable(f *File) []byte {
	out := append([]byte("HDTS"), FormatWritable)
	out = AppendVLong(out, int64(len(f.Tokens)))
	for _, e := range f.Tokens {
		t := e.Token
		if t == nil {
			t = &Token{}
		}
		out = AppendText(out, e.Alias)
		out = AppendBytes(out, t.Identifier)
		out = AppendBytes(out, t.Password)
		out = AppendText(out, t.Kind)
		out = AppendText(out, t.Service)
	}
	out = AppendVLong(out, int64(len(f.Secrets)))
	for _, e := range f.Secrets {
		out = AppendText(out, e.Alias)
		out = AppendBytes(out, e.Secret)
	}
	return out
}

func protobuf(f *File) []byte {
	ld := func(out []byte, num protowire.Number, v []byte) []byte {
		return protowire.AppendBytes(protowire.AppendTag(out, num, protowire.BytesType), v)
	}
	var msg []byte
	for _, e := range f.Tokens {
		kv := ld(nil, 1, []byte(e.Alias))
		if t := e.Token; t != nil {
			kv = ld(kv, 2, ld(ld(ld(ld(nil, 1, t.Identifier), 2, t.Password), 3, []byte(t.Kind)), 4, []byte(t.Service)))
		}
		msg = ld(msg, 1, kv)
	}
	for _, e := range f.Secrets {
		msg = ld(msg, 2, ld(ld(nil, 1, []byte(e.Alias)), 3, e.Secret))
	}
	return append(protowire.AppendVarint(append([]byte("HDTS"), FormatProtobuf), uint64(len(msg))), msg...)
}

// FuzzParse: never panics; an error wraps ErrMalformed; what parses re-encodes in both formats and parses back to
// the same aliases and secrets.
func FuzzParse(f *testing.F) {
	files, err := filepath.Glob("testdata/*.hdts")
	require.NoError(f, err)
	for _, file := range files {
		b, err := os.ReadFile(file)
		require.NoError(f, err)
		f.Add(b)
	}
	f.Add([]byte("HDTS\x00\x00\x01\x12xres.report.secret\x03abc"))
	f.Add([]byte("HDTS\x01\x05\x12\x03\x0a\x01a"))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := Parse(b)
		if err != nil {
			require.ErrorIs(t, err, ErrMalformed)
			return
		}
		for _, enc := range [][]byte{writable(p), protobuf(p)} {
			back, err := Parse(enc)
			require.NoError(t, err)
			require.Equal(t, aliases(p.Tokens), aliases(back.Tokens))
			require.Equal(t, aliases(p.Secrets), aliases(back.Secrets))
			for _, e := range p.Secrets {
				require.True(t, bytes.Equal(p.Secret(e.Alias), back.Secret(e.Alias)))
			}
		}
	})
}

// FuzzVLong: decoding never panics nor reads past the input; every value
// round-trips.
func FuzzVLong(f *testing.F) {
	f.Add([]byte{0x8f, 0xc8}, int64(200))
	f.Add([]byte{0x80}, int64(-1<<63))
	f.Fuzz(func(t *testing.T, b []byte, v int64) {
		r := &Reader{B: b}
		if _, err := r.VLong(); err == nil {
			require.LessOrEqual(t, r.Off, len(b))
		}
		enc := AppendVLong(nil, v)
		r = &Reader{B: enc}
		got, err := r.VLong()
		require.NoError(t, err)
		require.Equal(t, v, got)
		require.Equal(t, len(enc), r.Off)
	})
}
