package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
)

// event is one line of `go test -json` (cmd/test2json's TestEvent).
type event struct {
	Action     string
	Package    string
	Test       string
	Output     string
	ImportPath string // build-output and build-fail events (Go 1.24+)
}

type testKey struct{ pkg, test string }

// summary accumulates the events of one or more `go test -json` runs.
type summary struct {
	out io.Writer

	output  map[testKey][]string // a running test's output, printed if it fails
	pkgOut  map[string][]string  // package-level output, printed if the package fails
	build   map[string][]string  // build output per import path
	passed  int
	failed  []testKey
	skipped []skip
	pkgOK   int
	pkgFail []string
}

type skip struct {
	key    testKey
	reason string
}

func newSummary(out io.Writer) *summary {
	return &summary{
		out:    out,
		output: map[testKey][]string{},
		pkgOut: map[string][]string{},
		build:  map[string][]string{},
	}
}

func (s *summary) read(r io.Reader) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
			// Not an event: the toolchain printed plain text (e.g. a setup failure). Show it.
			fmt.Fprintln(s.out, string(line))
			continue
		}
		s.event(e)
	}
	return sc.Err()
}

func (s *summary) event(e event) {
	switch e.Action {
	case "build-output":
		s.build[e.ImportPath] = append(s.build[e.ImportPath], e.Output)
		return
	case "build-fail":
		fmt.Fprint(s.out, strings.Join(s.build[e.ImportPath], ""))
		return
	}
	if e.Test == "" {
		s.packageEvent(e)
		return
	}
	k := testKey{e.Package, e.Test}
	switch e.Action {
	case "output":
		if !strings.HasPrefix(e.Output, "=== ") { // RUN, PAUSE, CONT: -json implies -v
			s.output[k] = append(s.output[k], e.Output)
		}
	case "pass":
		s.passed++
		delete(s.output, k)
	case "fail":
		s.failed = append(s.failed, k)
		fmt.Fprint(s.out, strings.Join(s.output[k], ""))
		delete(s.output, k)
	case "skip":
		s.skipped = append(s.skipped, skip{k, skipReason(s.output[k])})
		delete(s.output, k)
	}
}

func (s *summary) packageEvent(e event) {
	switch e.Action {
	case "output":
		// Package-level output: the result line ("ok  pkg 1.2s", "FAIL pkg") and whatever
		// TestMain printed (the integration harness's progress). The result lines are printed
		// as they come; other lines as well, so a long cluster start shows progress.
		if e.Output == "PASS\n" || strings.HasPrefix(e.Output, "=== ") {
			return
		}
		fmt.Fprint(s.out, e.Output)
	case "pass":
		s.pkgOK++
	case "fail":
		s.pkgFail = append(s.pkgFail, e.Package)
	case "skip":
		// "no test files": nothing to count.
	}
}

// skipReason is what t.Skip printed: the test's output lines other than "=== RUN" and
// "--- SKIP", trimmed, joined; the file:line prefix stays (it says where the skip is).
func skipReason(lines []string) string {
	var r []string
	for _, l := range lines {
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "--- SKIP") {
			continue
		}
		r = append(r, t)
	}
	if len(r) == 0 {
		return "(no reason given)"
	}
	return strings.Join(r, " / ")
}

// finish prints the closing line and the skipped tests; it returns the exit status.
func (s *summary) finish(label string) int {
	fmt.Fprintf(s.out, "\n%s: %d passed, %d failed, %d skipped (packages: %d ok, %d failed)\n",
		label, s.passed, len(s.failed), len(s.skipped), s.pkgOK, len(s.pkgFail))
	if len(s.skipped) > 0 {
		sort.Slice(s.skipped, func(i, j int) bool {
			a, b := s.skipped[i].key, s.skipped[j].key
			return a.pkg < b.pkg || a.pkg == b.pkg && a.test < b.test
		})
		fmt.Fprintln(s.out, "skipped:")
		for _, sk := range s.skipped {
			fmt.Fprintf(s.out, "  %s %s: %s\n", sk.key.pkg, sk.key.test, sk.reason)
		}
	}
	if len(s.failed) > 0 {
		fmt.Fprintln(s.out, "failed:")
		for _, k := range s.failed {
			fmt.Fprintf(s.out, "  %s %s\n", k.pkg, k.test)
		}
	}
	for _, p := range s.pkgFail {
		fmt.Fprintf(s.out, "FAIL package %s\n", p)
	}
	switch {
	case len(s.failed) > 0 || len(s.pkgFail) > 0:
		return 1
	case s.passed == 0 && len(s.skipped) == 0:
		fmt.Fprintln(s.out, "no test ran: the input held no test result")
		return 1
	}
	return 0
}
