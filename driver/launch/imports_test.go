package launch

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLauncherNamesNoDriver: the launcher reaches drivers only through the
// driver contract (package driver) and the registry cmd/container-launcher
// gives it (assembled there from driver/builtin); besides it it imports what is not a driver: the
// configuration, the resource specs, what the launcher hands on
// (resources/contract: the worker's info file, the AM's device report) and
// the host coordination library
// (driver/coord: the state file, its lock and process groups, which
// registers no factory), resources/params (the built-in drivers' param
// checks and xres.rescale.*, shared with am, which links no driver),
// conf/suggest (the command line's
// did-you-mean) and resources/spark (what the discovery bridge prints for
// Spark). A vendor switch that comes back (driver/gpu,
// driver/amd, driver/pci, driver/plugin, or all of them through
// driver/builtin) fails here.
func TestLauncherNamesNoDriver(t *testing.T) {
	const module = "github.com/xres/xres/"
	allowed := map[string]bool{
		"conf": true, "resources": true, "resources/contract": true,
		"driver": true, "driver/coord": true,
		"conf/suggest": true, "resources/spark": true, "resources/params": true,
	}
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	got := map[string]bool{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		require.NoError(t, err)
		ast, err := parser.ParseFile(token.NewFileSet(), f, src, parser.ImportsOnly)
		require.NoError(t, err)
		for _, im := range ast.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			if rel, ok := strings.CutPrefix(p, module); ok {
				require.True(t, allowed[rel], "%s imports %s: reach the driver through the contract instead", f, p)
				got[rel] = true
			}
		}
	}
	var names []string
	for n := range got {
		names = append(names, n)
	}
	sort.Strings(names)
	require.LessOrEqual(t, len(names), 8, "in-module imports: %v", names)
}

// TestOnlyGPUAndAMDDriversNameVendorVariables: what selects a worker's
// devices for a vendor's runtime (CUDA_VISIBLE_DEVICES,
// ROCR_VISIBLE_DEVICES) is decided by the driver that owns the vendor
// (driver.VendorReporter), so no Go file of the module outside driver/gpu
// and driver/amd spells those variables (tests aside). A launcher or a
// generic package that tests or sets one fails here.
func TestOnlyGPUAndAMDDriversNameVendorVariables(t *testing.T) {
	root := filepath.Join("..", "..")
	owners := []string{filepath.Join(root, "driver", "gpu"), filepath.Join(root, "driver", "amd")}
	vars := []string{"CUDA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES"}
	var seen int
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); p != root && (strings.HasPrefix(n, ".") || n == "testdata" || n == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		seen++
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, v := range vars {
			if !strings.Contains(string(src), v) {
				continue
			}
			owned := false
			for _, o := range owners {
				if filepath.Dir(p) == o {
					owned = true
				}
			}
			require.True(t, owned, "%s spells %s: only the driver that owns the vendor (driver/gpu, driver/amd) decides its variables", p, v)
		}
		return nil
	})
	require.NoError(t, err)
	require.Greater(t, seen, 100, "the walk found the module's Go files")
}
