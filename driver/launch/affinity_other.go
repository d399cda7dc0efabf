//go:build !linux

package launch

import "errors"

// affinitySupported says whether this platform can pin a worker to CPUs.
const affinitySupported = false

var errNoAffinity = errors.New("CPU affinity is only supported on Linux")

func setAffinity(pid int, cpus []int) error { return errNoAffinity }

func allowedCPUs() ([]int, error) { return nil, errNoAffinity }

func execPinned(cpus []int, path string, argv, env []string) error { return errNoAffinity }
