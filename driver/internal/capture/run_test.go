package capture

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Issue 29, item 4: a background child that keeps the output pipes open
// does not keep Run waiting for it: Run returns once the process exited,
// with all it printed, and leaves the child running.
func TestRunReturnsWhenTheProcessExits(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "child")
	// 200 kB is more than a pipe buffer: most of it is read while the
	// process runs, the rest after it exited.
	cmd := exec.Command("sh", "-c", `(sleep 5) & echo $! > "$1"; echo 0,1; head -c 200000 /dev/zero | tr '\0' x; echo; echo err >&2; exit 3`, "script", pidFile)
	var stdout, stderr bytes.Buffer
	start := time.Now()
	err := Run(cmd, &stdout, &stderr)
	took := time.Since(start)
	var exit *exec.ExitError
	require.True(t, errors.As(err, &exit), "%v", err)
	require.Equal(t, 3, exit.ExitCode())
	require.Less(t, took, 4*time.Second, "Run waited for the background child")

	b, err := os.ReadFile(pidFile)
	require.NoError(t, err)
	child, err := strconv.Atoi(strings.TrimSpace(string(b)))
	require.NoError(t, err)
	t.Cleanup(func() { _ = syscall.Kill(child, syscall.SIGKILL) })
	require.NoError(t, syscall.Kill(child, 0), "the background child still runs: Run leaves it be")

	lines := strings.Split(stdout.String(), "\n")
	require.Equal(t, "0,1", lines[0])
	require.Len(t, lines[1], 200000, "all the process wrote before it exited")
	require.Equal(t, "err\n", stderr.String())
}

// Without a child holding them, the pipes end with the process, output
// complete.
func TestRunPlain(t *testing.T) {
	cmd := exec.Command("sh", "-c", `printf 'a\nb'; printf e >&2`)
	var stdout, stderr bytes.Buffer
	require.NoError(t, Run(cmd, &stdout, &stderr))
	require.Equal(t, "a\nb", stdout.String())
	require.Equal(t, "e", stderr.String())

	err := Run(exec.Command(filepath.Join(t.TempDir(), "absent")), &stdout, &stderr)
	require.ErrorIs(t, err, os.ErrNotExist)
}
