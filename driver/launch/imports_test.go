package launch

import (
	"debug/elf"
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
// Spark), and driver/launch/launchcmd, the launcher's own command line
// (subcommands, bridge names, forwarded signals) split out with no
// in-module import so that the command's package initialisation can
// begin a launch's signal subscription. A vendor switch that comes back
// (driver/gpu, driver/amd, driver/pci, driver/plugin, or all of them
// through driver/builtin) fails here.
func TestLauncherNamesNoDriver(t *testing.T) {
	const module = "github.com/xres/xres/"
	allowed := map[string]bool{
		"conf": true, "resources": true, "resources/contract": true,
		"driver": true, "driver/coord": true,
		"conf/suggest": true, "resources/spark": true, "resources/params": true,
		"driver/launch/launchcmd": true,
	}
	got := map[string]bool{}
	for f, imports := range nonTestImports(t, "*.go") {
		for _, p := range imports {
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
	require.LessOrEqual(t, len(names), 9, "in-module imports: %v", names)
}

// TestLauncherBuildsNoMapAtInit: no package of xres that the launcher links
// builds a map literal in its package initialisation, which every launch
// runs before its first line, whether it uses the map or not (coord's
// wrapper and shell sets, conf's duration and memory units and Hadoop
// defaults did: switches and arrays now, laid out by the linker). The
// compiler names such a builder <package>.map.init.<n>; one in the built
// launcher's symbol table fails here, naming it.
func TestLauncherBuildsNoMapAtInit(t *testing.T) {
	bin := launcherBinary(t)
	f, err := elf.Open(bin)
	require.NoError(t, err)
	defer f.Close()
	syms, err := f.Symbols()
	require.NoError(t, err, "the launcher is built with its symbol table")
	var builders []string
	for _, s := range syms {
		if strings.HasPrefix(s.Name, "github.com/xres/xres/") && strings.Contains(s.Name, ".map.init.") {
			builders = append(builders, s.Name)
		}
	}
	require.Empty(t, builders, "package-level map literals the launcher builds at every start: make them switches, arrays or lazy (sync.OnceValue)")
}

// TestLaunchCmdImportsNothingInModule: launchcmd is used while the
// launcher's packages are still being initialised (earlysig); an
// in-module import would initialise it after them.
func TestLaunchCmdImportsNothingInModule(t *testing.T) {
	files := nonTestImports(t, "launchcmd/*.go")
	require.NotEmpty(t, files)
	for f, imports := range files {
		for _, p := range imports {
			require.False(t, strings.Contains(strings.Split(p, "/")[0], "."), "%s imports %s", f, p)
		}
	}
}

// nonTestImports returns the import paths of each non-test Go file glob
// matches.
func nonTestImports(t *testing.T, glob string) map[string][]string {
	t.Helper()
	files, err := filepath.Glob(glob)
	require.NoError(t, err)
	out := map[string][]string{}
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
			out[f] = append(out[f], p)
		}
	}
	return out
}
