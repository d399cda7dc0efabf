//go:build linux

package gpu

// findTopologyHelper finds xres-nvml for its topology mode.
var findTopologyHelper = findNVMLHelper
