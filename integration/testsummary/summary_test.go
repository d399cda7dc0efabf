package main

import (
	"bytes"
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// goTestJSON runs the real `go test -json` on a fixture module (testdata/mod: passing,
// failing, skipping tests and a package that does not build) and returns its output.
func goTestJSON(t *testing.T, pkgs ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", append([]string{"test", "-json", "-count=1"}, pkgs...)...)
	cmd.Dir = "testdata/mod"
	cmd.Env = append(cmd.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	out, _ := cmd.Output() // go test exits 1 when a test fails; the events tell us what happened
	require.NotEmpty(t, out)
	return out
}

func TestSummaryCountsAndListsSkips(t *testing.T) {
	var buf bytes.Buffer
	s := newSummary(&buf)
	require.NoError(t, s.read(bytes.NewReader(goTestJSON(t, "./..."))))
	code := s.finish("make test")
	out := buf.String()

	require.Equal(t, 1, code, out)
	// ok: TestPasses, TestSub, TestSub/a, TestSub/b; bad: TestPassesToo.
	require.Contains(t, out, "make test: 5 passed, 1 failed, 1 skipped (packages: 1 ok, 2 failed)", out)
	require.Contains(t, out, "example.com/fixture/ok TestSkipsWithReason: ok_test.go:7: needs a GPU")
	require.Contains(t, out, "the reason it failed", "a failed test's output is printed")
	require.Contains(t, out, "undefined: undefined", "a build error is printed")
	require.Contains(t, out, "FAIL package example.com/fixture/broken")
	require.NotContains(t, out, "=== RUN", "passing tests' output stays quiet, as with plain go test")
}

func TestSummaryAllPassing(t *testing.T) {
	var buf bytes.Buffer
	s := newSummary(&buf)
	require.NoError(t, s.read(bytes.NewReader(goTestJSON(t, "./ok"))))
	require.Equal(t, 0, s.finish("unit"), buf.String())
	require.Contains(t, buf.String(), "unit: 4 passed, 0 failed, 1 skipped (packages: 1 ok, 0 failed)")
}

func TestSummaryNoResultsIsAFailure(t *testing.T) {
	var buf bytes.Buffer
	s := newSummary(&buf)
	require.NoError(t, s.read(strings.NewReader("go: no packages to test\n")))
	require.Equal(t, 1, s.finish("unit"))
	require.Contains(t, buf.String(), "go: no packages to test")
	require.Contains(t, buf.String(), "no test ran")
}

// Suite markers (as the Makefile prints them) split the counts, and a suite, or a package it
// names, that reports no test result fails the summary.
func TestSummarySuites(t *testing.T) {
	ev := func(action, pkg, test string) string {
		return `{"Action":"` + action + `","Package":"` + pkg + `","Test":"` + test + `"}` + "\n"
	}
	for _, tc := range []struct {
		name, input, want, fail string
		code                    int
	}{
		{
			name: "both suites ran",
			input: SuiteMarker + " unit a b\n" + ev("pass", "a", "T1") + ev("pass", "b", "T2") + ev("skip", "b", "T3") +
				SuiteMarker + " integration i\n" + ev("pass", "i", "T"),
			want: "x: 2 unit + 1 integration passed, 0 failed, 1 skipped",
		},
		{
			name:  "integration ran none",
			input: SuiteMarker + " unit a\n" + ev("pass", "a", "T1") + SuiteMarker + " integration i\n" + ev("pass", "i", ""),
			want:  "x: 1 unit + 0 integration passed",
			fail:  "FAIL suite integration ran no test",
			code:  1,
		},
		{
			name:  "a package with tests reported none",
			input: SuiteMarker + " unit a b\n" + ev("pass", "a", "T1") + ev("pass", "b", ""),
			want:  "x: 1 unit passed",
			fail:  "FAIL suite unit: package b reported no test",
			code:  1,
		},
		{
			name:  "a skipped-only package counts as reported",
			input: SuiteMarker + " unit a\n" + ev("skip", "a", "T1"),
			want:  "x: 0 unit passed, 0 failed, 1 skipped",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			s := newSummary(&buf)
			require.NoError(t, s.read(strings.NewReader(tc.input)))
			require.Equal(t, tc.code, s.finish("x"), buf.String())
			require.Contains(t, buf.String(), tc.want)
			if tc.fail != "" {
				require.Contains(t, buf.String(), tc.fail)
			}
			require.NotContains(t, buf.String(), SuiteMarker, "markers are not echoed")
		})
	}
}
