package topo

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func load(t testing.TB, name string) *Topology {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	topo, err := ParseSMI(b)
	require.NoError(t, err, name)
	return topo
}

func TestParseSMIFixtures(t *testing.T) {
	for _, tc := range []struct {
		file  string
		n     int
		link  [3]any // i, j, want
		numa  []int
		cpus0 string
	}{
		{"dgx1.txt", 8, [3]any{0, 3, "NV2"}, []int{0, 0, 0, 0, 1, 1, 1, 1}, "0-19,40-59"},
		{"pcie-2socket.txt", 8, [3]any{4, 6, "NODE"}, []int{0, 0, 0, 0, 1, 1, 1, 1}, "0-15,32-47"},
		{"nvswitch.txt", 8, [3]any{2, 7, "NV12"}, []int{3, 3, 1, 1, 7, 7, 5, 5}, "48-63,176-191"},
		{"mig.txt", 2, [3]any{0, 1, "NV12"}, []int{0, 0}, "0-31"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			topo := load(t, tc.file)
			require.Equal(t, tc.n, topo.N())
			require.Equal(t, tc.link[2], topo.Link(tc.link[0].(int), tc.link[1].(int)).String())
			require.Equal(t, tc.numa, topo.NUMA)
			require.Equal(t, tc.cpus0, topo.CPUs[0])
		})
	}
}

func TestParseSMIErrorsNameTheLine(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"empty", "", "no matrix"},
		{"bad link", "\tGPU0\tGPU1\nGPU0\t X \tNV1\nGPU1\tFOO\t X \n", "line 3: GPU1-GPU0"},
		{"asymmetric", "\tGPU0\tGPU1\nGPU0\t X \tNV1\nGPU1\tSYS\t X \n", "GPU1-GPU0 is SYS but GPU0-GPU1 is NV1"},
		{"missing row", "\tGPU0\tGPU1\nGPU0\t X \tNV1\n", "2 GPU columns but 1 GPU rows"},
		{"short row", "\tGPU0\tGPU1\nGPU0\t X \n", "line 2: row GPU0 has 1 cells"},
		{"self", "\tGPU0\tGPU1\nGPU0\tNV1\tNV1\nGPU1\tNV1\t X \n", "line 2: GPU0 to itself"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseSMI([]byte(tc.in))
			require.ErrorIs(t, err, ErrBadTopology)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

func TestParseSMISpacesAndColours(t *testing.T) {
	in := "        GPU0    GPU1    CPU Affinity    NUMA Affinity\nGPU0     X      \x1b[4mPIX\x1b[0m     0-7     0\nGPU1    PIX      X      0-7     0\n"
	topo, err := ParseSMI([]byte(in))
	require.NoError(t, err)
	require.Equal(t, "PIX", topo.Link(0, 1).String())
	require.Equal(t, "0-7", topo.CPUs[1])
}

func TestLinkCostOrder(t *testing.T) {
	order := []string{"NV12", "NV2", "NV1", "PIX", "PXB", "PHB", "NODE", "SYS"}
	for i := 1; i < len(order); i++ {
		a, err := ParseLink(order[i-1])
		require.NoError(t, err)
		b, err := ParseLink(order[i])
		require.NoError(t, err)
		require.Less(t, a.Cost(), b.Cost(), "%s < %s", a, b)
	}
	soc, err := ParseLink("SOC")
	require.NoError(t, err)
	require.Equal(t, ClassSYS, soc.Class)
}

func all(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

func without(free []int, taken ...int) []int {
	var out []int
	for _, g := range free {
		keep := true
		for _, t := range taken {
			keep = keep && g != t
		}
		if keep {
			out = append(out, g)
		}
	}
	return out
}

func TestPick(t *testing.T) {
	for _, tc := range []struct {
		name   string
		file   string
		free   []int
		amount int
		policy string
		want   []int
		worst  string
	}{
		// DGX-1: the two NVLink quads are the only 4-sets without SYS.
		{"dgx1 4 of all", "dgx1.txt", all(8), 4, PolicyTopology, []int{0, 1, 2, 3}, "NV1"},
		{"dgx1 4 with 0 held", "dgx1.txt", without(all(8), 0), 4, PolicyTopology, []int{4, 5, 6, 7}, "NV1"},
		// first-free takes 1,2,3,4 whose 1-4 is SYS.
		{"dgx1 4 first-free", "dgx1.txt", without(all(8), 0), 4, PolicyFirstFree, []int{1, 2, 3, 4}, "SYS"},
		// A pair: NV2 over NV1, from the quad already broken (0 held
		// breaks quad 0-3; 4-7 stays whole).
		{"dgx1 2 with 0 held", "dgx1.txt", without(all(8), 0), 2, PolicyTopology, []int{2, 3}, "NV2"},
		// 2-socket PCIe: a PIX pair from the socket already broken.
		{"pcie 2 with 0 held", "pcie-2socket.txt", without(all(8), 0), 2, PolicyTopology, []int{2, 3}, "PIX"},
		// 2 1 3 held: first-free crosses sockets, topology stays on one.
		{"pcie 4 with 0,1 held", "pcie-2socket.txt", without(all(8), 0, 1), 4, PolicyTopology, []int{4, 5, 6, 7}, "NODE"},
		{"pcie 4 first-free", "pcie-2socket.txt", without(all(8), 0, 1), 4, PolicyFirstFree, []int{2, 3, 4, 5}, "SYS"},
		// One GPU: the one whose taking breaks no PIX pair, the lone 1.
		{"pcie 1 with 0 held", "pcie-2socket.txt", without(all(8), 0), 1, PolicyTopology, []int{1}, ""},
		// NVSwitch: all equal; one NUMA node preferred.
		{"nvswitch 2", "nvswitch.txt", without(all(8), 0), 2, PolicyTopology, []int{2, 3}, "NV12"},
		{"nvswitch spread 2", "nvswitch.txt", all(8), 2, PolicySpread, []int{0, 2}, "NV12"},
		{"pcie spread 2", "pcie-2socket.txt", all(8), 2, PolicySpread, []int{0, 4}, "SYS"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			topo := load(t, tc.file)
			c, err := topo.Pick(tc.free, tc.amount, tc.policy)
			require.NoError(t, err)
			require.Equal(t, tc.want, c.GPUs)
			if tc.worst != "" {
				require.Equal(t, tc.worst, c.Worst.String())
			}
		})
	}
}

func TestPickOneKeepsPairs(t *testing.T) {
	// DGX-1 with 1 held: a 1-GPU ask must not split quad 4-7 but take
	// from the quad 0-3 that is already broken.
	topo := load(t, "dgx1.txt")
	c, err := topo.Pick(without(all(8), 1), 1, PolicyTopology)
	require.NoError(t, err)
	require.Less(t, c.GPUs[0], 4)
}

func TestPickErrors(t *testing.T) {
	topo := load(t, "dgx1.txt")
	_, err := topo.Pick([]int{0, 1}, 3, PolicyTopology)
	require.ErrorContains(t, err, "3 GPUs asked, 2 free")
	_, err = topo.Pick([]int{0, 9}, 1, PolicyTopology)
	require.ErrorContains(t, err, "GPU 9 is not in the topology")
	_, err = topo.Pick([]int{0, 0}, 1, PolicyTopology)
	require.ErrorContains(t, err, "listed twice")
	_, err = topo.Pick([]int{0, 1}, 1, "pack")
	require.ErrorContains(t, err, `unknown policy "pack"`)
}

func TestBestWorst(t *testing.T) {
	dgx := load(t, "dgx1.txt")
	require.Equal(t, ClassNV, dgx.BestWorst(4).Class)
	require.Equal(t, ClassSYS, dgx.BestWorst(8).Class)
	pcie := load(t, "pcie-2socket.txt")
	require.Equal(t, "PIX", pcie.BestWorst(2).String())
	require.Equal(t, "NODE", pcie.BestWorst(4).String())
}

// A large host (32 GPUs: four NVLink islands of 8 on two sockets) is too
// large for the exhaustive search: the greedy pick still finds an island.
func TestPickLargeHostGreedy(t *testing.T) {
	n := 32
	topo := &Topology{Links: make([][]Link, n), NUMA: make([]int, n), CPUs: make([]string, n)}
	for i := range n {
		topo.Links[i] = make([]Link, n)
		topo.NUMA[i] = i / 16
		for j := range n {
			switch {
			case i == j:
			case i/8 == j/8:
				topo.Links[i][j] = Link{Class: ClassNV, NVLinks: 4}
			case i/16 == j/16:
				topo.Links[i][j] = Link{Class: ClassNODE}
			default:
				topo.Links[i][j] = Link{Class: ClassSYS}
			}
		}
	}
	require.NoError(t, topo.Validate())
	require.Greater(t, binom(n-1, 8), searchBudget)
	c, err := topo.Pick(without(all(n), 0), 8, PolicyTopology)
	require.NoError(t, err)
	require.Len(t, c.GPUs, 8)
	require.Equal(t, "NV4", c.Worst.String())
	require.Equal(t, 8, c.GPUs[0], "the first intact island")
}
