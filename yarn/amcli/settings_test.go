package amcli

import (
	"go/ast"
	"go/parser"
	"go/token"
	"testing"
)

// TestRunAndSubmitReadSettings guards amplan.Load as the one reader of the AM
// side's settings: in amrun.go and client.go (am run, am submit) only
// workerPlan, which calls amplan.Load, handles a *conf.Config, and nothing
// calls a method on a cfg (the configuration read again for heartbeats,
// fault bounds, the bind address, the AM container…). The node label, tags
// and priority am submit asks for are settings too (amplan.AppSettings).
func TestRunAndSubmitReadSettings(t *testing.T) {
	fset := token.NewFileSet()
	for _, name := range []string{"amrun.go", "client.go"} {
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil || fd.Name.Name == "workerPlan" {
				continue
			}
			ast.Inspect(fd, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.SelectorExpr:
					if x, ok := n.X.(*ast.Ident); ok && x.Name == "conf" && n.Sel.Name == "Config" {
						t.Errorf("%s: %s takes a *conf.Config: give it amplan.Settings (or the part it needs)", fset.Position(n.Pos()), fd.Name.Name)
					}
				case *ast.CallExpr:
					if sel, ok := n.Fun.(*ast.SelectorExpr); ok {
						if x, ok := sel.X.(*ast.Ident); ok && x.Name == "cfg" {
							t.Errorf("%s: %s reads cfg.%s after amplan.Load: read it in amplan.Load", fset.Position(n.Pos()), fd.Name.Name, sel.Sel.Name)
						}
					}
				}
				return true
			})
		}
	}
}
