package archtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/scanner"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
)

const module = "github.com/xres/xres"

// pendingRules are the rules that main does not meet yet, each with the
// branch whose merge makes it hold. A pending rule still fails (with that
// branch named); one that holds while listed here fails too, so that the
// list is emptied as the branches land and says the truth at every commit.
var pendingRules = map[string]string{}

// rule reports the violations of the rule named by the calling test.
func rule(t *testing.T, violations []string, fix string) {
	t.Helper()
	sort.Strings(violations)
	branch, pending := pendingRules[t.Name()]
	if len(violations) == 0 {
		if pending {
			t.Errorf("%s holds now: remove it from pendingRules (it waited for %s)", t.Name(), branch)
		}
		return
	}
	for _, v := range violations {
		t.Error(v)
	}
	if pending {
		t.Errorf("%d violations; pending until %s is merged; %s", len(violations), branch, fix)
		return
	}
	t.Errorf("%d violations; %s", len(violations), fix)
}

// pkg is what `go list` says about one package of the module.
type pkg struct {
	ImportPath string
	Dir        string
	GoFiles    []string
	CgoFiles   []string
	Imports    []string
	Deps       []string
}

var (
	listOnce sync.Once
	listed   map[string]*pkg
	listErr  error
)

// packages lists the module's packages (non-test files), keyed by import
// path. A package's Imports and Deps are the union over a cgo build and
// CGO_ENABLED=0 (how `make build` builds am and the launcher), so that a
// dependency behind a cgo build tag counts either way.
func packages(t *testing.T) map[string]*pkg {
	t.Helper()
	listOnce.Do(func() {
		listed = map[string]*pkg{}
		for _, cgo := range []string{"1", "0"} {
			cmd := exec.Command(goTool(), "list", "-json=ImportPath,Dir,GoFiles,CgoFiles,Imports,Deps", "./...")
			cmd.Dir = moduleRoot(t)
			cmd.Env = append(os.Environ(), "CGO_ENABLED="+cgo)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				listErr = fmt.Errorf("go list (CGO_ENABLED=%s): %w: %s", cgo, err, stderr.String())
				return
			}
			dec := json.NewDecoder(bytes.NewReader(out))
			for dec.More() {
				var p pkg
				if err := dec.Decode(&p); err != nil {
					listErr = fmt.Errorf("go list output: %w", err)
					return
				}
				if q, ok := listed[p.ImportPath]; ok {
					q.Imports = union(q.Imports, p.Imports)
					q.Deps = union(q.Deps, p.Deps)
					q.GoFiles = union(q.GoFiles, p.GoFiles)
					q.CgoFiles = union(q.CgoFiles, p.CgoFiles)
					continue
				}
				listed[p.ImportPath] = &p
			}
		}
	})
	if listErr != nil {
		t.Fatal(listErr)
	}
	return listed
}

func union(a, b []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range append(append([]string{}, a...), b...) {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

func mustPkg(t *testing.T, rel string) *pkg {
	t.Helper()
	p, ok := packages(t)[module+"/"+rel]
	if !ok {
		t.Fatalf("package %s/%s not found: the rule names a package that moved; update the rule, not loosen it", module, rel)
	}
	return p
}

// under reports whether import path p is the package rel of the module or
// one below it.
func under(p, rel string) bool {
	full := module + "/" + rel
	return p == full || strings.HasPrefix(p, full+"/")
}

// TestYarnImportsNoDriver: no package under yarn/ links a driver package
// (directly or through another package): the YARN side knows resources
// only through conf and resources.
func TestYarnImportsNoDriver(t *testing.T) {
	var bad []string
	for path, p := range packages(t) {
		if !under(path, "yarn") {
			continue
		}
		for _, d := range p.Deps {
			if under(d, "driver") {
				bad = append(bad, fmt.Sprintf("%s links %s (via %s)", path, d, directVia(t, p, d)))
			}
		}
	}
	rule(t, bad, "yarn reaches resources through conf and resources, never through driver code")
}

// TestAmLinksNoDriver: the am binary links no driver package and no
// go-nvml (`go list -deps ./cmd/am`).
func TestAmLinksNoDriver(t *testing.T) {
	p := mustPkg(t, "cmd/am")
	var bad []string
	for _, d := range p.Deps {
		if under(d, "driver") || strings.HasPrefix(d, "github.com/NVIDIA/go-nvml") {
			bad = append(bad, fmt.Sprintf("cmd/am links %s (via %s)", d, directVia(t, p, d)))
		}
	}
	rule(t, bad, "what am checks about drivers comes from their declared params, not their code")
}

// TestAmLinksNoTemplate: the am binary links no text/template (nor
// html/template, built on it). A template looks methods up by name at run
// time, so the linker keeps every exported method of every type in the
// binary: ~3 MiB more of `am`, all resident in the ApplicationMaster, whose
// peak RSS is charged to its container (make bench-am-curve;
// yarn/amweb/page.go).
func TestAmLinksNoTemplate(t *testing.T) {
	p := mustPkg(t, "cmd/am")
	var bad []string
	for _, d := range p.Deps {
		if d == "text/template" || d == "html/template" {
			bad = append(bad, fmt.Sprintf("cmd/am links %s (via %s)", d, directVia(t, p, d)))
		}
	}
	rule(t, bad, "the AM's pages are written by hand (yarn/amweb/page.go): a template keeps every method of the binary linked")
}

// TestLauncherLinksNoKerberos: the container-launcher binary links no
// Kerberos (github.com/jcmturner/...), no encoding/gob (which gokrb5
// pulls in), no TLS (crypto/tls, crypto/x509) and not the NodeManager
// REST helper's package: every launch would initialise them. A NodeManager
// on HTTPS or asking for SPNEGO is asked through the xres-nmrest helper
// (driver/gpu/nmhelper), run beside the launcher.
func TestLauncherLinksNoKerberos(t *testing.T) {
	p := mustPkg(t, "cmd/container-launcher")
	var bad []string
	for _, d := range p.Deps {
		if strings.HasPrefix(d, "github.com/jcmturner/") || d == "encoding/gob" || d == "crypto/tls" || d == "crypto/x509" || under(d, "driver/gpu/nmhelper") {
			bad = append(bad, fmt.Sprintf("cmd/container-launcher links %s (via %s)", d, directVia(t, p, d)))
		}
	}
	rule(t, bad, "HTTPS and SPNEGO belong in the xres-nmrest helper, run only when a NodeManager needs them")
}

// TestLaunchImportsNoConcreteDriver: driver/launch reaches drivers only
// through the driver contract; no concrete driver, and not the registry of
// built-in drivers, is linked into it (cmd/container-launcher assembles
// that registry). driver/launch's TestLauncherNamesNoDriver keeps its own
// list of what it may import.
func TestLaunchImportsNoConcreteDriver(t *testing.T) {
	p := mustPkg(t, "driver/launch")
	var bad []string
	for _, d := range p.Deps {
		for _, c := range []string{"driver/gpu", "driver/amd", "driver/pci", "driver/plugin", "driver/builtin"} {
			if under(d, c) {
				bad = append(bad, fmt.Sprintf("driver/launch links %s (via %s)", d, directVia(t, p, d)))
			}
		}
	}
	rule(t, bad, "register the built-in drivers in cmd/container-launcher")
}

// TestSubmitBesideAM: the submission client does not link the AM's loop;
// `am submit` and `am run` are peers over the yarn clients.
func TestSubmitBesideAM(t *testing.T) {
	p := mustPkg(t, "yarn/submit")
	var bad []string
	for _, d := range p.Deps {
		if d == module+"/yarn/am" {
			bad = append(bad, fmt.Sprintf("yarn/submit links yarn/am (via %s)", directVia(t, p, d)))
		}
	}
	rule(t, bad, "move what both need out of yarn/am")
}

// vendorVariables are the device variables only their drivers may spell.
var vendorVariables = []string{"CUDA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES"}

// TestVendorVariablesInTheirDrivers: outside driver/gpu and driver/amd no
// Go file of the module (tests and testdata aside; comments count) spells
// a vendor's device variable: a grant
// carries its environment, and the generic code passes it on without
// knowing its names.
func TestVendorVariablesInTheirDrivers(t *testing.T) {
	var bad []string
	for path, p := range packages(t) {
		if under(path, "driver/gpu") || under(path, "driver/amd") {
			continue
		}
		for _, f := range append(append([]string{}, p.GoFiles...), p.CgoFiles...) {
			name := filepath.Join(p.Dir, f)
			src, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			fset := token.NewFileSet()
			file := fset.AddFile(name, -1, len(src))
			var sc scanner.Scanner
			sc.Init(file, src, nil, scanner.ScanComments)
			for {
				pos, tok, lit := sc.Scan()
				if tok == token.EOF {
					break
				}
				if tok != token.STRING && tok != token.IDENT && tok != token.COMMENT {
					continue
				}
				for _, v := range vendorVariables {
					if strings.Contains(lit, v) {
						rel, _ := filepath.Rel(moduleRoot(t), name)
						bad = append(bad, fmt.Sprintf("%s:%d spells %s", rel, fset.Position(pos).Line, v))
					}
				}
			}
		}
	}
	rule(t, bad, "let the driver's grant carry the variable")
}

// allocateLoop is the package holding the AM's allocate loop, and
// maxLoopLines the most non-test lines it may have: the loop's package
// does one job.
const (
	allocateLoop = "yarn/am"
	maxLoopLines = 3000
)

// TestAllocateLoopSize: the package of the AM's allocate loop (the one
// that calls the scheduler's Allocate) stays under maxLoopLines non-test
// lines; planning, the HTTP surface and drawing live elsewhere.
func TestAllocateLoopSize(t *testing.T) {
	p := mustPkg(t, allocateLoop)
	lines, callsAllocate := 0, false
	for _, f := range append(append([]string{}, p.GoFiles...), p.CgoFiles...) {
		name := filepath.Join(p.Dir, f)
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		lines += bytes.Count(src, []byte("\n"))
		file, err := parser.ParseFile(token.NewFileSet(), name, src, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			if c, ok := n.(*ast.CallExpr); ok {
				if s, ok := c.Fun.(*ast.SelectorExpr); ok && s.Sel.Name == "Allocate" {
					callsAllocate = true
				}
			}
			return true
		})
	}
	if !callsAllocate {
		t.Fatalf("%s calls no Allocate: the allocate loop moved; point allocateLoop at its package", allocateLoop)
	}
	var bad []string
	if lines >= maxLoopLines {
		bad = append(bad, fmt.Sprintf("%s has %d non-test lines (the rule: under %d)", allocateLoop, lines, maxLoopLines))
	}
	rule(t, bad, "move what is not the allocate loop into a package named for it")
}

// directVia names the import of p through which p links dep: dep itself
// when p imports it, else the first direct import that links it.
func directVia(t *testing.T, p *pkg, dep string) string {
	all := packages(t)
	var via []string
	for _, im := range p.Imports {
		if im == dep {
			return "a direct import"
		}
		if q, ok := all[im]; ok {
			for _, d := range q.Deps {
				if d == dep {
					via = append(via, strings.TrimPrefix(im, module+"/"))
					break
				}
			}
		}
	}
	if len(via) == 0 {
		return "?"
	}
	return strings.Join(via, ", ")
}

var (
	rootOnce sync.Once
	root     string
	rootErr  error
)

// moduleRoot is the folder of the module's go.mod.
func moduleRoot(t *testing.T) string {
	t.Helper()
	rootOnce.Do(func() {
		out, err := exec.Command(goTool(), "env", "GOMOD").Output()
		if err != nil {
			rootErr = fmt.Errorf("go env GOMOD: %w", err)
			return
		}
		root = filepath.Dir(strings.TrimSpace(string(out)))
	})
	if rootErr != nil {
		t.Fatal(rootErr)
	}
	return root
}

// goTool is the go command of the toolchain running this test, whatever
// PATH says.
func goTool() string {
	if p := filepath.Join(runtime.GOROOT(), "bin", "go"); fileExists(p) {
		return p
	}
	return "go"
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
