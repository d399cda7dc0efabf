package capture

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestHead(t *testing.T) {
	for _, tc := range []struct {
		name     string
		max      int
		writes   []string
		want     string
		overflow bool
	}{
		{"nothing", 4, nil, "", false},
		{"fits exactly", 4, []string{"ab", "cd"}, "abcd", false},
		{"cut inside a write", 4, []string{"ab", "cdef"}, "abcd", true},
		{"writes after the cut are dropped", 4, []string{"abcd", "e", "f"}, "abcd", true},
		{"zero max keeps nothing", 0, []string{"a"}, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &Head{Max: tc.max}
			for _, w := range tc.writes {
				n, err := h.Write([]byte(w))
				require.NoError(t, err)
				require.Equal(t, len(w), n)
			}
			require.Equal(t, tc.want, string(h.Bytes()))
			require.Equal(t, tc.overflow, h.Overflow())
		})
	}
}

func TestTail(t *testing.T) {
	for _, tc := range []struct {
		name   string
		max    int
		writes []string
		want   string
	}{
		{"nothing", 4, nil, ""},
		{"fits", 4, []string{"ab", "c"}, "abc"},
		{"last bytes of one long write", 4, []string{"abcdefghij"}, "ghij"},
		{"last bytes across many writes", 3, strings.Split("abcdefghijklmnop", ""), "nop"},
		{"across the cut-back", 4, []string{"abcdefgh", "ij"}, "ghij"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tl := &Tail{Max: tc.max}
			for _, w := range tc.writes {
				n, err := tl.Write([]byte(w))
				require.NoError(t, err)
				require.Equal(t, len(w), n)
			}
			require.Equal(t, tc.want, string(tl.Bytes()))
			require.LessOrEqual(t, len(tl.buf), 2*tc.max, "the buffer stays bounded")
		})
	}
}
