package main

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// rssFileKiB is this process's RssFile (KiB) from /proc/self/status.
func rssFileKiB(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	require.NoError(t, err)
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "RssFile:"); ok {
			v, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			require.NoError(t, err)
			return v
		}
	}
	t.Fatal("no RssFile in /proc/self/status")
	return 0
}

// TestPageOutBinary: after pageOutBinary the binary's pages that were
// resident are no longer all mapped (the test binary stands in for am; what
// it runs afterwards comes back a page at a time).
func TestPageOutBinary(t *testing.T) {
	before := rssFileKiB(t)
	err := pageOutBinary()
	if errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.EPERM) {
		t.Skipf("this kernel does not page out on request: %v", err)
	}
	require.NoError(t, err)
	after := rssFileKiB(t)
	t.Logf("RssFile %d -> %d KiB", before, after)
	require.Less(t, after, before)
}
