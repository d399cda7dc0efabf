// Command testsummary reads `go test -json` on standard input and prints what a plain
// `go test` would (package results, the output of failed tests, package-level output such as the
// integration harness's progress), then one closing line
//
//	make test: 812 passed, 0 failed, 3 skipped (packages: 41 ok, 0 failed)
//
// and every skipped test with the reason it gave, so that a skip cannot hide in a long log.
// Where the input holds several runs, each announced by a SuiteMarker line (the Makefile's
// unit, race and integration runs), the count is given per suite:
//
//	make test: 2224 unit + 54 race + 118 integration passed, 0 failed, 1 skipped (packages: 43 ok, 0 failed)
//
// It exits 1 when a test or a package failed (a build error included), when the input holds
// no test result at all, or when a suite, or a package it names as having tests, reported
// none.
//
// Used by the Makefile: `go test -json ./... | go run ./integration/testsummary`.
package main

import (
	"fmt"
	"os"
)

func main() {
	s := newSummary(os.Stdout)
	if err := s.read(os.Stdin); err != nil {
		fmt.Fprintf(os.Stderr, "testsummary: %v\n", err)
		os.Exit(1)
	}
	os.Exit(s.finish(label()))
}

// label names the run in the closing line: $TESTSUMMARY_LABEL, else "tests".
func label() string {
	if l := os.Getenv("TESTSUMMARY_LABEL"); l != "" {
		return l
	}
	return "tests"
}
