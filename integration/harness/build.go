package harness

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	buildMu    sync.Mutex
	buildCache = map[string]string{}
)

// BuildBinary builds the Go package pkg (an import path, or a path relative to the test's
// package folder such as "./testdata/probe") as a static binary for the cluster's
// NodeManagers to run, and returns its absolute path. Each package is built once per test
// process; the binary stays until the process ends (a failed run keeps it).
func BuildBinary(t testing.TB, pkg string) string {
	t.Helper()
	buildMu.Lock()
	defer buildMu.Unlock()
	if p, ok := buildCache[pkg]; ok {
		return p
	}
	dir, err := binDir()
	if err != nil {
		t.Fatalf("build %s: %v", pkg, err)
	}
	name := path.Base(strings.TrimSuffix(pkg, "/..."))
	if name == "." || name == "/" || name == "" {
		name = "bin"
	}
	out := filepath.Join(dir, fmt.Sprintf("%s-%d", name, len(buildCache)))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go build -o %s %s: %v\n%s", out, pkg, err, b)
	}
	if pkg == "github.com/xres/xres/cmd/container-launcher" {
		// am submit ships the launcher's NodeManager REST helper from beside
		// it (the launcher runs it where a NodeManager speaks HTTPS or asks
		// for SPNEGO).
		helper := filepath.Join(dir, "xres-nmrest")
		cmd := exec.CommandContext(ctx, "go", "build", "-o", helper, pkg+"/xres-nmrest")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build -o %s %s/xres-nmrest: %v\n%s", helper, pkg, err, b)
		}
	}
	buildCache[pkg] = out
	return out
}

// binDir is this process's folder for built binaries (under the cluster's log folder
// when there is a cluster, so a failed run keeps them next to its logs).
func binDir() (string, error) {
	base := os.TempDir()
	if current != nil {
		if current.binDir != "" {
			return current.binDir, nil
		}
		base = current.LogDir
	}
	if err := os.MkdirAll(base, 0o755); err != nil {
		return "", fmt.Errorf("binary folder: %w", err)
	}
	d, err := os.MkdirTemp(base, "bin-")
	if err != nil {
		return "", fmt.Errorf("binary folder: %w", err)
	}
	if current != nil {
		current.binDir = d
	}
	return d, nil
}
