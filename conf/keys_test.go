package conf

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// confImport is the import path of this package, as other packages name it.
const confImport = "github.com/xres/xres/conf"

// keyUse is what checkKeyUse found in a source tree.
type keyUse struct {
	declared map[string]string // var name -> key of every Register'ed package-level var of conf
	problems []string          // what is wrong, file:line first
}

// checkKeyUse reads the non-test Go files of the module at root (testdata
// left out) and reports every option conf declares with Register that no
// code reads (no use of the var outside its declaration: conf.X in another
// package, X in conf), and every string literal outside a Register call
// that spells a declared key: the key itself, an instance of a pattern
// (external-resource.gpu.amount), or a dotted fixed part of a pattern
// (containerized.taskmanager.env., yarn.config-key). Such a spelling is a
// second copy of the declaration: read the key through conf.X.Key,
// Option.For or a typed getter instead.
func checkKeyUse(t *testing.T, root string) keyUse {
	t.Helper()
	fset := token.NewFileSet()
	type file struct {
		path string
		f    *ast.File
		conf bool // package conf itself
	}
	var files []file
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != root && (n == "testdata" || strings.HasPrefix(n, ".") || n == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		files = append(files, file{path: rel, f: f, conf: filepath.ToSlash(filepath.Dir(rel)) == "conf" && f.Name.Name == "conf"})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	use := keyUse{declared: map[string]string{}}
	declIdent := map[*ast.Ident]bool{}
	inRegister := map[*ast.BasicLit]bool{}
	var opts []Option
	for _, fl := range files {
		if !fl.conf {
			continue
		}
		for _, gd := range fl.f.Decls {
			g, ok := gd.(*ast.GenDecl)
			if !ok || g.Tok != token.VAR {
				continue
			}
			for _, spec := range g.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, v := range vs.Values {
					c, ok := v.(*ast.CallExpr)
					if !ok || i >= len(vs.Names) {
						continue
					}
					if id, ok := c.Fun.(*ast.Ident); !ok || id.Name != "Register" {
						continue
					}
					key := ""
					ast.Inspect(c, func(n ast.Node) bool {
						switch n := n.(type) {
						case *ast.BasicLit:
							inRegister[n] = true
						case *ast.KeyValueExpr:
							if id, ok := n.Key.(*ast.Ident); ok && id.Name == "Key" {
								if lit, ok := n.Value.(*ast.BasicLit); ok {
									key, _ = strconv.Unquote(lit.Value)
								}
							}
						}
						return true
					})
					if key == "" {
						t.Fatalf("%s: Register without a literal Key", fset.Position(c.Pos()))
					}
					use.declared[vs.Names[i].Name] = key
					declIdent[vs.Names[i]] = true
					opts = append(opts, Option{Key: key})
				}
			}
		}
	}

	read := map[string]bool{}
	for _, fl := range files {
		confName := ""
		for _, im := range fl.f.Imports {
			if p, _ := strconv.Unquote(im.Path.Value); p == confImport {
				confName = "conf"
				if im.Name != nil {
					confName = im.Name.Name
				}
			}
		}
		ast.Inspect(fl.f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.Ident:
				if fl.conf && !declIdent[n] {
					if _, ok := use.declared[n.Name]; ok {
						read[n.Name] = true
					}
				}
			case *ast.SelectorExpr:
				if x, ok := n.X.(*ast.Ident); ok && confName != "" && x.Name == confName {
					read[n.Sel.Name] = true
				}
			case *ast.BasicLit:
				if n.Kind != token.STRING || inRegister[n] {
					return true
				}
				s, err := strconv.Unquote(n.Value)
				if err != nil {
					return true
				}
				if key, ok := spellsKey(opts, s); ok {
					use.problems = append(use.problems, fset.Position(n.Pos()).String()+": "+strconv.Quote(s)+
						" spells declared key "+key+" (read it through conf's declaration)")
				}
			}
			return true
		})
	}
	for name, key := range use.declared {
		if !read[name] {
			use.problems = append(use.problems, "conf."+name+" ("+key+") is declared but read by no code")
		}
	}
	sort.Strings(use.problems)
	return use
}

// spellsKey reports whether s spells one of the options' keys, an
// instance of a pattern, or a dotted fixed part of a pattern.
func spellsKey(opts []Option, s string) (string, bool) {
	if s == "" || strings.ContainsAny(s, " \t\n") {
		return "", false
	}
	for _, o := range opts {
		if o.Matches(s) {
			return o.Key, true
		}
		spans := placeholders(o.Key)
		if len(spans) == 0 {
			continue
		}
		for _, part := range fixedParts(o.Key, spans) {
			p := strings.Trim(part, ".")
			if strings.Contains(p, ".") && strings.Trim(s, ".") == p {
				return o.Key, true
			}
		}
	}
	return "", false
}

// TestDeclaredKeysReadOnce guards the declarations of conf: every option it
// declares is read by some code, and no non-test code outside the
// declarations spells a declared key as a string literal.
func TestDeclaredKeysReadOnce(t *testing.T) {
	use := checkKeyUse(t, "..")
	if len(use.declared) < 40 {
		t.Fatalf("found %d declared options under .., want conf's ~42: is the walk reading the module?", len(use.declared))
	}
	t.Logf("%d options declared with Register", len(use.declared))
	for _, p := range use.problems {
		t.Error(p)
	}
}

// TestSpellsKey: the literal forms checkKeyUse reports, and look-alikes it
// leaves alone.
func TestSpellsKey(t *testing.T) {
	opts := []Option{{Key: "yarn.heartbeat.interval"}, {Key: "external-resource.<name>.yarn.config-key"},
		{Key: "containerized.taskmanager.env.<VAR>"}, {Key: "external-resource.<name>.amount"}}
	for s, want := range map[string]bool{
		"yarn.heartbeat.interval":               true,
		"external-resource.gpu.yarn.config-key": true,
		"yarn.config-key":                       true,
		"containerized.taskmanager.env.":        true,
		"containerized.taskmanager.env.X":       true,
		"amount":                                false, // one word: too common to be a spelling
		"external-resource.":                    false,
		"yarn.heartbeat.interval is 5 s":        false,
		"yarn.resourcemanager.principal":        false,
	} {
		_, got := spellsKey(opts, s)
		if got != want {
			t.Errorf("spellsKey(%q) = %v, want %v", s, got, want)
		}
	}
}
