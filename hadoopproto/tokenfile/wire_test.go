package tokenfile

import (
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protowire"
)

// FuzzWireAgreesWithProtowire: the launcher's own wire reader accepts and
// rejects what protowire does, with the same values and lengths.
func FuzzWireAgreesWithProtowire(f *testing.F) {
	f.Add([]byte{0x0a, 0x02, 'h', 'i'})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02})
	f.Add([]byte{0x0b, 0x10, 0x01, 0x0c})             // group 1 { field 2 varint } end 1
	f.Add([]byte{0x0b, 0x13, 0x14, 0x0c})             // nested group
	f.Add([]byte{0x0b, 0x14})                         // group 1 ended by 2
	f.Add([]byte{0x00, 0x01})                         // field number 0
	f.Add([]byte{0x0d, 1, 2, 3, 4, 0x09, 1, 2, 3})    // fixed32, truncated fixed64
	f.Add([]byte{0xf8, 0xff, 0xff, 0xff, 0x0f, 0x00}) // field number above int32
	f.Fuzz(func(t *testing.T, b []byte) {
		v, n := consumeVarint(b)
		wv, wn := protowire.ConsumeVarint(b)
		require.Equal(t, wn < 0, n < 0, "varint")
		if n >= 0 {
			require.Equal(t, wv, v)
			require.Equal(t, wn, n)
		}
		num, typ, n := consumeTag(b)
		wnum, wtyp, wn := protowire.ConsumeTag(b)
		require.Equal(t, wn < 0, n < 0, "tag")
		if n < 0 {
			return
		}
		require.Equal(t, int32(wnum), num)
		require.Equal(t, int(wtyp), typ)
		require.Equal(t, wn, n)
		rest := b[n:]
		got := consumeFieldValue(num, typ, rest)
		want := protowire.ConsumeFieldValue(wnum, wtyp, rest)
		require.Equal(t, want < 0, got < 0, "field value of type %d", typ)
		if got >= 0 {
			require.Equal(t, want, got)
		}
		if typ == wireBytes {
			v, got := consumeBytes(rest)
			wv, want := protowire.ConsumeBytes(rest)
			require.Equal(t, want < 0, got < 0, "bytes")
			if got >= 0 {
				require.Equal(t, wv, v)
				require.Equal(t, want, got)
			}
		}
	})
}
