package main

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestAmLinksNoDriverCode: am (submission client and ApplicationMaster)
// links no driver package and not go-nvml: what it checks about drivers'
// params comes from resources/params, the drivers' declarations as data.
// An import of driver/... anywhere under am (yarn/amcli reaching for
// driver/launch to check params, say) fails here.
func TestAmLinksNoDriverCode(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "go", "list", "-deps", ".").Output()
	require.NoError(t, err)
	deps := strings.Fields(string(out))
	require.Contains(t, deps, "github.com/xres/xres/yarn/amcli", "the list is am's")
	for _, d := range deps {
		require.False(t, d == "github.com/xres/xres/driver" || strings.HasPrefix(d, "github.com/xres/xres/driver/"),
			"am links driver code: %s", d)
		require.NotContains(t, d, "go-nvml", "am links NVIDIA's library: %s", d)
	}
}
