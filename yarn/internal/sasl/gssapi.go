package sasl

import (
	"errors"
	"fmt"

	krbclient "github.com/jcmturner/gokrb5/v8/client"
	"github.com/jcmturner/gokrb5/v8/gssapi"
	"github.com/jcmturner/gokrb5/v8/iana/keyusage"
	"github.com/jcmturner/gokrb5/v8/messages"
	"github.com/jcmturner/gokrb5/v8/spnego"
	krbtypes "github.com/jcmturner/gokrb5/v8/types"
)

// GSSAPI is the client side of the Kerberos V5 GSS-API SASL mechanism
// (RFC 4752) without a security layer (qop auth), as Hadoop's KERBEROS
// method uses it:
//
//	INITIATE  token = KRB5 AP-REQ for service principal protocol/serverId
//	CHALLENGE token = wrap token from the server: 4 bytes, offered security
//	                  layers (bit 0: none) and max buffer
//	RESPONSE  token = our wrap token: layer 1 (none), max buffer 0
//	SUCCESS
type GSSAPI struct {
	// Client is a gokrb5 client holding the user's credentials (keytab or
	// ticket cache).
	Client *krbclient.Client
	// ServicePrincipal, when set, replaces the protocol/serverId the server
	// offers, e.g. "rm/rm1.example.com".
	ServicePrincipal string

	// GetTicket gets a service ticket and its session key; nil uses
	// Client.GetServiceTicket. Tests hand in tickets made without a KDC.
	GetTicket func(spn string) (messages.Ticket, krbtypes.EncryptionKey, error)

	key     krbtypes.EncryptionKey
	started bool
}

var _ Mechanism = (*GSSAPI)(nil)

// Method implements Mechanism.
func (g *GSSAPI) Method() string { return "KERBEROS" }

// Mechanism implements Mechanism.
func (g *GSSAPI) Mechanism() string { return "GSSAPI" }

// ErrKerberos wraps failures to get or use a Kerberos ticket.
var ErrKerberos = errors.New("kerberos")

// Start implements Mechanism: it gets a service ticket and returns the
// AP-REQ token.
func (g *GSSAPI) Start(protocol, serverID string, _ []byte) ([]byte, error) {
	if g.Client == nil || g.Client.Credentials == nil {
		return nil, fmt.Errorf("%w: no kerberos client", ErrKerberos)
	}
	spn := g.ServicePrincipal
	if spn == "" {
		if protocol == "" || serverID == "" {
			return nil, fmt.Errorf("%w: server offered no principal (protocol %q, server id %q)", ErrKerberos, protocol, serverID)
		}
		spn = protocol + "/" + serverID
	}
	getTicket := g.GetTicket
	if getTicket == nil {
		getTicket = g.Client.GetServiceTicket
	}
	tkt, key, err := getTicket(spn)
	if err != nil {
		return nil, fmt.Errorf("%w: service ticket for %s: %v", ErrKerberos, spn, err)
	}
	tok, err := spnego.NewNegTokenInitKRB5(g.Client, tkt, key)
	if err != nil {
		return nil, fmt.Errorf("%w: ap-req for %s: %v", ErrKerberos, spn, err)
	}
	g.key = key
	g.started = true
	return tok.MechTokenBytes, nil
}

// Next implements Mechanism: it checks the server's wrap token and
// answers with "no security layer".
func (g *GSSAPI) Next(challenge []byte) ([]byte, error) {
	if !g.started {
		return nil, fmt.Errorf("%w: challenge before the ticket was sent", ErrKerberos)
	}
	var wt gssapi.WrapToken
	if err := wt.Unmarshal(challenge, true); err != nil {
		return nil, fmt.Errorf("%w: server wrap token: %v", ErrBadChallenge, err)
	}
	if ok, err := wt.Verify(g.key, keyusage.GSSAPI_ACCEPTOR_SEAL); !ok {
		return nil, fmt.Errorf("%w: %v", ErrServerProof, err)
	}
	if len(wt.Payload) != 4 {
		return nil, fmt.Errorf("%w: security layer offer of %d bytes, want 4", ErrBadChallenge, len(wt.Payload))
	}
	if wt.Payload[0]&0x01 == 0 {
		return nil, fmt.Errorf("%w (server offers security layers %#x)", ErrQOP, wt.Payload[0])
	}
	resp, err := gssapi.NewInitiatorWrapToken([]byte{0x01, 0, 0, 0}, g.key)
	if err != nil {
		return nil, fmt.Errorf("%w: wrap token: %v", ErrKerberos, err)
	}
	return resp.Marshal()
}

// Finish implements Mechanism.
func (g *GSSAPI) Finish([]byte) error { return nil }
