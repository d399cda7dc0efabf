package launch

import (
	"fmt"
	"runtime"
	"syscall"
	"unsafe"
)

// affinitySupported says whether this platform can pin a worker to CPUs.
const affinitySupported = true

// cpuMask is a kernel cpu_set_t large enough for NR_CPUS = 8192.
type cpuMask [8192 / 64]uint64

// setAffinity sets the CPU affinity of thread pid (0: the calling thread)
// with sched_setaffinity(2). Threads the process already has keep their
// mask; threads and processes created afterwards, and a program exec'd by
// the thread, inherit it.
func setAffinity(pid int, cpus []int) error {
	var mask cpuMask
	for _, c := range cpus {
		if c < 0 || c >= len(mask)*64 {
			return fmt.Errorf("sched_setaffinity: cpu %d out of range", c)
		}
		mask[c/64] |= 1 << (uint(c) % 64)
	}
	_, _, errno := syscall.RawSyscall(syscall.SYS_SCHED_SETAFFINITY, uintptr(pid), unsafe.Sizeof(mask), uintptr(unsafe.Pointer(&mask)))
	if errno != 0 {
		return fmt.Errorf("sched_setaffinity pid %d cpus %s: %w", pid, formatCPUList(cpus), errno)
	}
	return nil
}

// allowedCPUs returns the CPUs the calling thread may run on
// (sched_getaffinity(2)).
func allowedCPUs() ([]int, error) {
	var mask cpuMask
	_, _, errno := syscall.RawSyscall(syscall.SYS_SCHED_GETAFFINITY, 0, unsafe.Sizeof(mask), uintptr(unsafe.Pointer(&mask)))
	if errno != 0 {
		return nil, fmt.Errorf("sched_getaffinity: %w", errno)
	}
	var cpus []int
	for w, bits := range mask {
		for b := 0; b < 64; b++ {
			if bits&(1<<uint(b)) != 0 {
				cpus = append(cpus, w*64+b)
			}
		}
	}
	return cpus, nil
}

// execPinned pins the calling OS thread to cpus and replaces the process
// with path (argv, env). execve(2) keeps the thread's affinity, and the
// new program starts with that one thread, so every thread it ever
// creates inherits the mask: there is no window in which the worker runs
// unpinned. It returns only on failure.
func execPinned(cpus []int, path string, argv, env []string) error {
	runtime.LockOSThread() // never unlocked: the process is replaced or exits
	if err := setAffinity(0, cpus); err != nil {
		return err
	}
	if err := syscall.Exec(path, argv, env); err != nil {
		return fmt.Errorf("exec %s: %w", path, err)
	}
	return nil
}
