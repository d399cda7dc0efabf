package sasl

import (
	"crypto/md5"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// DigestMD5 is the client side of DIGEST-MD5 (RFC 2831) with qop=auth, as
// Hadoop's TOKEN method uses it: the username is base64 of the token
// identifier and the password base64 of the token password (see
// TokenCredentials).
type DigestMD5 struct {
	Username string
	Password string
	// CNonce makes the client nonce; nil uses 16 random bytes in base64.
	// Tests pin it to reproduce RFC 2831's example.
	CNonce func() (string, error)

	uri       string
	responded bool
	wantProof string
}

var _ Mechanism = (*DigestMD5)(nil)

// TokenCredentials returns the DIGEST-MD5 username and password Hadoop
// derives from a token: base64 (standard alphabet, padded) of the
// identifier and of the password.
func TokenCredentials(identifier, password []byte) (username, pass string) {
	return base64.StdEncoding.EncodeToString(identifier), base64.StdEncoding.EncodeToString(password)
}

// Method implements Mechanism.
func (m *DigestMD5) Method() string { return "TOKEN" }

// Mechanism implements Mechanism.
func (m *DigestMD5) Mechanism() string { return "DIGEST-MD5" }

// String never shows the password.
func (m *DigestMD5) String() string { return "DIGEST-MD5(password redacted)" }

// Start implements Mechanism. The digest-uri is protocol/serverID, which is
// "/default" for Hadoop tokens.
func (m *DigestMD5) Start(protocol, serverID string, challenge []byte) ([]byte, error) {
	m.uri = protocol + "/" + serverID
	if len(challenge) == 0 {
		return []byte{}, nil
	}
	return m.Next(challenge)
}

// Next implements Mechanism: the first challenge gets the digest response;
// a later one must be the server's rspauth proof.
func (m *DigestMD5) Next(challenge []byte) ([]byte, error) {
	d, err := ParseDirectives(challenge)
	if err != nil {
		return nil, err
	}
	if m.responded {
		if err := m.checkProof(d); err != nil {
			return nil, err
		}
		return []byte{}, nil
	}
	nonce := d.Get("nonce")
	if nonce == "" {
		return nil, fmt.Errorf("%w: no nonce", ErrBadChallenge)
	}
	if alg := d.Get("algorithm"); !strings.EqualFold(alg, "md5-sess") {
		return nil, fmt.Errorf("%w: algorithm %q, want md5-sess", ErrBadChallenge, alg)
	}
	if !offersAuth(d) {
		return nil, fmt.Errorf("%w (server offers qop %q)", ErrQOP, d.Get("qop"))
	}
	cnonceFn := m.CNonce
	if cnonceFn == nil {
		cnonceFn = randomNonce
	}
	cnonce, err := cnonceFn()
	if err != nil {
		return nil, fmt.Errorf("sasl: make cnonce: %w", err)
	}
	realm := d.Get("realm")
	const nc = "00000001"
	resp, proof := digestResponse(m.Username, realm, m.Password, nonce, cnonce, nc, m.uri)
	m.wantProof = proof
	m.responded = true

	var b strings.Builder
	if strings.EqualFold(d.Get("charset"), "utf-8") {
		b.WriteString("charset=utf-8,")
	}
	fmt.Fprintf(&b, `username=%s,realm=%s,nonce=%s,nc=%s,cnonce=%s,digest-uri=%s,maxbuf=65536,response=%s,qop=auth`,
		quote(m.Username), quote(realm), quote(nonce), nc, quote(cnonce), quote(m.uri), resp)
	return []byte(b.String()), nil
}

// Finish implements Mechanism: it checks rspauth when the server sent it.
func (m *DigestMD5) Finish(data []byte) error {
	if len(data) == 0 {
		return nil
	}
	d, err := ParseDirectives(data)
	if err != nil {
		return err
	}
	return m.checkProof(d)
}

func (m *DigestMD5) checkProof(d Directives) error {
	got := d.Get("rspauth")
	if got == "" {
		return fmt.Errorf("%w: no rspauth", ErrBadChallenge)
	}
	if subtle.ConstantTimeCompare([]byte(got), []byte(m.wantProof)) != 1 {
		return ErrServerProof
	}
	return nil
}

func offersAuth(d Directives) bool {
	q := d["qop"]
	if len(q) == 0 {
		return true // RFC 2831: absent qop means auth
	}
	for _, v := range q {
		for _, opt := range strings.Split(v, ",") {
			if strings.TrimSpace(opt) == "auth" {
				return true
			}
		}
	}
	return false
}

func quote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

func randomNonce() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(b), nil
}

func md5hex(s string) string {
	h := md5.Sum([]byte(s))
	return hex.EncodeToString(h[:])
}

// digestResponse computes the qop=auth md5-sess response and the rspauth
// value the server must send back (RFC 2831 §2.1.2.1):
//
//	A1 = MD5(user:realm:pass) ":" nonce ":" cnonce   (inner MD5 raw, 16 bytes)
//	A2 = "AUTHENTICATE:" digest-uri                  (rspauth: ":" digest-uri)
//	response = HEX(MD5(HEX(MD5(A1)):nonce:nc:cnonce:auth:HEX(MD5(A2))))
func digestResponse(user, realm, pass, nonce, cnonce, nc, uri string) (response, rspauth string) {
	inner := md5.Sum([]byte(user + ":" + realm + ":" + pass))
	ha1 := md5hex(string(inner[:]) + ":" + nonce + ":" + cnonce)
	kd := func(a2 string) string {
		return md5hex(ha1 + ":" + nonce + ":" + nc + ":" + cnonce + ":auth:" + md5hex(a2))
	}
	return kd("AUTHENTICATE:" + uri), kd(":" + uri)
}

// DigestServer is the server side of DIGEST-MD5 with qop=auth. xres uses it
// in its in-process fake ResourceManager and NodeManager (package yarntest)
// and to test the client against an independent check.
type DigestServer struct {
	Realm string // "default" for Hadoop
	Nonce string // the nonce to send; set a fresh one per connection
	// Password returns the password for a username, or an error that the
	// server reports as the authentication failure.
	Password func(username string) (string, error)
	// QOP is the qop list to offer; "" offers "auth".
	QOP string
}

// ErrBadResponse means the client's digest response did not verify.
var ErrBadResponse = errors.New("sasl: digest response does not verify")

// Challenge returns the challenge Hadoop servers send.
func (s *DigestServer) Challenge() []byte {
	qop := s.QOP
	if qop == "" {
		qop = "auth"
	}
	return []byte(fmt.Sprintf(`realm=%s,nonce=%s,qop=%s,charset=utf-8,algorithm=md5-sess`,
		quote(s.Realm), quote(s.Nonce), quote(qop)))
}

// Verify checks a client response for digest-uri wantURI and returns the
// rspauth reply and the authenticated username.
func (s *DigestServer) Verify(resp []byte, wantURI string) (reply []byte, username string, err error) {
	d, err := ParseDirectives(resp)
	if err != nil {
		return nil, "", err
	}
	user := d.Get("username")
	if d.Get("nonce") != s.Nonce {
		return nil, user, fmt.Errorf("%w: nonce mismatch", ErrBadResponse)
	}
	if d.Get("digest-uri") != wantURI {
		return nil, user, fmt.Errorf("%w: digest-uri %q, want %q", ErrBadResponse, d.Get("digest-uri"), wantURI)
	}
	if d.Get("qop") != "auth" {
		return nil, user, fmt.Errorf("%w: qop %q", ErrBadResponse, d.Get("qop"))
	}
	pass, err := s.Password(user)
	if err != nil {
		return nil, user, err
	}
	want, proof := digestResponse(user, d.Get("realm"), pass, s.Nonce, d.Get("cnonce"), d.Get("nc"), wantURI)
	if subtle.ConstantTimeCompare([]byte(want), []byte(d.Get("response"))) != 1 {
		return nil, user, ErrBadResponse
	}
	return []byte("rspauth=" + proof), user, nil
}
