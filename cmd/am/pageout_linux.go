package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// madvise(2) advice values (Linux).
const (
	madvRandom  = 1  // MADV_RANDOM: no readahead around a fault
	madvPageout = 21 // MADV_PAGEOUT (Linux 5.4+): reclaim the range's pages now
)

// pageOutBinary drops the ApplicationMaster's binary pages from its resident
// set, once, after the packages' initialisation: what the AM runs after that
// comes back a page at a time.
//
// Why: the AM's peak RSS (VmHWM) is charged to its YARN container, and most of
// it is the binary itself, not the heap. The NodeManager writes the localized
// binary through the page cache in large folios, and Linux (6.18+) maps a
// whole large folio on a fault, so nearly every page of am's 13 MB of code
// and tables was resident though the AM runs a small part of it (make
// bench-am-curve, N=64: RssFile 12.0 MiB of VmHWM 17.8 MiB). MADV_RANDOM alone
// does nothing for pages already cached; MADV_PAGEOUT first reclaims them
// (clean file pages: nothing is written; a page another process maps is
// left alone), and with MADV_RANDOM each later fault reads only its page.
// Measured: RssFile 12.0 -> 8.1 MiB, VmHWM 17.8 -> 14.1 MiB. The cost is the
// page reads of what the AM then uses (a few MiB, once). Best effort: a kernel
// without MADV_PAGEOUT (before 5.4), or one that refuses, changes nothing
// (main ignores the error; the test reads it).
func pageOutBinary() error {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return err
	}
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return err
	}
	defer f.Close()
	var first error
	found := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// 00400000-009f3000 r-xp 00000000 fd:00 1234 /path/to/am
		fs := strings.Fields(sc.Text())
		if len(fs) < 6 || strings.Join(fs[5:], " ") != exe || strings.Contains(fs[1], "w") {
			continue // not the binary, or its writable data (private copies, not file pages)
		}
		lo, hi, ok := strings.Cut(fs[0], "-")
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if !ok || err1 != nil || err2 != nil || end <= start {
			continue
		}
		found = true
		for _, advice := range []uintptr{madvRandom, madvPageout} {
			if _, _, e := syscall.Syscall(syscall.SYS_MADVISE, uintptr(start), uintptr(end-start), advice); e != 0 && first == nil {
				first = fmt.Errorf("madvise(%#x, %d, %d): %w", start, end-start, advice, e)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if !found {
		return fmt.Errorf("no mapping of %s in /proc/self/maps", exe)
	}
	return first
}
