package am

import (
	"errors"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseMemorySize(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		err  string
	}{
		{in: "1728m", want: 1728 << 20},
		{in: "1728 mb", want: 1728 << 20},
		{in: "  2 g ", want: 2 << 30},
		{in: "2GB", want: 2 << 30},
		{in: "1 gibibytes", want: 1 << 30},
		{in: "512", want: 512},
		{in: "100b", want: 100},
		{in: "64 bytes", want: 64},
		{in: "10k", want: 10 << 10},
		{in: "3 KiBiByTes", want: 3 << 10},
		{in: "1t", want: 1 << 40},
		{in: "1 tb", want: 1 << 40},
		{in: "0", want: 0},
		{in: "", err: "does not start with a number"},
		{in: "m", err: "does not start with a number"},
		{in: "-1m", err: "does not start with a number"},
		{in: "1.5g", err: `unknown unit ".5g"`},
		{in: "12 pb", err: `unknown unit "pb"`},
		{in: "99999999999999999999", err: "does not fit in 64 bits"},
		{in: "9999999999t", err: "bytes do not fit"},
	}
	for _, tt := range tests {
		t.Run(strconv.Quote(tt.in), func(t *testing.T) {
			got, err := ParseMemorySize(tt.in)
			if tt.err != "" {
				require.ErrorContains(t, err, tt.err)
				require.True(t, errors.Is(err, ErrBadMemorySize))
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func FuzzParseMemorySize(f *testing.F) {
	for _, s := range []string{"1728m", "1 g", "0", "", "12 pb", "99999999999999999999", " 7 KB "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseMemorySize(s)
		if err != nil {
			require.ErrorIs(t, err, ErrBadMemorySize)
			return
		}
		require.GreaterOrEqual(t, n, int64(0))
	})
}
