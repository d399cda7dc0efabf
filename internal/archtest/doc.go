// Package archtest holds the architecture's rules as tests, in one place
// (arch_test.go), so that the next feature cannot quietly undo them: yarn
// never imports driver; cmd/am links no driver code and no go-nvml; the
// launcher's library imports no concrete driver; the yarn package's
// exported API names no generated proto outside its escape hatch;
// yarn/submit sits beside the AM's loop, not above it; only the gpu and amd
// drivers spell their vendors' device variables; the AM's loop stays small.
//
// The package has no code of its own: the rules read the module with
// `go list` and go/parser.
package archtest
