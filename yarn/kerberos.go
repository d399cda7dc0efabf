package yarn

import (
	"errors"
	"fmt"
	"net"
	"strings"

	krbclient "github.com/jcmturner/gokrb5/v8/client"
	krbconfig "github.com/jcmturner/gokrb5/v8/config"
	"github.com/jcmturner/gokrb5/v8/credentials"
	"github.com/jcmturner/gokrb5/v8/keytab"
	"github.com/jcmturner/gokrb5/v8/messages"
	krbtypes "github.com/jcmturner/gokrb5/v8/types"

	"github.com/xres/xres/yarn/internal/sasl"
)

// ErrNoCredentials marks a Kerberized cluster and a client with neither a
// keytab login nor a usable ticket cache (or a call that needs a Kerberos
// login made without one).
var ErrNoCredentials = errors.New("no kerberos credentials")

// Kerberos configures KERBEROS (GSSAPI) authentication to the
// ResourceManager of a secure cluster. Build it with NewKerberosFromKeytab
// or NewKerberosFromCCache.
type Kerberos struct {
	// Client holds the user's Kerberos credentials.
	Client *krbclient.Client
	// ServicePrincipal is the RM's principal (yarn.resourcemanager.principal,
	// e.g. "rm/_HOST@EXAMPLE.COM"; _HOST becomes the RM's host name). ""
	// uses the principal the server offers during negotiation.
	ServicePrincipal string

	// getTicket replaces the KDC exchange in tests.
	getTicket func(spn string) (messages.Ticket, krbtypes.EncryptionKey, error)
}

// NewKerberosFromKeytab logs in as principal (user@REALM) with a keytab,
// using the Kerberos configuration krb5Conf (e.g. /etc/krb5.conf).
func NewKerberosFromKeytab(krb5Conf, keytabPath, principal string) (*Kerberos, error) {
	cfg, err := krbconfig.Load(krb5Conf)
	if err != nil {
		return nil, fmt.Errorf("kerberos: read %s: %w", krb5Conf, err)
	}
	kt, err := keytab.Load(keytabPath)
	if err != nil {
		return nil, fmt.Errorf("kerberos: read keytab %s: %w", keytabPath, err)
	}
	user, realm, ok := strings.Cut(principal, "@")
	if !ok || user == "" || realm == "" {
		return nil, fmt.Errorf("kerberos: principal %q: want user@REALM", principal)
	}
	cl := krbclient.NewWithKeytab(user, realm, kt, cfg, krbclient.DisablePAFXFAST(true))
	if err := cl.Login(); err != nil {
		return nil, fmt.Errorf("kerberos: login as %s with keytab %s: %w", principal, keytabPath, err)
	}
	return &Kerberos{Client: cl}, nil
}

// NewKerberosFromCCache uses the tickets of a credential cache (as
// written by kinit; KRB5CCNAME names it).
func NewKerberosFromCCache(krb5Conf, ccachePath string) (*Kerberos, error) {
	cfg, err := krbconfig.Load(krb5Conf)
	if err != nil {
		return nil, fmt.Errorf("kerberos: read %s: %w", krb5Conf, err)
	}
	cc, err := credentials.LoadCCache(strings.TrimPrefix(ccachePath, "FILE:"))
	if err != nil {
		return nil, fmt.Errorf("kerberos: read ticket cache %s: %w", ccachePath, err)
	}
	cl, err := krbclient.NewFromCCache(cc, cfg, krbclient.DisablePAFXFAST(true))
	if err != nil {
		return nil, fmt.Errorf("kerberos: ticket cache %s: %w", ccachePath, err)
	}
	return &Kerberos{Client: cl}, nil
}

// principal is user@REALM, the effective user Hadoop expects in the
// connection context.
func (k *Kerberos) principal() string {
	if k.Client == nil || k.Client.Credentials == nil {
		return ""
	}
	return k.Client.Credentials.UserName() + "@" + k.Client.Credentials.Realm()
}

// servicePrincipal resolves ServicePrincipal for the server at addr:
// _HOST is replaced and the realm dropped (gokrb5 finds it through
// domain_realm).
func (k *Kerberos) servicePrincipal(addr string) string {
	if k.ServicePrincipal == "" {
		return ""
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	spn, _, _ := strings.Cut(k.ServicePrincipal, "@")
	return strings.ReplaceAll(spn, "_HOST", strings.ToLower(host))
}

func (k *Kerberos) mechanism(addr string) (sasl.Mechanism, error) {
	return &sasl.GSSAPI{Client: k.Client, ServicePrincipal: k.servicePrincipal(addr), GetTicket: k.getTicket}, nil
}
