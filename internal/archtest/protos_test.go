package archtest

import (
	"bufio"
	"bytes"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// escapeHatch is the one file whose exported declarations may name
// generated protos (the clients' Call and the id and resource helpers).
const escapeHatch = "proto.go"

const protoPrefix = "github.com/xres/xres/hadoopproto/"

// TestExportedAPIHasNoProtos fails when a hadoopproto type appears in the
// exported API of package yarn (a function's or method's signature, a
// struct field, an interface method, a type definition, a variable or
// constant) outside the escape hatch file: the clients speak Go types and
// convert at their own boundary.
//
// (Moved here from yarn/api_test.go.)
func TestExportedAPIHasNoProtos(t *testing.T) {
	var bad []string
	for _, v := range protoViolations(t, filepath.Join(moduleRoot(t), "yarn")) {
		bad = append(bad, "yarn's exported API names a generated proto: "+v)
	}
	rule(t, bad, "convert at the client's boundary, or move the declaration to yarn/"+escapeHatch+" (the escape hatch)")
}

// protoViolations type-checks the package in dir (its non-test files,
// dependencies from `go list -export` data) and lists each exported
// declaration outside escapeHatch whose type names a hadoopproto type.
func protoViolations(t *testing.T, dir string) []string {
	t.Helper()
	exports := exportData(t, dir)
	fset := token.NewFileSet()
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, n := range names {
		if strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, n, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		p, ok := exports[path]
		if !ok || p == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(p)
	})
	conf := types.Config{Importer: imp}
	pkg, err := conf.Check("github.com/xres/xres/yarn", fset, files, nil)
	if err != nil {
		t.Fatalf("type-check: %v", err)
	}
	inHatch := func(obj types.Object) bool {
		return filepath.Base(fset.Position(obj.Pos()).Filename) == escapeHatch
	}
	var out []string
	report := func(obj types.Object, what string, typ types.Type) {
		if inHatch(obj) {
			return
		}
		if p := protoIn(typ, pkg, map[types.Type]bool{}); p != "" {
			out = append(out, fmt.Sprintf("%s (%s)", what, p))
		}
	}
	scope := pkg.Scope()
	for _, name := range scope.Names() {
		obj := scope.Lookup(name)
		if !obj.Exported() {
			continue
		}
		switch o := obj.(type) {
		case *types.Func:
			report(o, "func "+name, o.Type())
		case *types.Var:
			report(o, "var "+name, o.Type())
		case *types.Const:
			report(o, "const "+name, o.Type())
		case *types.TypeName:
			if o.IsAlias() {
				report(o, "type "+name, o.Type())
				continue
			}
			named, ok := o.Type().(*types.Named)
			if !ok {
				continue
			}
			switch u := named.Underlying().(type) {
			case *types.Struct:
				for i := 0; i < u.NumFields(); i++ {
					if f := u.Field(i); f.Exported() || f.Embedded() {
						report(o, "field "+name+"."+f.Name(), f.Type())
					}
				}
			case *types.Interface:
				for i := 0; i < u.NumMethods(); i++ {
					if m := u.Method(i); m.Exported() {
						report(o, "interface method "+name+"."+m.Name(), m.Type())
					}
				}
			default:
				report(o, "type "+name, u)
			}
			for i := 0; i < named.NumMethods(); i++ {
				m := named.Method(i)
				if m.Exported() && !inHatch(m) {
					if p := protoIn(m.Type(), pkg, map[types.Type]bool{}); p != "" {
						out = append(out, fmt.Sprintf("method (%s).%s (%s)", o.Name(), m.Name(), p))
					}
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

// protoIn returns the first hadoopproto type typ names ("" for none). It
// looks through pointers, slices, maps, arrays, channels, signatures and
// unnamed structs; a named type of this package is checked on its own
// declaration, one of another package is judged by its package.
func protoIn(typ types.Type, self *types.Package, seen map[types.Type]bool) string {
	if seen[typ] {
		return ""
	}
	seen[typ] = true
	switch x := typ.(type) {
	case *types.Named:
		if p := x.Obj().Pkg(); p != nil && strings.HasPrefix(p.Path(), protoPrefix) {
			return x.String()
		}
		if args := x.TypeArgs(); args != nil {
			for i := 0; i < args.Len(); i++ {
				if p := protoIn(args.At(i), self, seen); p != "" {
					return p
				}
			}
		}
		return ""
	case *types.Alias:
		return protoIn(types.Unalias(x), self, seen)
	case *types.Pointer:
		return protoIn(x.Elem(), self, seen)
	case *types.Slice:
		return protoIn(x.Elem(), self, seen)
	case *types.Array:
		return protoIn(x.Elem(), self, seen)
	case *types.Chan:
		return protoIn(x.Elem(), self, seen)
	case *types.Map:
		if p := protoIn(x.Key(), self, seen); p != "" {
			return p
		}
		return protoIn(x.Elem(), self, seen)
	case *types.Signature:
		for _, tup := range []*types.Tuple{x.Params(), x.Results()} {
			for i := 0; i < tup.Len(); i++ {
				if p := protoIn(tup.At(i).Type(), self, seen); p != "" {
					return p
				}
			}
		}
	case *types.Struct:
		for i := 0; i < x.NumFields(); i++ {
			if p := protoIn(x.Field(i).Type(), self, seen); p != "" {
				return p
			}
		}
	case *types.Interface:
		for i := 0; i < x.NumMethods(); i++ {
			if p := protoIn(x.Method(i).Type(), self, seen); p != "" {
				return p
			}
		}
	}
	return ""
}

// exportData maps every dependency of the package in dir to its export
// data file (`go list -export`, built offline from the module cache).
func exportData(t *testing.T, dir string) map[string]string {
	t.Helper()
	cmd := exec.Command(goTool(), "list", "-export", "-deps", "-f", "{{.ImportPath}} {{.Export}}", ".")
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -export: %v: %s", err, stderr.String())
	}
	m := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		path, file, _ := strings.Cut(sc.Text(), " ")
		m[path] = file
	}
	return m
}
