package am

import (
	"os"
	"strconv"
	"strings"
)

// PeakRSSKiB is this process's peak resident memory (VmHWM, KiB) on Linux;
// 0 elsewhere. The AM logs it when it ends; the benchmarks report it.
func PeakRSSKiB() int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			if f := strings.Fields(rest); len(f) > 0 {
				n, _ := strconv.ParseInt(f[0], 10, 64)
				return n
			}
		}
	}
	return 0
}
