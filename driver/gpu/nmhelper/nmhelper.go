// Package nmhelper is the body of the xres-nmrest helper, which does for
// container-launcher what it does not link: a NodeManager's REST over
// HTTPS (crypto/tls and x509) and SPNEGO (Kerberos: gokrb5 and
// encoding/gob). Every launch would initialise those packages whether it
// used them or not (BenchmarkLauncherOverhead); the launcher runs this
// helper, shipped beside it as xres-nvml is, only where its NodeManager
// speaks HTTPS or asks for SPNEGO.
//
//	xres-nmrest get [--ca-file PEM] [--timeout D] https://<host>:<port>/<path>
//
// GETs the URL over TLS (the system's CAs and those in PEM trusted),
// answering a 401 Negotiate challenge with a SPNEGO token from the
// container's ticket cache, and prints "HTTP <status>" on its first line
// and the answer's body after it (at most 4 MiB).
//
//	xres-nmrest token HTTP/<host>
//
// prints the value of the Authorization header, "Negotiate <token>", for a
// plain HTTP NodeManager that asked for one.
//
// Kerberos reads the ticket cache (KRB5CCNAME, else /tmp/krb5cc_<uid>) and
// the configuration (KRB5_CONFIG, else /etc/krb5.conf). Exit codes: 0
// answered or printed; 1 anything else; 2 usage; 3 no Kerberos
// credentials (no ticket cache, an unreadable one or an unreadable
// configuration); 4 the port does not speak TLS; 5 the server's
// certificate is signed by an authority not trusted. The reason is one
// line on standard error, which never holds a token.
package nmhelper

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jcmturner/gokrb5/v8/client"
	"github.com/jcmturner/gokrb5/v8/config"
	"github.com/jcmturner/gokrb5/v8/credentials"
	"github.com/jcmturner/gokrb5/v8/spnego"
)

// Name is the helper's file name: container-launcher looks for it beside
// itself, then on PATH.
const Name = "xres-nmrest"

// Exit codes besides 0.
const (
	ExitFailed        = 1
	ExitUsage         = 2
	ExitNoCredentials = 3
	ExitNotTLS        = 4
	ExitUnknownCA     = 5
)

// MaxBody bounds the body get prints.
const MaxBody = 4 << 20

var (
	// ErrNoCredentials: there is no usable ticket cache or configuration.
	ErrNoCredentials = errors.New("no Kerberos credentials")
	// ErrNotTLS: the port answered, but not in TLS (a plain HTTP port).
	ErrNotTLS = errors.New("the port does not speak TLS")
	// ErrUnknownCA: the server's certificate is signed by an authority
	// neither the system nor --ca-file trusts.
	ErrUnknownCA = errors.New("certificate signed by an unknown authority")
)

const usage = "usage: " + Name + " get [--ca-file PEM] [--timeout D] https://<host>:<port>/<path> | " + Name + " token HTTP/<host>"

// Main runs the helper with args (without the program name); getenv
// reads the environment (os.Getenv).
func Main(args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	fail := func(err error) int {
		fmt.Fprintf(stderr, "%s: %v\n", Name, err)
		switch {
		case errors.Is(err, ErrNoCredentials):
			return ExitNoCredentials
		case errors.Is(err, ErrNotTLS):
			return ExitNotTLS
		case errors.Is(err, ErrUnknownCA):
			return ExitUnknownCA
		}
		return ExitFailed
	}
	if len(args) == 0 {
		fmt.Fprintf(stderr, "%s: %s\n", Name, usage)
		return ExitUsage
	}
	switch args[0] {
	case "token":
		if len(args) != 2 || !strings.Contains(args[1], "/") || strings.HasPrefix(args[1], "-") {
			fmt.Fprintf(stderr, "%s: %s\n", Name, usage)
			return ExitUsage
		}
		h, err := Header(args[1], getenv)
		if err != nil {
			return fail(err)
		}
		if _, err := fmt.Fprintln(stdout, h); err != nil {
			return fail(err)
		}
		return 0
	case "get":
		fs := flag.NewFlagSet(Name+" get", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		ca := fs.String("ca-file", "", "PEM bundle trusted beside the system's CAs")
		timeout := fs.Duration("timeout", 10*time.Second, "bound on the whole request")
		if err := fs.Parse(args[1:]); err != nil || fs.NArg() != 1 || *timeout <= 0 {
			fmt.Fprintf(stderr, "%s: %s\n", Name, usage)
			return ExitUsage
		}
		ctx, cancel := context.WithTimeout(context.Background(), *timeout)
		defer cancel()
		status, body, err := Get(ctx, fs.Arg(0), *ca, getenv)
		if err != nil {
			return fail(err)
		}
		if _, err := fmt.Fprintf(stdout, "HTTP %d\n%s", status, body); err != nil {
			return fail(err)
		}
		return 0
	}
	fmt.Fprintf(stderr, "%s: %s\n", Name, usage)
	return ExitUsage
}

// Get asks rawURL (https) once over a fresh connection, and again with a
// SPNEGO token where the server answers 401 Negotiate; it returns the
// answer's status and body.
func Get(ctx context.Context, rawURL, caFile string, getenv func(string) string) (int, []byte, error) {
	u, err := url.Parse(rawURL)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return 0, nil, fmt.Errorf("not an https URL: %q", rawURL)
	}
	cfg := &tls.Config{ServerName: u.Hostname(), MinVersion: tls.VersionTLS12}
	if caFile != "" {
		pool, err := x509.SystemCertPool()
		if err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return 0, nil, fmt.Errorf("--ca-file: %w", err)
		}
		if !pool.AppendCertsFromPEM(pem) {
			return 0, nil, fmt.Errorf("--ca-file %s: no PEM certificate in it", caFile)
		}
		cfg.RootCAs = pool
	}
	resp, err := getOnce(ctx, u, cfg, "")
	if err != nil {
		return 0, nil, err
	}
	if resp.status == http.StatusUnauthorized && resp.negotiate {
		auth, err := Header("HTTP/"+u.Hostname(), getenv)
		if err != nil {
			return 0, nil, fmt.Errorf("the NodeManager requires SPNEGO (Kerberos) authentication: %w", err)
		}
		if resp, err = getOnce(ctx, u, cfg, auth); err != nil {
			return 0, nil, err
		}
	}
	return resp.status, resp.body, nil
}

type answer struct {
	status    int
	negotiate bool
	body      []byte
}

// getOnce is one GET with auth ("" for none) as its Authorization.
func getOnce(ctx context.Context, u *url.URL, cfg *tls.Config, auth string) (answer, error) {
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), "443")
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return answer{}, err
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	tc := tls.Client(conn, cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		var rh tls.RecordHeaderError
		var ua x509.UnknownAuthorityError
		switch {
		case errors.As(err, &rh):
			return answer{}, fmt.Errorf("%w: %v", ErrNotTLS, err)
		case errors.As(err, &ua):
			return answer{}, fmt.Errorf("%w: %v", ErrUnknownCA, err)
		}
		return answer{}, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return answer{}, err
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "xres-container-launcher")
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	req.Close = true
	if err := req.Write(tc); err != nil {
		return answer{}, err
	}
	resp, err := http.ReadResponse(bufio.NewReader(tc), req)
	if err != nil {
		return answer{}, fmt.Errorf("read the answer: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxBody+1))
	if err != nil {
		return answer{}, fmt.Errorf("read the answer: %w", err)
	}
	if len(body) > MaxBody {
		return answer{}, fmt.Errorf("the answer is longer than %d bytes", MaxBody)
	}
	a := answer{status: resp.StatusCode, body: body}
	for _, v := range resp.Header.Values("WWW-Authenticate") {
		if f := strings.Fields(v); len(f) > 0 && strings.EqualFold(f[0], "Negotiate") {
			a.negotiate = true
		}
	}
	return a, nil
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
