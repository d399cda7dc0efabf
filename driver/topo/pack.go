package topo

import "sort"

// YARN's PACK policy, reimplemented from what the code of its NVIDIA
// device plugin (NvidiaGPUPluginForRuntimeV2's topology scheduling) does,
// for the benchmark (pack_bench_test.go) only: xres does not use it.
//
//   - Each pair of GPUs has a weight by its link in `nvidia-smi topo -m`:
//     NVLink 1, PHB or NODE ("same CPU socket") 2, SYS 4, PIX 16, PXB 32
//     (its weights rank one PCIe switch below the inter-socket link).
//   - For every count from 2 to n-1 every combination of that many GPUs
//     is costed as the sum of its pairs' weights, once.
//   - An ask for 1 GPU, for all the free GPUs, or with fewer than 3 free
//     gets the first free ones ("basic" scheduling); any other gets the
//     cheapest combination whose GPUs are all free (PACK sorts ascending).
//     It ignores CPU affinity, NUMA and what its choice leaves free.
type yarnPack struct {
	n      int
	combos map[int][]packCombo // by count, cheapest first (ties: lowest GPUs first)
}

type packCombo struct {
	mask uint64
	cost int
}

func yarnPackWeight(l Link) int {
	switch l.Class {
	case ClassNV:
		return 1
	case ClassPHB, ClassNODE:
		return 2
	case ClassSYS:
		return 4
	case ClassPIX:
		return 16
	case ClassPXB:
		return 32
	}
	return 4
}

func newYarnPack(t *Topology) *yarnPack {
	y := &yarnPack{n: t.N(), combos: map[int][]packCombo{}}
	all := uint64(1)<<y.n - 1
	for k := 2; k < y.n; k++ {
		var cs []packCombo
		subsets(all, k, func(m uint64) bool {
			c := 0
			for a := m; a != 0; a &= a - 1 {
				i := trailing(a)
				for b := a & (a - 1); b != 0; b &= b - 1 {
					c += yarnPackWeight(t.Links[i][trailing(b)])
				}
			}
			cs = append(cs, packCombo{m, c})
			return true
		})
		sort.SliceStable(cs, func(i, j int) bool {
			if cs[i].cost != cs[j].cost {
				return cs[i].cost < cs[j].cost
			}
			return lowerFirst(cs[i].mask, cs[j].mask)
		})
		y.combos[k] = cs
	}
	return y
}

// lowerFirst orders masks by their GPUs read as ascending lists.
func lowerFirst(a, b uint64) bool {
	for a != 0 && b != 0 {
		x, y := trailing(a), trailing(b)
		if x != y {
			return x < y
		}
		a &= a - 1
		b &= b - 1
	}
	return false
}

// pick returns the GPUs for count among free (a mask), or 0 when too few.
func (y *yarnPack) pick(free uint64, count int) uint64 {
	nFree := popcount(free)
	if count > nFree {
		return 0
	}
	if count == 1 || count == nFree || nFree < 3 {
		return firstFree(free, count)
	}
	for _, c := range y.combos[count] {
		if c.mask&free == c.mask {
			return c.mask
		}
	}
	return firstFree(free, count)
}
