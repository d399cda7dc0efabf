package topo

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestFromNVML(t *testing.T) {
	// Three GPUs: 0 and 1 share 2 NVLinks and a switch; 2 is on the other
	// socket; 1 also has a link to something that is no GPU (an NVSwitch)
	// but 2 has none, so 1-2 stays SYS.
	gpus := []NVMLGPU{
		{Index: 0, BusID: "00000000:3B:00.0", NUMA: 0, CPUs: "0-7", Ancestor: []int{0, 10, 50}, NVLinks: []string{"0000:3c:00.0", "00000000:3C:00.0"}},
		{Index: 1, BusID: "00000000:3C:00.0", NUMA: 0, CPUs: "0-7", Ancestor: []int{10, 0, 50}, NVLinks: []string{"0000:3b:00.0", "0000:3b:00.0", "0000:99:00.0"}},
		{Index: 2, BusID: "00000000:86:00.0", NUMA: 1, CPUs: "8-15", Ancestor: []int{50, 50, 0}},
	}
	b, err := json.Marshal(gpus)
	require.NoError(t, err)
	topo, err := UnmarshalNVML(b)
	require.NoError(t, err)
	require.Equal(t, "NV2", topo.Link(0, 1).String())
	require.Equal(t, "SYS", topo.Link(1, 2).String())
	require.Equal(t, []int{0, 0, 1}, topo.NUMA)
	require.Equal(t, "nvml", topo.Source)
}

func TestFromNVMLSwitch(t *testing.T) {
	gpus := make([]NVMLGPU, 4)
	for i := range gpus {
		gpus[i] = NVMLGPU{Index: i, BusID: string(rune('a'+i)) + "0:00.0", Ancestor: []int{50, 50, 50, 50}, NVLinks: []string{"ff:00.0", "fe:00.0", "fd:00.0"}}
		gpus[i].Ancestor[i] = 0
	}
	topo, err := FromNVML(gpus)
	require.NoError(t, err)
	for i := range 4 {
		for j := range 4 {
			if i != j {
				require.Equal(t, "NV3", topo.Link(i, j).String())
			}
		}
	}
}

func TestFromNVMLErrors(t *testing.T) {
	_, err := FromNVML([]NVMLGPU{{Index: 1, Ancestor: []int{0}}})
	require.ErrorContains(t, err, "has index 1")
	_, err = FromNVML([]NVMLGPU{{Index: 0, Ancestor: []int{0, 10}}, {Index: 1, Ancestor: []int{20, 0}}})
	require.ErrorContains(t, err, "common ancestor")
	_, err = UnmarshalNVML([]byte("{"))
	require.ErrorIs(t, err, ErrBadTopology)
}
