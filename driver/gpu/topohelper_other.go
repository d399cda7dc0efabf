//go:build !linux

package gpu

import "errors"

func findTopologyHelper(func(string) string) (string, error) {
	return "", errors.New("the NVML helper runs on Linux only")
}
