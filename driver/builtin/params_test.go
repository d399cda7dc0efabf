package builtin_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/conf"
	"github.com/xres/xres/driver"
	"github.com/xres/xres/driver/builtin"
)

// paramReaders are the driver.Param methods that read a value.
var paramReaders = map[string]bool{"Get": true, "Lookup": true, "Bool": true, "Choice": true, "Timeout": true}

// paramUse is what checkParamUse found in a source tree.
type paramUse struct {
	declared []string // "dir.var" of every driver.Declare'd package-level var
	problems []string // file:line: what is wrong
}

// checkParamUse reads the non-test Go files under root and reports every
// driver param read without a declaration (indexing a Params map or a
// params/param map; a driver.Param literal outside driver.Declare) and every
// declaration never read (no Get/Lookup/Bool/Choice/Timeout on it).
// skip names files (relative to root) that implement the readers.
func checkParamUse(t *testing.T, root string, skip ...string) paramUse {
	t.Helper()
	leafReads := paramsReads(t)
	fset := token.NewFileSet()
	type decl struct {
		dir, pkg, name string
		// leaf is "params.<X>" for a declaration of a param the
		// driver-free package resources/params spells and checks
		// (driver.Declare(params.X.WithDoc(…))): reading it there counts.
		leaf string
		pos  token.Position
	}
	var decls []decl
	read := map[string]bool{} // "dir.var" (unqualified use) or "pkg.var" (qualified)
	var use paramUse
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if strings.Contains(filepath.ToSlash(rel), "testdata/") && !strings.Contains(root, "testdata") {
			return nil
		}
		for _, s := range skip {
			if rel == s {
				return nil
			}
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		dir := filepath.Dir(path)
		inDeclare := map[*ast.CompositeLit]bool{}
		assigned := map[ast.Expr]bool{}
		for _, gd := range f.Decls {
			g, ok := gd.(*ast.GenDecl)
			if !ok || g.Tok != token.VAR {
				continue
			}
			for _, spec := range g.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, v := range vs.Values {
					if c, ok := v.(*ast.CallExpr); ok && isName(c.Fun, "Declare") && i < len(vs.Names) {
						decls = append(decls, decl{dir, f.Name.Name, vs.Names[i].Name, leafParam(c), fset.Position(vs.Names[i].Pos())})
						if len(c.Args) == 1 {
							if lit, ok := c.Args[0].(*ast.CompositeLit); ok {
								inDeclare[lit] = true
							}
						}
					}
				}
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.AssignStmt:
				for _, l := range n.Lhs {
					assigned[l] = true
				}
			case *ast.CompositeLit:
				if isName(n.Type, "Param") && !inDeclare[n] {
					use.problems = append(use.problems, fmt.Sprintf("%s: driver.Param literal outside driver.Declare", fset.Position(n.Pos())))
				}
			case *ast.IndexExpr:
				if isParamsMap(n.X) && !assigned[n] {
					use.problems = append(use.problems, fmt.Sprintf("%s: param read by indexing the params map; declare it with driver.Declare and read it through the declaration", fset.Position(n.Pos())))
				}
			case *ast.SelectorExpr:
				if !paramReaders[n.Sel.Name] {
					break
				}
				switch x := n.X.(type) {
				case *ast.Ident:
					read[dir+"."+x.Name] = true
				case *ast.SelectorExpr:
					if pkg, ok := x.X.(*ast.Ident); ok {
						read[pkg.Name+"."+x.Sel.Name] = true
					}
				}
			}
			return true
		})
		return nil
	})
	require.NoError(t, err)
	for _, d := range decls {
		use.declared = append(use.declared, filepath.Base(d.dir)+"."+d.name)
		if !read[d.dir+"."+d.name] && !read[d.pkg+"."+d.name] && !(d.leaf != "" && leafReads[d.leaf]) {
			use.problems = append(use.problems, fmt.Sprintf("%s: param %s is declared and never read", d.pos, d.name))
		}
	}
	sort.Strings(use.problems)
	return use
}

// leafParam is "params.<X>" for driver.Declare(params.X.WithDoc(…)), ""
// for any other declaration.
func leafParam(c *ast.CallExpr) string {
	if len(c.Args) != 1 {
		return ""
	}
	call, ok := c.Args[0].(*ast.CallExpr)
	if !ok {
		return ""
	}
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != "WithDoc" {
		return ""
	}
	x, ok := sel.X.(*ast.SelectorExpr)
	if !ok {
		return ""
	}
	if pkg, ok := x.X.(*ast.Ident); ok && pkg.Name == "params" {
		return "params." + x.Sel.Name
	}
	return ""
}

// paramsReads lists, as "params.<X>", the params package-level params of
// resources/params read there (Get/Lookup/Bool/Choice/Timeout on them).
func paramsReads(t *testing.T) map[string]bool {
	t.Helper()
	dir := filepath.Join("..", "..", "resources", "params")
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	require.NoError(t, err)
	reads := map[string]bool{}
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		require.NoError(t, err)
		ast.Inspect(f, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok && paramReaders[sel.Sel.Name] {
				if x, ok := sel.X.(*ast.Ident); ok {
					reads["params."+x.Name] = true
				}
			}
			return true
		})
	}
	require.NotEmpty(t, reads, "resources/params reads its params")
	return reads
}

// isName reports whether e is name or <pkg>.name.
func isName(e ast.Expr, name string) bool {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name == name
	case *ast.SelectorExpr:
		return e.Sel.Name == name
	}
	return false
}

// isParamsMap reports whether e looks like a resource's params map:
// x.Params, params or param.
func isParamsMap(e ast.Expr) bool {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name == "params" || e.Name == "param"
	case *ast.SelectorExpr:
		return e.Sel.Name == "Params"
	}
	return false
}

// TestParamsDeclaredAndRead: every param the drivers and the launcher read
// is declared (and so in the configuration reference), and every declared
// param is read somewhere.
func TestParamsDeclaredAndRead(t *testing.T) {
	use := checkParamUse(t, "..", "param.go", filepath.Join("examples", "acme", "acme.go")) // an example, not built in
	require.Empty(t, use.problems)

	// Every declaration is in a driver's or the launcher's list, and every
	// listed param is in conf's registry under its own key.
	listed := map[string]driver.Param{}
	for factory, ps := range builtin.Params() {
		require.NotEmpty(t, ps, factory)
		for _, p := range ps {
			listed[p.Name] = p
		}
	}
	for _, p := range builtin.LauncherParams() {
		listed[p.Name] = p
	}
	require.Len(t, listed, len(use.declared), "declared %v; listed %d", use.declared, len(listed))
	for name, p := range listed {
		o, ok := conf.LookupOption(p.Key("gpu"))
		require.True(t, ok, name)
		require.Equal(t, p.Option(), o, name)
	}
}

// TestCheckParamUse: the check above finds each kind of mistake.
func TestCheckParamUse(t *testing.T) {
	use := checkParamUse(t, filepath.Join("testdata", "paramuse"))
	require.ElementsMatch(t, []string{"a.readParam", "a.unreadParam", "a.Exported"}, use.declared)
	require.Len(t, use.problems, 4, "%q", use.problems)
	for _, want := range []string{
		"a.go:7:2: param unreadParam is declared and never read",
		"a.go:12:13: driver.Param literal outside driver.Declare",
		"a.go:16:9: param read by indexing the params map",
		"b.go:11:39: param read by indexing the params map",
	} {
		found := false
		for _, p := range use.problems {
			found = found || strings.Contains(filepath.ToSlash(p), want)
		}
		require.True(t, found, "want %q in %q", want, use.problems)
	}
}
