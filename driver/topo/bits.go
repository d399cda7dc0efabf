package topo

import "math/bits"

func trailing(m uint64) int { return bits.TrailingZeros64(m) }
func popcount(m uint64) int { return bits.OnesCount64(m) }

// firstFree is the lowest count GPUs of free.
func firstFree(free uint64, count int) uint64 {
	var m uint64
	for a := free; a != 0 && count > 0; a &= a - 1 {
		m |= a & -a
		count--
	}
	return m
}
