package rest

import (
	"fmt"
	"net/http"

	"github.com/jcmturner/gokrb5/v8/client"
	"github.com/jcmturner/gokrb5/v8/spnego"
)

// Authenticator adds credentials to a request before it is sent, and again
// before every retry (SPNEGO tokens must not be replayed).
type Authenticator interface {
	Authenticate(req *http.Request) error
}

// AuthenticatorFunc adapts a function to Authenticator.
type AuthenticatorFunc func(req *http.Request) error

// Authenticate implements Authenticator.
func (f AuthenticatorFunc) Authenticate(req *http.Request) error { return f(req) }

// SPNEGO authenticates with Kerberos (Authorization: Negotiate) using a
// logged-in gokrb5 client. spn is the RM's HTTP principal, e.g.
// "HTTP/rm.example.com"; empty derives "HTTP/<host of the URL>" per request,
// which suits HA where each RM has its own principal.
func SPNEGO(cl *client.Client, spn string) Authenticator {
	return &spnegoAuth{cl: cl, spn: spn}
}

type spnegoAuth struct {
	cl  *client.Client
	spn string
}

var _ Authenticator = (*spnegoAuth)(nil)

func (a *spnegoAuth) Authenticate(req *http.Request) error {
	if err := spnego.SetSPNEGOHeader(a.cl, req, a.spn); err != nil {
		return fmt.Errorf("spnego %s: %w", req.URL.Host, err)
	}
	return nil
}

// String never shows credentials.
func (a *spnegoAuth) String() string { return "SPNEGO(" + a.spn + ")" }
