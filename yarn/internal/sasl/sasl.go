package sasl

import (
	"errors"
)

// Mechanism is the client side of one SASL mechanism. Hadoop names each by
// a method (TOKEN, KERBEROS) and a SASL mechanism (DIGEST-MD5, GSSAPI).
type Mechanism interface {
	// Method is Hadoop's AuthMethod name: TOKEN or KERBEROS.
	Method() string
	// Mechanism is the SASL mechanism name: DIGEST-MD5 or GSSAPI.
	Mechanism() string
	// Start begins the exchange for the server entry the client picked.
	// challenge is the server's first challenge when it sent one with its
	// offer (Hadoop does this for TOKEN), else nil. The result is the
	// initial response, possibly empty.
	Start(protocol, serverID string, challenge []byte) ([]byte, error)
	// Next answers one server challenge.
	Next(challenge []byte) ([]byte, error)
	// Finish checks the data the server sent with SUCCESS (may be empty).
	Finish(data []byte) error
}

// ErrQOP means the server demands a SASL quality of protection
// (hadoop.rpc.protection) this client cannot provide: a DIGEST-MD5 cipher or
// qop it lacks, a Kerberos session key without RFC 4121 wrap tokens, or
// integrity/privacy when the client was limited to authentication.
var ErrQOP = errors.New("sasl: the server demands a quality of protection (hadoop.rpc.protection) this client cannot provide")

// ErrBadChallenge marks a challenge that does not parse or lacks a
// required directive.
var ErrBadChallenge = errors.New("sasl: malformed challenge")

// ErrServerProof means the server's final proof (rspauth) did not verify:
// the server does not know the token's password.
var ErrServerProof = errors.New("sasl: server proof does not verify")
