package launch

import (
	"fmt"
	"syscall"
	"unsafe"

	"github.com/xres/xres/driver"
)

// Linux's memory policy modes (linux/mempolicy.h).
const (
	mpolDefault   = 0
	mpolPreferred = 1
	mpolBind      = 2
)

// setThreadMemPolicy calls set_mempolicy(2) for the calling thread: p's
// mode over its nodes, or MPOL_DEFAULT for a zero p.
func setThreadMemPolicy(p memPolicy) error {
	var mask [maxNUMANodes / 64]uint64
	mode := mpolDefault
	switch p.mode {
	case driver.NUMAMemoryPreferred:
		mode = mpolPreferred
	case driver.NUMAMemoryBind:
		mode = mpolBind
	}
	for _, n := range p.nodes {
		mask[n/64] |= 1 << (uint(n) % 64)
	}
	var maskp, maxnode uintptr
	if mode != mpolDefault {
		maskp, maxnode = uintptr(unsafe.Pointer(&mask)), uintptr(len(mask)*64+1)
	}
	_, _, errno := syscall.RawSyscall(syscall.SYS_SET_MEMPOLICY, uintptr(mode), maskp, maxnode)
	if errno != 0 {
		return fmt.Errorf("set_mempolicy %s: %w", p, errno)
	}
	return nil
}
