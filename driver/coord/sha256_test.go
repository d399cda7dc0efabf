package coord

import (
	"crypto/sha256"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// sum256 is SHA-256: the known answers, every length around the block and
// padding boundaries, and large inputs.
func TestSum256(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
		{"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
		{"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
	} {
		got := sum256([]byte(tc.in))
		require.Equal(t, tc.want, hexOf(got[:]), "%q", tc.in)
	}
	for n := 0; n <= 300; n++ {
		in := []byte(strings.Repeat("x", n))
		require.Equal(t, sha256.Sum256(in), sum256(in), "length %d", n)
	}
	big := []byte(strings.Repeat("xres-coordination ", 5000))
	require.Equal(t, sha256.Sum256(big), sum256(big))
}

func FuzzSum256(f *testing.F) {
	f.Add([]byte("xres"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if sha256.Sum256(b) != sum256(b) {
			t.Fatalf("sum256(%q) differs from crypto/sha256", b)
		}
	})
}

func hexOf(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 2*len(b))
	for _, c := range b {
		out = append(out, digits[c>>4], digits[c&15])
	}
	return string(out)
}
