package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fakeGo stands in for the go command in the Makefile's test recipes: `go list` prints one
// package per suite (unit, the race run's yarn packages (one stands for them), integration), `go test -json` prints
// a passing test of that package, except that the integration run prints what FAKE_INTEG
// says (pass: one passing test; none: a package with no test run; fail: a failing test).
// Every call is appended to $FAKE_GO_LOG.
const fakeGo = `#!/usr/bin/env bash
echo "$*" >> "$FAKE_GO_LOG"
last=${@: -1}
case $last in
  ./integration/) pkg=github.com/xres/xres/integration ;;
  ./yarn/...) pkg=github.com/xres/xres/yarn/internal/ipc ;;
  *) pkg=github.com/xres/xres/conf ;;
esac
case $1 in
  list) echo "$pkg" ;;
  test)
    r=pass
    [[ $pkg == */integration ]] && r=${FAKE_INTEG:-pass}
    case $r in
      pass) echo '{"Action":"pass","Package":"'$pkg'","Test":"TestA"}'; echo '{"Action":"pass","Package":"'$pkg'"}' ;;
      none) echo '{"Action":"output","Package":"'$pkg'","Output":"testing: warning: no tests to run\n"}'; echo '{"Action":"pass","Package":"'$pkg'"}' ;;
      fail) echo '{"Action":"fail","Package":"'$pkg'","Test":"TestA"}'; echo '{"Action":"fail","Package":"'$pkg'"}'; exit 1 ;;
    esac ;;
  *) echo "fake go: unexpected: $*" >&2; exit 2 ;;
esac
`

// runMake runs one target of the repository's Makefile with the fake go and a testsummary
// built from this package; it returns make's exit code, its output and the go calls made.
func runMake(t *testing.T, target, integ string) (int, string, string) {
	t.Helper()
	dir := t.TempDir()
	goBin := filepath.Join(dir, "go")
	require.NoError(t, os.WriteFile(goBin, []byte(fakeGo), 0o755))
	summary := filepath.Join(dir, "testsummary")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	build := exec.CommandContext(ctx, "go", "build", "-o", summary, ".")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)

	logFile := filepath.Join(dir, "go.log")
	cmd := exec.CommandContext(ctx, "make", "--no-print-directory", "-C", "../..", target, "GO="+goBin, "SUMMARY="+summary)
	cmd.Env = append(os.Environ(), "FAKE_GO_LOG="+logFile, "FAKE_INTEG="+integ)
	b, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	calls, err := os.ReadFile(logFile)
	require.NoError(t, err)
	return code, string(b), string(calls)
}

// make test runs both suites and counts them apart; before the fix its unit recipe's `exit`
// ended the shell and the integration suite never ran.
func TestMakeTestRunsBothSuites(t *testing.T) {
	code, out, calls := runMake(t, "test", "pass")
	require.Equal(t, 0, code, out)
	require.Contains(t, calls, "test -json -count=1 -tags integration -timeout 60m ./integration/", "the integration suite ran")
	require.Contains(t, out, "make test: 1 unit + 1 race + 1 integration passed, 0 failed, 0 skipped", out)
}

// A suite that runs no test fails make test, naming it, though go test exited 0.
func TestMakeTestFailsWhenIntegrationRunsNoTest(t *testing.T) {
	code, out, _ := runMake(t, "test", "none")
	require.NotEqual(t, 0, code, out)
	require.Contains(t, out, "make test: 1 unit + 1 race + 0 integration passed", out)
	require.Contains(t, out, "FAIL suite integration ran no test", out)
}

// A failing integration test fails make test; the unit counts are still given.
func TestMakeTestFailsWhenIntegrationFails(t *testing.T) {
	code, out, _ := runMake(t, "test", "fail")
	require.NotEqual(t, 0, code, out)
	require.Contains(t, out, "1 failed", out)
	require.Contains(t, out, "github.com/xres/xres/integration TestA", out)
}

// make unit runs the unit and race suites only; make integration the integration suite only.
func TestMakeUnitAndIntegrationTargets(t *testing.T) {
	code, out, calls := runMake(t, "unit", "pass")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "make unit: 1 unit + 1 race passed", out)
	require.NotContains(t, calls, "-tags integration")

	code, out, calls = runMake(t, "integration", "pass")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "make integration: 1 integration passed", out)
	require.Equal(t, 2, strings.Count(calls, "\n"), "go list and go test of the integration suite only:\n%s", calls)
}
