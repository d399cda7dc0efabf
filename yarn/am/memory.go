package am

import (
	"errors"
	"fmt"
	"math"
	"strings"
)

// ErrBadMemorySize is returned (wrapped) for a value that is not a Flink
// memory size.
var ErrBadMemorySize = errors.New("invalid memory size")

// memoryUnits maps every unit spelling Flink's MemorySize accepts (case
// does not matter) to its multiplier in bytes.
var memoryUnits = map[string]int64{
	"":          1,
	"b":         1,
	"bytes":     1,
	"k":         1 << 10,
	"kb":        1 << 10,
	"kibibytes": 1 << 10,
	"m":         1 << 20,
	"mb":        1 << 20,
	"mebibytes": 1 << 20,
	"g":         1 << 30,
	"gb":        1 << 30,
	"gibibytes": 1 << 30,
	"t":         1 << 40,
	"tb":        1 << 40,
	"tebibytes": 1 << 40,
}

// ParseMemorySize parses a size in Flink's memory syntax: a non-negative
// integer, optional spaces, and an optional unit (b, k/kb, m/mb, g/gb,
// t/tb or the long names; a plain number means bytes). It returns bytes.
func ParseMemorySize(text string) (int64, error) {
	s := strings.TrimSpace(text)
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i == 0 {
		return 0, fmt.Errorf("%w %q: does not start with a number", ErrBadMemorySize, text)
	}
	var n int64
	for _, c := range s[:i] {
		d := int64(c - '0')
		if n > (math.MaxInt64-d)/10 {
			return 0, fmt.Errorf("%w %q: number does not fit in 64 bits", ErrBadMemorySize, text)
		}
		n = n*10 + d
	}
	unit := strings.ToLower(strings.TrimSpace(s[i:]))
	mult, ok := memoryUnits[unit]
	if !ok {
		return 0, fmt.Errorf("%w %q: unknown unit %q (use b, k, m, g or t)", ErrBadMemorySize, text, unit)
	}
	if n > math.MaxInt64/mult {
		return 0, fmt.Errorf("%w %q: bytes do not fit in 64 bits", ErrBadMemorySize, text)
	}
	return n * mult, nil
}
