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

	suites []*suite // in the order their markers came; empty without markers
}

// SuiteMarker starts a line that names the suite whose events follow it, and the packages
// that must report at least one test result in it:
//
//	testsummary-suite integration github.com/xres/xres/integration
//
// The Makefile prints one before each `go test -json` run (the packages: those `go list`
// finds test files in). A suite that reports no test, or a named package that reports none,
// fails the summary: a test command that silently stopped running a suite is caught here.
const SuiteMarker = "testsummary-suite"

// suite is one `go test -json` run of a multi-suite input.
type suite struct {
	name     string
	required []string       // packages that must report a test result
	results  map[string]int // package → test results (pass, fail, skip) seen
	passed   int
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
		if name, pkgs, ok := parseMarker(string(line)); ok {
			s.suites = append(s.suites, &suite{name: name, required: pkgs, results: map[string]int{}})
			continue
		}
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
	if cur := s.current(); cur != nil && (e.Action == "pass" || e.Action == "fail" || e.Action == "skip") {
		cur.results[e.Package]++
		if e.Action == "pass" {
			cur.passed++
		}
	}
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

// parseMarker reads a SuiteMarker line: the suite's name and its required packages.
func parseMarker(line string) (name string, pkgs []string, ok bool) {
	f := strings.Fields(line)
	if len(f) < 2 || f[0] != SuiteMarker {
		return "", nil, false
	}
	return f[1], f[2:], true
}

// current is the suite whose events are being read (nil without markers).
func (s *summary) current() *suite {
	if len(s.suites) == 0 {
		return nil
	}
	return s.suites[len(s.suites)-1]
}

// passedLine is the closing line's count of passed tests: one number, or one per suite
// ("2224 unit + 54 race + 118 integration").
func (s *summary) passedLine() string {
	if len(s.suites) == 0 {
		return fmt.Sprint(s.passed)
	}
	parts := make([]string, len(s.suites))
	for i, su := range s.suites {
		parts[i] = fmt.Sprintf("%d %s", su.passed, su.name)
	}
	return strings.Join(parts, " + ")
}

// emptySuites names what ran no test: a suite with no test result at all, or a required
// package of a suite that reported none (its tests were never run, or it never built).
func (s *summary) emptySuites() []string {
	var out []string
	for _, su := range s.suites {
		total := 0
		for _, n := range su.results {
			total += n
		}
		if total == 0 {
			out = append(out, fmt.Sprintf("suite %s ran no test", su.name))
			continue
		}
		for _, p := range su.required {
			if su.results[p] == 0 {
				out = append(out, fmt.Sprintf("suite %s: package %s reported no test", su.name, p))
			}
		}
	}
	return out
}

// finish prints the closing line and the skipped tests; it returns the exit status.
func (s *summary) finish(label string) int {
	fmt.Fprintf(s.out, "\n%s: %s passed, %d failed, %d skipped (packages: %d ok, %d failed)\n",
		label, s.passedLine(), len(s.failed), len(s.skipped), s.pkgOK, len(s.pkgFail))
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
	empty := s.emptySuites()
	for _, e := range empty {
		fmt.Fprintf(s.out, "FAIL %s\n", e)
	}
	switch {
	case len(s.failed) > 0 || len(s.pkgFail) > 0 || len(empty) > 0:
		return 1
	case s.passed == 0 && len(s.skipped) == 0:
		fmt.Fprintln(s.out, "no test ran: the input held no test result")
		return 1
	}
	return 0
}
