package launch

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// launcherDeps lists the packages the launcher binary links.
func launcherDeps(t *testing.T) []string {
	t.Helper()
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	out, err := exec.Command(goBin, "list", "-deps", "../../cmd/container-launcher").CombinedOutput()
	require.NoError(t, err, "%s", out)
	return strings.Fields(string(out))
}

// TestLauncherStartupLinksNoCostlyInit: every package the launcher links
// is initialised before it does anything, on every launch and probe.
// These are kept out (BenchmarkLauncherOverhead: probe against an empty Go
// program): google.golang.org/protobuf's internal/detrand reads the
// executable at init (resources/contract reads the token file's protobuf
// form itself); Kerberos (github.com/jcmturner/..., whose packages build
// tables at init) and encoding/gob (0.2 ms of init, registering its
// types), which it pulls in, and TLS (crypto/tls, crypto/x509 and the FIPS
// tables behind them: 0.06-0.08 ms): a NodeManager on HTTPS or asking for
// SPNEGO is asked through the xres-nmrest helper (driver/gpu/nmhelper). net/http (its
// client, HTTP/2, compression and their initialisation: 0.1 ms of every
// start) is not linked either: the launcher's GETs and POSTs are one
// request each, written and read by hand (driver/launch's exchange,
// driver/gpu's readNMResponse).
func TestLauncherStartupLinksNoCostlyInit(t *testing.T) {
	for _, p := range launcherDeps(t) {
		require.False(t, strings.HasPrefix(p, "google.golang.org/protobuf/"), "the launcher links %s", p)
		require.False(t, strings.HasPrefix(p, "github.com/jcmturner/"), "the launcher links %s: Kerberos belongs in the xres-nmrest helper", p)
		require.NotEqual(t, "encoding/gob", p, "the launcher links encoding/gob")
		require.NotEqual(t, "crypto/tls", p, "the launcher links crypto/tls: HTTPS belongs in the xres-nmrest helper")
		require.NotEqual(t, "crypto/x509", p, "the launcher links crypto/x509: HTTPS belongs in the xres-nmrest helper")
		require.NotEqual(t, "net/http", p, "the launcher links net/http")
	}
}
