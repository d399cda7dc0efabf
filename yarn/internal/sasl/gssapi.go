package sasl

import (
	"errors"
	"fmt"

	krbclient "github.com/jcmturner/gokrb5/v8/client"
	"github.com/jcmturner/gokrb5/v8/messages"
	"github.com/jcmturner/gokrb5/v8/spnego"
	krbtypes "github.com/jcmturner/gokrb5/v8/types"
)

// GSSAPI is the client side of the Kerberos V5 GSS-API SASL mechanism
// (RFC 4752), as Hadoop's KERBEROS method uses it:
//
//	INITIATE  token = KRB5 AP-REQ for service principal protocol/serverId
//	CHALLENGE token = wrap token from the server: 4 bytes, offered security
//	                  layers (0x01 none, 0x02 integrity, 0x04 privacy:
//	                  hadoop.rpc.protection) and its max buffer (24 bits)
//	RESPONSE  token = our wrap token: the layer chosen, our max buffer
//	SUCCESS
//
// With integrity or privacy, Layer returns the RFC 4121 wrap-token layer
// every later message travels in (AES session keys only).
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

	// AuthOnly refuses integrity and privacy even when offered (they are
	// chosen, strongest first, when the server offers them).
	AuthOnly bool

	key     krbtypes.EncryptionKey
	started bool
	layer   *gssLayer
}

var (
	_ Mechanism = (*GSSAPI)(nil)
	_ Layered   = (*GSSAPI)(nil)
)

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

// Next implements Mechanism: it checks the server's wrap token (the
// security layers it offers and its buffer size) and answers with the
// strongest layer offered (privacy, integrity, then none; none only with
// AuthOnly) and our buffer size, wrapped without confidentiality as RFC 4752
// §3.1 says.
func (g *GSSAPI) Next(challenge []byte) ([]byte, error) {
	if !g.started {
		return nil, fmt.Errorf("%w: challenge before the ticket was sent", ErrKerberos)
	}
	if !gssV2Etype(g.key.KeyType) {
		return nil, fmt.Errorf("%w: session key enctype %d: xres speaks RFC 4121 tokens (AES enctypes) only", ErrKerberos, g.key.KeyType)
	}
	l, err := newGSSLayer(g.key, false, true)
	if err != nil {
		return nil, err
	}
	offer, seq, err := l.unwrapToken(challenge, false)
	if err != nil {
		if errors.Is(err, errWrapChecksum) {
			return nil, fmt.Errorf("%w: %v", ErrServerProof, err)
		}
		return nil, fmt.Errorf("%w: server wrap token: %v", ErrBadChallenge, err)
	}
	if len(offer) != 4 {
		return nil, fmt.Errorf("%w: security layer offer of %d bytes, want 4", ErrBadChallenge, len(offer))
	}
	layers := offer[0]
	serverMax := int(offer[1])<<16 | int(offer[2])<<8 | int(offer[3])
	var choice byte
	switch {
	case !g.AuthOnly && layers&gssLayerPrivacy != 0 && gssCanSeal(g.key.KeyType):
		choice = gssLayerPrivacy
	case !g.AuthOnly && layers&gssLayerIntegrity != 0:
		choice = gssLayerIntegrity
	case layers&gssLayerNone != 0:
		choice = gssLayerNone
	default:
		allowed := "none (0x01), integrity (0x02), privacy (0x04)"
		switch {
		case g.AuthOnly:
			allowed = "none (0x01) only"
		case !gssCanSeal(g.key.KeyType):
			allowed = fmt.Sprintf("none (0x01), integrity (0x02); no privacy with session key enctype %d", g.key.KeyType)
		}
		return nil, fmt.Errorf("%w (server offers GSSAPI security layers %#x, client allows %s)", ErrQOP, layers, allowed)
	}
	reply := []byte{choice, 0, 0, 0} // no layer: max buffer 0
	if choice != gssLayerNone {
		l.conf = choice == gssLayerPrivacy
		l.maxSend = serverMax - l.overhead(l.conf)
		if l.maxSend < 1 {
			return nil, fmt.Errorf("%w: server buffer of %d bytes is too small for a wrap token", ErrBadChallenge, serverMax)
		}
		l.recvSeq, l.recvAny = seq+1, false
		reply = []byte{choice, byte(gssRecvMax >> 16 & 0xff), byte(gssRecvMax >> 8 & 0xff), byte(gssRecvMax & 0xff)}
	}
	resp, err := l.wrapToken(reply, false, l.sendSeq)
	if err != nil {
		return nil, err
	}
	l.sendSeq++
	if choice != gssLayerNone {
		g.layer = l
	}
	return resp, nil
}

// gssRecvMax is the buffer size the client announces (what Java's SASL
// client announces by default); xres reads larger tokens too.
const gssRecvMax = 65536

// Layer implements Layered: nil unless integrity or privacy was chosen.
func (g *GSSAPI) Layer() Layer {
	if g.layer == nil {
		return nil
	}
	return g.layer
}

// Finish implements Mechanism.
func (g *GSSAPI) Finish([]byte) error { return nil }
