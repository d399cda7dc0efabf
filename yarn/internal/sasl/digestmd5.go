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

// DigestMD5 is the client side of DIGEST-MD5 (RFC 2831), as Hadoop's
// TOKEN method uses it: the username is base64 of the token identifier and
// the password base64 of the token password (see TokenCredentials). It
// picks the strongest qop the server offers (hadoop.rpc.protection):
// auth-conf (rc4, 3des, des, rc4-56 or rc4-40), auth-int, then auth; with
// the first two, Layer returns the security layer for the connection.
type DigestMD5 struct {
	Username string
	Password string
	// CNonce makes the client nonce; nil uses 16 random bytes in base64.
	// Tests pin it to reproduce RFC 2831's example.
	CNonce func() (string, error)

	// AuthOnly refuses integrity and privacy even when offered (they are
	// chosen, strongest first, when the server offers them).
	AuthOnly bool

	uri       string
	responded bool
	wantProof string
	layer     Layer
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
	qop, cipherName, err := chooseQOP(d, m.AuthOnly)
	if err != nil {
		return nil, err
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
	resp, proof, ha1 := digestResponse(m.Username, realm, m.Password, nonce, cnonce, nc, m.uri, qop)
	m.wantProof = proof
	m.responded = true
	if qop != qopAuth {
		maxSend := 65536
		if v := d.Get("maxbuf"); v != "" {
			if _, err := fmt.Sscanf(v, "%d", &maxSend); err != nil || maxSend < 64 {
				return nil, fmt.Errorf("%w: maxbuf %q", ErrBadChallenge, v)
			}
		}
		if m.layer, err = newDigestLayer(ha1, qop, cipherName, true, maxSend-32); err != nil {
			return nil, err
		}
	}

	var b strings.Builder
	if strings.EqualFold(d.Get("charset"), "utf-8") {
		b.WriteString("charset=utf-8,")
	}
	fmt.Fprintf(&b, `username=%s,realm=%s,nonce=%s,nc=%s,cnonce=%s,digest-uri=%s,maxbuf=65536,response=%s,qop=%s`,
		quote(m.Username), quote(realm), quote(nonce), nc, quote(cnonce), quote(m.uri), resp, qop)
	if cipherName != "" {
		b.WriteString(",cipher=" + quote(cipherName))
	}
	return []byte(b.String()), nil
}

// Layer implements Layered: nil unless integrity or privacy was chosen.
func (m *DigestMD5) Layer() Layer { return m.layer }

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

// cipherPreference lists the ciphers we implement, preferred first.
var cipherPreference = []string{"rc4", "3des", "des", "rc4-56", "rc4-40"}

// chooseQOP picks the strongest qop the server offers and, for auth-conf,
// a cipher. Hadoop servers offer what hadoop.rpc.protection lists.
func chooseQOP(d Directives, authOnly bool) (qop, cipherName string, err error) {
	offered := list(d["qop"])
	if len(offered) == 0 {
		offered = []string{qopAuth} // RFC 2831: absent qop means auth
	}
	has := func(q string) bool {
		for _, o := range offered {
			if o == q {
				return true
			}
		}
		return false
	}
	if !authOnly && has(qopConf) {
		ciphers := list(d["cipher"])
		for _, want := range cipherPreference {
			for _, c := range ciphers {
				if c == want {
					return qopConf, c, nil
				}
			}
		}
		if !has(qopInt) && !has(qopAuth) {
			return "", "", fmt.Errorf("%w (server offers ciphers %q, xres has %s)", ErrQOP, strings.Join(ciphers, ","), strings.Join(cipherPreference, ","))
		}
	}
	if !authOnly && has(qopInt) {
		return qopInt, "", nil
	}
	if has(qopAuth) {
		return qopAuth, "", nil
	}
	return "", "", fmt.Errorf("%w (server offers qop %q)", ErrQOP, strings.Join(offered, ","))
}

// list splits comma-separated directive values.
func list(vals []string) []string {
	var out []string
	for _, v := range vals {
		for _, o := range strings.Split(v, ",") {
			if o = strings.TrimSpace(o); o != "" {
				out = append(out, strings.ToLower(o))
			}
		}
	}
	return out
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

// digestResponse computes the md5-sess response, the rspauth value the
// server must send back, and H(A1) for the security layer keys (RFC 2831
// §2.1.2.1):
//
//	A1 = MD5(user:realm:pass) ":" nonce ":" cnonce   (inner MD5 raw, 16 bytes)
//	A2 = "AUTHENTICATE:" digest-uri                  (rspauth: ":" digest-uri)
//	     + ":00000000000000000000000000000000" for auth-int and auth-conf
//	response = HEX(MD5(HEX(MD5(A1)):nonce:nc:cnonce:qop:HEX(MD5(A2))))
func digestResponse(user, realm, pass, nonce, cnonce, nc, uri, qop string) (response, rspauth string, ha1 []byte) {
	inner := md5.Sum([]byte(user + ":" + realm + ":" + pass))
	ha1raw := md5.Sum([]byte(string(inner[:]) + ":" + nonce + ":" + cnonce))
	ha1hex := hex.EncodeToString(ha1raw[:])
	suffix := ""
	if qop != qopAuth {
		suffix = ":00000000000000000000000000000000"
	}
	kd := func(a2 string) string {
		return md5hex(ha1hex + ":" + nonce + ":" + nc + ":" + cnonce + ":" + qop + ":" + md5hex(a2+suffix))
	}
	return kd("AUTHENTICATE:" + uri), kd(":" + uri), ha1raw[:]
}

// DigestServer is the server side of DIGEST-MD5. xres uses it
// in its in-process fake ResourceManager and NodeManager (package yarntest)
// and to test the client against an independent check.
type DigestServer struct {
	Realm string // "default" for Hadoop
	Nonce string // the nonce to send; set a fresh one per connection
	// Password returns the password for a username, or an error that the
	// server reports as the authentication failure.
	Password func(username string) (string, error)
	// QOP is the qop list to offer, e.g. "auth-conf"; "" offers "auth".
	QOP string
	// Ciphers is the cipher list offered with auth-conf; "" offers
	// "3des,rc4,des,rc4-56,rc4-40" as the JDK does.
	Ciphers string
}

// ErrBadResponse means the client's digest response did not verify.
var ErrBadResponse = errors.New("sasl: digest response does not verify")

// Challenge returns the challenge Hadoop servers send.
func (s *DigestServer) Challenge() []byte {
	qop := s.QOP
	if qop == "" {
		qop = "auth"
	}
	c := fmt.Sprintf(`realm=%s,nonce=%s,qop=%s,charset=utf-8,algorithm=md5-sess`, quote(s.Realm), quote(s.Nonce), quote(qop))
	if strings.Contains(qop, qopConf) {
		ciphers := s.Ciphers
		if ciphers == "" {
			ciphers = "3des,rc4,des,rc4-56,rc4-40"
		}
		c += ",cipher=" + quote(ciphers)
	}
	if qop != qopAuth {
		c += ",maxbuf=65536"
	}
	return []byte(c)
}

// Verify checks a client response for digest-uri wantURI and returns the
// rspauth reply and the authenticated username.
func (s *DigestServer) Verify(resp []byte, wantURI string) (reply []byte, username string, err error) {
	reply, username, _, err = s.VerifyLayer(resp, wantURI)
	return reply, username, err
}

// VerifyLayer is Verify that also returns the server side of the security
// layer the client chose (nil for auth).
func (s *DigestServer) VerifyLayer(resp []byte, wantURI string) (reply []byte, username string, layer Layer, err error) {
	d, err := ParseDirectives(resp)
	if err != nil {
		return nil, "", nil, err
	}
	user := d.Get("username")
	if d.Get("nonce") != s.Nonce {
		return nil, user, nil, fmt.Errorf("%w: nonce mismatch", ErrBadResponse)
	}
	if d.Get("digest-uri") != wantURI {
		return nil, user, nil, fmt.Errorf("%w: digest-uri %q, want %q", ErrBadResponse, d.Get("digest-uri"), wantURI)
	}
	offered := s.QOP
	if offered == "" {
		offered = qopAuth
	}
	qop := d.Get("qop")
	if !strings.Contains(","+offered+",", ","+qop+",") {
		return nil, user, nil, fmt.Errorf("%w: qop %q not offered", ErrBadResponse, qop)
	}
	pass, err := s.Password(user)
	if err != nil {
		return nil, user, nil, err
	}
	want, proof, ha1 := digestResponse(user, d.Get("realm"), pass, s.Nonce, d.Get("cnonce"), d.Get("nc"), wantURI, qop)
	if subtle.ConstantTimeCompare([]byte(want), []byte(d.Get("response"))) != 1 {
		return nil, user, nil, ErrBadResponse
	}
	if qop != qopAuth {
		l, err := newDigestLayer(ha1, qop, d.Get("cipher"), false, 65536-32)
		if err != nil {
			return nil, user, nil, err
		}
		layer = l
	}
	return []byte("rspauth=" + proof), user, layer, nil
}
