package topo

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// The placement simulation (issue 45): random sequences of asks (amounts
// 1, 2, 4, 8, at most the host's GPUs) and releases on a host, the same
// sequence for every policy. An ask is denied when fewer GPUs are free
// than it asks, whatever the policy (so the policies see the same jobs
// and deny alike); a grant is "best class" when its worst link is of the
// class of the best worst link the whole host offers for that amount.

type simPolicy struct {
	name string
	pick func(t *Topology, y *yarnPack, free uint64, amount int) uint64
}

var simPolicies = []simPolicy{
	{PolicyTopology, func(t *Topology, _ *yarnPack, free uint64, amount int) uint64 {
		c, err := t.Pick(maskList(free), amount, PolicyTopology)
		if err != nil {
			panic(err)
		}
		return listMask(c.GPUs)
	}},
	{PolicyFirstFree, func(_ *Topology, _ *yarnPack, free uint64, amount int) uint64 { return firstFree(free, amount) }},
	{"yarn-pack", func(_ *Topology, y *yarnPack, free uint64, amount int) uint64 { return y.pick(free, amount) }},
}

type simStats struct {
	asks, denied, multi, best int
	worstCost                 int
}

func (s simStats) bestShare() float64 {
	if s.multi == 0 {
		return 0
	}
	return float64(s.best) / float64(s.multi)
}

func (s simStats) meanWorst() float64 {
	if s.multi == 0 {
		return 0
	}
	return float64(s.worstCost) / float64(s.multi)
}

func maskList(m uint64) []int {
	var out []int
	for a := m; a != 0; a &= a - 1 {
		out = append(out, trailing(a))
	}
	return out
}

func listMask(l []int) uint64 {
	var m uint64
	for _, g := range l {
		m |= 1 << g
	}
	return m
}

// simulate runs steps events from seed under policy p.
func simulate(t *Topology, y *yarnPack, best map[int]Class, p simPolicy, seed uint64, steps int) simStats {
	rng := rand.New(rand.NewPCG(seed, 45))
	n := t.N()
	var amounts []int
	for _, a := range []int{1, 1, 1, 2, 2, 2, 4, 4, 8} { // 1 and 2 most often, 8 rarely
		if a <= n {
			amounts = append(amounts, a)
		}
	}
	all := uint64(1)<<n - 1
	var jobs []uint64
	var s simStats
	for range steps {
		if len(jobs) > 0 && rng.IntN(100) < 45 {
			k := rng.IntN(len(jobs))
			jobs = append(jobs[:k], jobs[k+1:]...)
			continue
		}
		amount := amounts[rng.IntN(len(amounts))]
		s.asks++
		var held uint64
		for _, j := range jobs {
			held |= j
		}
		free := all &^ held
		if popcount(free) < amount {
			s.denied++
			continue
		}
		got := p.pick(t, y, free, amount)
		if popcount(got) != amount || got&held != 0 {
			panic(fmt.Sprintf("%s granted %b of free %b for %d", p.name, got, free, amount))
		}
		jobs = append(jobs, got)
		if amount >= 2 {
			w := t.Worst(maskList(got))
			s.multi++
			s.worstCost += w.Cost()
			if w.Class == best[amount] {
				s.best++
			}
		}
	}
	return s
}

var simHosts = []string{"dgx1.txt", "pcie-2socket.txt", "nvswitch.txt", "mig.txt"}

func simSetup(tb testing.TB, file string) (*Topology, *yarnPack, map[int]Class) {
	t := load(tb, file)
	best := map[int]Class{}
	for _, a := range []int{2, 4, 8} {
		best[a] = t.BestWorst(a).Class
	}
	return t, newYarnPack(t), best
}

// BenchmarkPlacement runs the simulation for every host and policy, side
// by side: best-% (multi-GPU grants on the best class the host offers),
// worst-cost (their mean worst-link cost, topo.Link.Cost), denied-% (of
// asks), with ns/op per 1000-event sequence.
//
//	go test -run '^$' -bench Placement -benchtime 20x ./driver/topo/
func BenchmarkPlacement(b *testing.B) {
	for _, host := range simHosts {
		t, y, best := simSetup(b, host)
		for _, p := range simPolicies {
			b.Run(strings.TrimSuffix(host, ".txt")+"/"+p.name, func(b *testing.B) {
				var tot simStats
				for i := 0; i < b.N; i++ {
					s := simulate(t, y, best, p, uint64(i), 1000)
					tot.asks += s.asks
					tot.denied += s.denied
					tot.multi += s.multi
					tot.best += s.best
					tot.worstCost += s.worstCost
				}
				b.ReportMetric(100*tot.bestShare(), "best-%")
				b.ReportMetric(tot.meanWorst(), "worst-cost")
				b.ReportMetric(100*float64(tot.denied)/float64(tot.asks), "denied-%")
			})
		}
	}
}

// TestPlacementQuality holds the policy to issue 45's goal on the fixed
// sequences: topology puts at least 95 % of multi-GPU grants on the best
// link class the host offers where first-free falls well below, never
// worse than first-free or YARN's PACK, with the same denials.
func TestPlacementQuality(t *testing.T) {
	for _, host := range simHosts {
		topo, y, best := simSetup(t, host)
		stats := map[string]simStats{}
		for _, p := range simPolicies {
			var tot simStats
			for seed := range uint64(5) {
				s := simulate(topo, y, best, p, seed, 1000)
				tot.asks += s.asks
				tot.denied += s.denied
				tot.multi += s.multi
				tot.best += s.best
				tot.worstCost += s.worstCost
			}
			stats[p.name] = tot
			t.Logf("%-18s %-10s best %5.1f%%  mean worst cost %5.1f  denied %d/%d", host, p.name, 100*tot.bestShare(), tot.meanWorst(), tot.denied, tot.asks)
		}
		tp, ff, pk := stats[PolicyTopology], stats[PolicyFirstFree], stats["yarn-pack"]
		if tp.denied != ff.denied || tp.denied != pk.denied {
			t.Errorf("%s: denials differ: topology %d, first-free %d, pack %d", host, tp.denied, ff.denied, pk.denied)
		}
		if tp.bestShare() < 0.95 {
			t.Errorf("%s: topology put %.1f%% of multi-GPU grants on the best class, want >= 95%%", host, 100*tp.bestShare())
		}
		if tp.meanWorst() > ff.meanWorst() || tp.meanWorst() > pk.meanWorst() {
			t.Errorf("%s: topology's mean worst cost %.1f is above first-free's %.1f or pack's %.1f", host, tp.meanWorst(), ff.meanWorst(), pk.meanWorst())
		}
	}
}
