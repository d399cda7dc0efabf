//go:build cgo && linux

package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCPUList(t *testing.T) {
	require.Equal(t, "0-3,8,63-64", cpuList([]uint{0x10f | 1<<63, 1}))
	require.Equal(t, "", cpuList([]uint{0}))
}

// Without an NVIDIA library the topology mode says NVML is unavailable
// (exit 3), as the listing mode does, so that the launcher falls back.
func TestTopologyWithoutLibrary(t *testing.T) {
	var out, errb bytes.Buffer
	code := topologyMain([]string{"--library", "/nonexistent/libnvidia-ml.so.1"}, &out, &errb)
	require.Equal(t, 3, code, errb.String())
	require.Contains(t, errb.String(), "NVML is unavailable")
}
