//go:build linux && !cgo

package gpu

import "github.com/xres/xres/driver"

// newNVMLEnumerator: a binary built without cgo asks NVML through the
// xres-nvml helper.
func newNVMLEnumerator(o nvmlOptions) driver.Enumerator { return &nvmlHelper{nvmlOptions: o} }
