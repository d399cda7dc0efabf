package driver_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/driver"
	"github.com/xres/xres/driver/drivertest"
)

type lastPlacer struct{ asked []int }

func (p *lastPlacer) Placement(_ context.Context, devices []driver.Device, amount int) (driver.Placement, error) {
	p.asked = append(p.asked, amount)
	return lastOnes{}, nil
}

type lastOnes struct{}

func (lastOnes) Pick(free []driver.Candidate, amount int) []driver.Candidate {
	return free[len(free)-amount:]
}
func (lastOnes) Describe(chosen []string) map[string]string {
	return map[string]string{"placement": "last", "placement.n": string(rune('0' + len(chosen)))}
}

// Without coordination a Placer still chooses (among all the devices),
// and what it describes is in every granted device's infos.
func TestCoordinatedPlacerWithoutReserver(t *testing.T) {
	p := &lastPlacer{}
	c := driver.NewCoordinated("gpu", drivertest.New(drivertest.Devices(drivertest.GPUs(4)...)), driver.CoordinatedOptions{Placer: p})
	infos, err := c.Discover(context.Background(), 2)
	require.NoError(t, err)
	require.Len(t, infos, 2)
	for i, want := range []string{"2", "3"} {
		idx, _ := infos[i].Property("index")
		require.Equal(t, want, idx)
		v, _ := infos[i].Property("placement")
		require.Equal(t, "last", v)
		n, _ := infos[i].Property("placement.n")
		require.Equal(t, "2", n)
	}
	require.Equal(t, []int{2}, p.asked)
}
