//go:build !cgo || !linux

package main

import (
	"fmt"
	"io"
)

// topologyMain without cgo: NVML cannot be loaded (exit 3, unavailable).
func topologyMain(_ []string, _, stderr io.Writer) int {
	fmt.Fprintln(stderr, "xres-nvml: NVML is unavailable: built without cgo")
	return 3
}
