package topo

import (
	"fmt"
	"math/bits"
	"sort"
)

// Placement policies (param.placement).
const (
	// PolicyTopology: the best-connected free set, keeping good sets free.
	PolicyTopology = "topology"
	// PolicyFirstFree: the first free GPUs in index order (Flink's,
	// Spark's and YARN's default; xres before issue 45).
	PolicyFirstFree = "first-free"
	// PolicySpread: as many NUMA nodes as the set can span (CPU-GPU
	// traffic spread over the sockets), then as topology.
	PolicySpread = "spread"
)

// Policies lists the policies in the order the param documents them.
var Policies = []string{PolicyTopology, PolicyFirstFree, PolicySpread}

// Choice is a pick and what it costs.
type Choice struct {
	GPUs   []int // topology indices, ascending
	Worst  Link  // the worst link among them (zero for one GPU)
	Sum    int   // the sum of the pairwise link costs
	Policy string
}

// maxPickGPUs bounds the GPUs a pick weighs (a set is a 64-bit mask).
const maxPickGPUs = 64

// searchBudget bounds the sets an exhaustive pick weighs (it runs under
// the host's lock): past it (say 8 of 24 free GPUs) the pick is greedy.
const searchBudget = 50_000

// leftoverBudget bounds the subsets the fragmentation rule looks at in
// one pick: hosts with many free GPUs weigh fewer leftover sizes.
const leftoverBudget = 50_000

// Pick chooses amount GPUs among free (topology indices; any order) by
// policy. An index outside the topology, a repeated one, or fewer free
// GPUs than amount is an error. first-free takes the lowest indices.
func (t *Topology) Pick(free []int, amount int, policy string) (Choice, error) {
	n := t.N()
	if amount <= 0 {
		return Choice{}, fmt.Errorf("pick: amount must be positive, got %d", amount)
	}
	seen := map[int]bool{}
	fs := make([]int, 0, len(free))
	for _, g := range free {
		if g < 0 || g >= n {
			return Choice{}, fmt.Errorf("pick: GPU %d is not in the topology (%d GPUs)", g, n)
		}
		if seen[g] {
			return Choice{}, fmt.Errorf("pick: GPU %d listed twice", g)
		}
		seen[g] = true
		fs = append(fs, g)
	}
	if len(fs) < amount {
		return Choice{}, fmt.Errorf("pick: %d GPUs asked, %d free", amount, len(fs))
	}
	sort.Ints(fs)
	var set []int
	switch {
	case policy == PolicyFirstFree || n > maxPickGPUs || amount == len(fs):
		set = fs[:amount]
	case (policy == PolicyTopology || policy == PolicySpread) && binom(len(fs), amount) > searchBudget:
		set = newPicker(t).greedy(fs, amount, policy == PolicySpread)
	case policy == PolicyTopology || policy == PolicySpread:
		set = newPicker(t).pick(fs, amount, policy == PolicySpread)
	default:
		return Choice{}, fmt.Errorf("pick: unknown policy %q (want one of topology, first-free, spread)", policy)
	}
	return t.choice(set, policy), nil
}

func (t *Topology) choice(set []int, policy string) Choice {
	c := Choice{GPUs: append([]int(nil), set...), Worst: t.Worst(set), Policy: policy}
	for a := range set {
		for b := a + 1; b < len(set); b++ {
			c.Sum += t.Links[set[a]][set[b]].Cost()
		}
	}
	return c
}

// picker holds the cost matrix of a topology for the search.
type picker struct {
	t    *Topology
	cost [][]int
}

func newPicker(t *Topology) *picker {
	n := t.N()
	p := &picker{t: t, cost: make([][]int, n)}
	for i := range n {
		p.cost[i] = make([]int, n)
		for j := range n {
			if i != j {
				p.cost[i][j] = t.Links[i][j].Cost()
			}
		}
	}
	return p
}

// worst is the worst pairwise cost in mask (0 for fewer than two GPUs).
func (p *picker) worst(mask uint64) int {
	w := 0
	for a := mask; a != 0; a &= a - 1 {
		i := bits.TrailingZeros64(a)
		for b := a & (a - 1); b != 0; b &= b - 1 {
			if c := p.cost[i][bits.TrailingZeros64(b)]; c > w {
				w = c
			}
		}
	}
	return w
}

func (p *picker) sum(mask uint64) int {
	s := 0
	for a := mask; a != 0; a &= a - 1 {
		i := bits.TrailingZeros64(a)
		for b := a & (a - 1); b != 0; b &= b - 1 {
			s += p.cost[i][bits.TrailingZeros64(b)]
		}
	}
	return s
}

func (p *picker) numaCount(mask uint64) int {
	seen := map[int]bool{}
	for a := mask; a != 0; a &= a - 1 {
		i := bits.TrailingZeros64(a)
		seen[p.t.NUMA[i]] = true
	}
	return len(seen)
}

// subsets calls fn with every k-subset of the GPUs in mask (as masks),
// until fn returns false.
func subsets(mask uint64, k int, fn func(uint64) bool) {
	idx := make([]int, 0, 64)
	for a := mask; a != 0; a &= a - 1 {
		idx = append(idx, bits.TrailingZeros64(a))
	}
	if k > len(idx) || k <= 0 {
		return
	}
	// Gosper's hack over positions in idx.
	n := len(idx)
	for comb := uint64(1)<<k - 1; comb < uint64(1)<<n; {
		var m uint64
		for c := comb; c != 0; c &= c - 1 {
			m |= 1 << idx[bits.TrailingZeros64(c)]
		}
		if !fn(m) {
			return
		}
		lo := comb & -comb
		r := comb + lo
		comb = (((r ^ comb) >> 2) / lo) | r
	}
}

func binom(n, k int) int {
	if k < 0 || k > n {
		return 0
	}
	r := 1
	for i := 1; i <= k; i++ {
		r = r * (n - k + i) / i
		if r > 1<<40 {
			return 1 << 40
		}
	}
	return r
}

// leftover scores what a set leaves free: for each size k (8, 4, 2; the
// largest first) the best worst link among the k-subsets of rest and how
// many subsets reach it. Lower best, then more subsets, is better.
type leftover []int // pairs: best cost, -count

func (p *picker) leftover(rest uint64, ks []int) leftover {
	out := make(leftover, 0, 2*len(ks))
	for _, k := range ks {
		best, count := 1<<30, 0
		subsets(rest, k, func(m uint64) bool {
			w := p.worst(m)
			switch {
			case w < best:
				best, count = w, 1
			case w == best:
				count++
			}
			return true
		})
		if count == 0 {
			best = 0 // too few left for k: the same for every pick
		}
		out = append(out, best, -count)
	}
	return out
}

func lessLeftover(a, b leftover) int {
	for i := range a {
		if a[i] != b[i] {
			if a[i] < b[i] {
				return -1
			}
			return 1
		}
	}
	return 0
}

// pick runs the search for amount among fs (ascending).
func (p *picker) pick(fs []int, amount int, spread bool) []int {
	var all uint64
	for _, g := range fs {
		all |= 1 << g
	}
	// 1. The sets with the best worst link (spread: the most NUMA nodes
	//    first).
	var tied []uint64
	bestKey := [2]int{1 << 30, 1 << 30}
	subsets(all, amount, func(m uint64) bool {
		key := [2]int{0, p.worst(m)}
		if spread {
			key = [2]int{-p.numaCount(m), key[1]}
		}
		switch {
		case key[0] < bestKey[0] || key[0] == bestKey[0] && key[1] < bestKey[1]:
			bestKey, tied = key, append(tied[:0], m)
		case key == bestKey:
			tied = append(tied, m)
		}
		return true
	})
	// 2. Among those, the one leaving the best-connected sets free; the
	//    leftover sizes weighed shrink with the budget.
	restN := len(fs) - amount
	var ks []int
	work := 0
	for _, k := range []int{8, 4, 2} {
		if k > restN {
			continue
		}
		c := len(tied) * binom(restN, k)
		if work+c > leftoverBudget {
			continue
		}
		work += c
		ks = append(ks, k)
	}
	best := tied[0]
	var bestLeft leftover
	bestNUMA, bestSum := 0, 0
	for i, m := range tied {
		left := p.leftover(all&^m, ks)
		nn, s := p.numaCount(m), p.sum(m)
		if i > 0 {
			c := lessLeftover(left, bestLeft)
			// 3. Then the fewest NUMA nodes (not for spread), 4. the
			//    smallest sum of link costs, 5. the lowest indices.
			if c > 0 || c == 0 && (!spread && nn > bestNUMA || (spread || nn == bestNUMA) && s >= bestSum) {
				continue
			}
		}
		best, bestLeft, bestNUMA, bestSum = m, left, nn, s
	}
	out := make([]int, 0, amount)
	for a := best; a != 0; a &= a - 1 {
		out = append(out, bits.TrailingZeros64(a))
	}
	return out
}

// BestWorst is the best worst link a set of amount GPUs can have on the
// whole host (nothing held): the class a grant is measured against.
func (t *Topology) BestWorst(amount int) Link {
	n := t.N()
	if amount < 2 || amount > n || n > maxPickGPUs {
		return Link{}
	}
	p := newPicker(t)
	all := uint64(1)<<n - 1
	if n == 64 {
		all = ^uint64(0)
	}
	best, bestM := 1<<30, uint64(0)
	subsets(all, amount, func(m uint64) bool {
		if w := p.worst(m); w < best {
			best, bestM = w, m
		}
		return true
	})
	var set []int
	for a := bestM; a != 0; a &= a - 1 {
		set = append(set, bits.TrailingZeros64(a))
	}
	return t.Worst(set)
}

// greedy grows a set from each free GPU in turn, adding the GPU whose
// worst link to the set is best (then the smallest sum, the lowest
// index), and keeps the set with the best worst link (spread: the most
// NUMA nodes first), then the smallest sum, then the first grown: for
// hosts too large for the exhaustive search.
func (p *picker) greedy(fs []int, amount int, spread bool) []int {
	var best uint64
	bestKey := [3]int{1 << 30, 1 << 30, 1 << 30}
	for _, start := range fs {
		set := uint64(1) << start
		for popcount(set) < amount {
			add, addW, addS := -1, 1<<30, 1<<30
			for _, g := range fs {
				if set&(1<<g) != 0 {
					continue
				}
				w, s := 0, 0
				for a := set; a != 0; a &= a - 1 {
					c := p.cost[g][trailing(a)]
					s += c
					if c > w {
						w = c
					}
				}
				if w < addW || w == addW && s < addS {
					add, addW, addS = g, w, s
				}
			}
			set |= 1 << add
		}
		key := [3]int{0, p.worst(set), p.sum(set)}
		if spread {
			key[0] = -p.numaCount(set)
		}
		if key[0] < bestKey[0] || key[0] == bestKey[0] && (key[1] < bestKey[1] || key[1] == bestKey[1] && key[2] < bestKey[2]) {
			best, bestKey = set, key
		}
	}
	out := make([]int, 0, amount)
	for a := best; a != 0; a &= a - 1 {
		out = append(out, trailing(a))
	}
	return out
}
