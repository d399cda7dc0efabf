// Package nmspnego is the body of the xres-spnego helper: it makes the
// SPNEGO (Kerberos) token with which container-launcher asks a
// NodeManager's REST that answered 401 Negotiate. Kerberos
// (github.com/jcmturner/gokrb5, and encoding/gob through it) is linked
// here, not into the launcher, whose every start would initialise it
// (BenchmarkLauncherOverhead): the launcher runs this helper, shipped
// beside it as xres-nvml is, only when a NodeManager asks for SPNEGO.
//
//	xres-spnego HTTP/<host>
//
// reads the ticket cache (KRB5CCNAME, else /tmp/krb5cc_<uid>) and the
// Kerberos configuration (KRB5_CONFIG, else /etc/krb5.conf) and prints
// the value of the Authorization header, "Negotiate <token>", on standard
// output; nothing else is printed there. Exit codes: 0 printed; 2 usage;
// 3 no Kerberos credentials (no ticket cache, an unreadable one or an
// unreadable configuration); 1 anything else (the token could not be
// made). The reason is one line on standard error, which never holds the
// token.
package nmspnego

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/jcmturner/gokrb5/v8/client"
	"github.com/jcmturner/gokrb5/v8/config"
	"github.com/jcmturner/gokrb5/v8/credentials"
	"github.com/jcmturner/gokrb5/v8/spnego"
)

// Name is the helper's file name: container-launcher looks for it beside
// itself, then on PATH.
const Name = "xres-spnego"

// Exit codes besides 0.
const (
	ExitFailed        = 1
	ExitUsage         = 2
	ExitNoCredentials = 3
)

// ErrNoCredentials: there is no usable ticket cache or configuration.
var ErrNoCredentials = errors.New("no Kerberos credentials")

// Main runs the helper with args (without the program name); getenv
// reads the environment (os.Getenv).
func Main(args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	if len(args) != 1 || !strings.Contains(args[0], "/") || strings.HasPrefix(args[0], "-") {
		fmt.Fprintf(stderr, "%s: usage: %s HTTP/<host>\n", Name, Name)
		return ExitUsage
	}
	h, err := Header(args[0], getenv)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", Name, err)
		if errors.Is(err, ErrNoCredentials) {
			return ExitNoCredentials
		}
		return ExitFailed
	}
	if _, err := fmt.Fprintln(stdout, h); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", Name, err)
		return ExitFailed
	}
	return 0
}

// Header returns the Authorization header's value for service principal
// spn (HTTP/<host>) from the ticket cache and krb5.conf getenv names.
func Header(spn string, getenv func(string) string) (string, error) {
	cc := strings.TrimPrefix(getenv("KRB5CCNAME"), "FILE:")
	if cc == "" {
		cc = filepath.Join(os.TempDir(), "krb5cc_"+strconv.Itoa(os.Getuid()))
	}
	if _, err := os.Stat(cc); err != nil {
		return "", fmt.Errorf("%w: no ticket cache %s: %v", ErrNoCredentials, cc, err)
	}
	confPath := getenv("KRB5_CONFIG")
	if confPath == "" {
		confPath = "/etc/krb5.conf"
	}
	kc, err := config.Load(confPath)
	if err != nil {
		return "", fmt.Errorf("%w: krb5 configuration %s: %v", ErrNoCredentials, confPath, err)
	}
	ccache, err := credentials.LoadCCache(cc)
	if err != nil {
		return "", fmt.Errorf("%w: ticket cache %s: %v", ErrNoCredentials, cc, err)
	}
	cl, err := client.NewFromCCache(ccache, kc, client.DisablePAFXFAST(true))
	if err != nil {
		return "", fmt.Errorf("%w: ticket cache %s: %v", ErrNoCredentials, cc, err)
	}
	req, err := http.NewRequest(http.MethodGet, "http://"+strings.TrimPrefix(spn, "HTTP/")+"/", nil)
	if err != nil {
		return "", fmt.Errorf("service %s: %w", spn, err)
	}
	if err := spnego.SetSPNEGOHeader(cl, req, spn); err != nil {
		return "", fmt.Errorf("SPNEGO token for %s: %w", spn, err)
	}
	h := req.Header.Get("Authorization")
	if !strings.HasPrefix(h, "Negotiate ") {
		return "", fmt.Errorf("SPNEGO token for %s: no Negotiate header made", spn)
	}
	return h, nil
}
