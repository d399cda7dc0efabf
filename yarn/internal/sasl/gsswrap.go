package sasl

import (
	"crypto/hmac"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/jcmturner/gokrb5/v8/crypto"
	"github.com/jcmturner/gokrb5/v8/crypto/etype"
	"github.com/jcmturner/gokrb5/v8/iana/etypeID"
	"github.com/jcmturner/gokrb5/v8/iana/keyusage"
	krbtypes "github.com/jcmturner/gokrb5/v8/types"
)

// RFC 4121 §4.2.6.2 wrap token, the per-message token of the Kerberos GSS
// mechanism for the enctypes newer than RFC 1964's (the AES family, which
// is what Java's Krb5 mechanism speaks with them):
//
//	offset  size  field
//	0       2     TOK_ID 05 04
//	2       1     Flags: 0x01 sent by acceptor, 0x02 sealed, 0x04 acceptor subkey
//	3       1     Filler FF
//	4       2     EC  (sealed: filler bytes before encryption; else checksum length)
//	6       2     RRC (right rotation count of everything after the header)
//	8       8     SND_SEQ
//	16      ...   integrity: plaintext | checksum(Kc, plaintext | header with EC=RRC=0)
//	              sealed:    encrypt(Ke/Ki, plaintext | EC filler | header with RRC=0)
//
// Key usages (RFC 4121 §2): 22 acceptor seal, 23 acceptor sign, 24
// initiator seal, 25 initiator sign; wrap tokens use the seal usages, both
// with and without confidentiality.
const (
	gssHeaderLen     = 16
	gssFlagAcceptor  = 0x01
	gssFlagSealed    = 0x02
	gssFlagAccSubkey = 0x04
)

// SASL GSSAPI security layers (RFC 4752 §3.3): the bitmask of the first
// byte of the server's offer and of the client's choice.
const (
	gssLayerNone      = 0x01
	gssLayerIntegrity = 0x02
	gssLayerPrivacy   = 0x04
)

// errWrapChecksum marks a token whose checksum (or encryption) does not
// verify with the session key, as opposed to one that does not parse.
var errWrapChecksum = errors.New("wrap token checksum mismatch")

// gssLayer is a GSS-API security layer over one Kerberos session key.
type gssLayer struct {
	key       krbtypes.EncryptionKey
	et        etype.EType
	conf      bool // privacy (sealed tokens), else integrity only
	initiator bool // we are the client
	maxSend   int

	// Keys derived once per direction (RFC 3961 §5.3): Kc for checksums,
	// Ke and Ki for sealing.
	send, recv gssKeys

	mu      sync.Mutex
	sendSeq uint64
	recvSeq uint64
	recvAny bool // accept any sequence number on the next token
}

// gssV2Etype reports whether the key's enctype uses RFC 4121 tokens
// (RC4 and DES3 keep RFC 1964's, which xres does not speak).
func gssV2Etype(keyType int32) bool {
	switch keyType {
	case etypeID.AES128_CTS_HMAC_SHA1_96, etypeID.AES256_CTS_HMAC_SHA1_96,
		etypeID.AES128_CTS_HMAC_SHA256_128, etypeID.AES256_CTS_HMAC_SHA384_192:
		return true
	}
	return false
}

// gssCanSeal reports whether privacy works with the enctype: gokrb5
// v8.4.4 derives a wrong-sized encryption key for
// aes256-cts-hmac-sha384-192, so that one gets integrity at most.
func gssCanSeal(keyType int32) bool {
	return gssV2Etype(keyType) && keyType != etypeID.AES256_CTS_HMAC_SHA384_192
}

func newGSSLayer(key krbtypes.EncryptionKey, conf, initiator bool) (*gssLayer, error) {
	if !gssV2Etype(key.KeyType) {
		return nil, fmt.Errorf("%w: session key enctype %d has no RFC 4121 wrap tokens", ErrQOP, key.KeyType)
	}
	et, err := crypto.GetEtype(key.KeyType)
	if err != nil {
		return nil, fmt.Errorf("%w: enctype %d: %v", ErrKerberos, key.KeyType, err)
	}
	l := &gssLayer{key: key, et: et, conf: conf, initiator: initiator, recvAny: true}
	sendUsage, recvUsage := l.usages()
	if l.send, err = deriveGSSKeys(key, et, sendUsage); err != nil {
		return nil, err
	}
	if l.recv, err = deriveGSSKeys(key, et, recvUsage); err != nil {
		return nil, err
	}
	return l, nil
}

// gssKeys are the keys RFC 3961 derives from the session key for one key
// usage.
type gssKeys struct {
	usage      uint32
	kc, ke, ki []byte
}

func deriveGSSKeys(key krbtypes.EncryptionKey, et etype.EType, usage uint32) (gssKeys, error) {
	k := gssKeys{usage: usage}
	for _, d := range []struct {
		dst  *[]byte
		kind byte
	}{{&k.kc, 0x99}, {&k.ke, 0xaa}, {&k.ki, 0x55}} {
		c := []byte{byte(usage >> 24), byte(usage >> 16), byte(usage >> 8), byte(usage), d.kind}
		v, err := et.DeriveKey(key.KeyValue, c)
		if err != nil {
			return k, fmt.Errorf("%w: derive key for usage %d: %v", ErrKerberos, usage, err)
		}
		*d.dst = v
	}
	return k, nil
}

// checksum is RFC 3961's keyed checksum: HMAC(Kc, data), truncated (the
// same for the RFC 3962 and RFC 8009 AES enctypes).
func (l *gssLayer) checksum(k gssKeys, parts ...[]byte) []byte {
	h := hmac.New(l.et.GetHashFunc(), k.kc)
	for _, p := range parts {
		h.Write(p)
	}
	return h.Sum(nil)[:l.et.GetHMACBitLength()/8]
}

// rfc3962 reports whether the enctype is AES-CTS with HMAC-SHA1 (RFC
// 3962), whose encryption this file composes from the cached keys: the
// RFC 8009 ones go through gokrb5's EncryptMessage/DecryptMessage.
func (l *gssLayer) rfc3962() bool {
	id := l.et.GetETypeID()
	return id == etypeID.AES128_CTS_HMAC_SHA1_96 || id == etypeID.AES256_CTS_HMAC_SHA1_96
}

// seal is RFC 3961's encrypt: confounder, then E(Ke, confounder|plain) |
// HMAC(Ki, confounder|plain) truncated (RFC 3962 AES-CTS, zero IV).
func (l *gssLayer) seal(k gssKeys, plain []byte) ([]byte, error) {
	if !l.rfc3962() {
		_, ct, err := l.et.EncryptMessage(l.key.KeyValue, plain, k.usage)
		return ct, err
	}
	conf := make([]byte, l.et.GetConfounderByteSize(), l.et.GetConfounderByteSize()+len(plain))
	if _, err := rand.Read(conf); err != nil {
		return nil, err
	}
	pt := append(conf, plain...)
	_, ct, err := l.et.EncryptData(k.ke, pt)
	if err != nil {
		return nil, err
	}
	h := hmac.New(l.et.GetHashFunc(), k.ki)
	h.Write(pt)
	return append(ct, h.Sum(nil)[:l.et.GetHMACBitLength()/8]...), nil
}

// open undoes seal and checks the integrity hash.
func (l *gssLayer) open(k gssKeys, ct []byte) ([]byte, error) {
	if !l.rfc3962() {
		return l.et.DecryptMessage(l.key.KeyValue, ct, k.usage)
	}
	n := l.et.GetHMACBitLength() / 8
	if len(ct) < l.et.GetConfounderByteSize()+n {
		return nil, errors.New("ciphertext too short")
	}
	pt, err := l.et.DecryptData(k.ke, ct[:len(ct)-n])
	if err != nil {
		return nil, err
	}
	h := hmac.New(l.et.GetHashFunc(), k.ki)
	h.Write(pt)
	if !hmac.Equal(h.Sum(nil)[:n], ct[len(ct)-n:]) {
		return nil, errors.New("integrity hash mismatch")
	}
	return pt[l.et.GetConfounderByteSize():], nil
}

// overhead is how many bytes a wrap token adds to its plaintext.
func (l *gssLayer) overhead(conf bool) int {
	n := gssHeaderLen + l.et.GetHMACBitLength()/8
	if conf {
		n += l.et.GetConfounderByteSize() + gssHeaderLen
	}
	return n
}

func (l *gssLayer) usages() (send, recv uint32) {
	if l.initiator {
		return keyusage.GSSAPI_INITIATOR_SEAL, keyusage.GSSAPI_ACCEPTOR_SEAL
	}
	return keyusage.GSSAPI_ACCEPTOR_SEAL, keyusage.GSSAPI_INITIATOR_SEAL
}

func gssHeader(flags byte, ec, rrc uint16, seq uint64) []byte {
	h := make([]byte, gssHeaderLen)
	h[0], h[1], h[2], h[3] = 0x05, 0x04, flags, 0xff
	binary.BigEndian.PutUint16(h[4:6], ec)
	binary.BigEndian.PutUint16(h[6:8], rrc)
	binary.BigEndian.PutUint64(h[8:16], seq)
	return h
}

func (l *gssLayer) MaxSend() int { return l.maxSend }

// Wrap implements Layer with the negotiated protection.
func (l *gssLayer) Wrap(msg []byte) ([]byte, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	seq := l.sendSeq
	l.sendSeq++
	return l.wrapToken(msg, l.conf, seq)
}

// wrapToken builds one token (RRC 0, EC 0 when sealed: AES needs no
// padding).
func (l *gssLayer) wrapToken(msg []byte, conf bool, seq uint64) ([]byte, error) {
	var flags byte
	if !l.initiator {
		flags |= gssFlagAcceptor
	}
	if !conf {
		sum := l.checksum(l.send, msg, gssHeader(flags, 0, 0, seq))
		tok := gssHeader(flags, uint16(len(sum)), 0, seq)
		tok = append(tok, msg...)
		return append(tok, sum...), nil
	}
	flags |= gssFlagSealed
	hdr := gssHeader(flags, 0, 0, seq)
	plain := append(append([]byte{}, msg...), hdr...)
	ct, err := l.seal(l.send, plain)
	if err != nil {
		return nil, fmt.Errorf("%w: wrap encrypt: %v", ErrKerberos, err)
	}
	return append(hdr, ct...), nil
}

// Unwrap implements Layer: it checks (and decrypts) one token from the peer.
func (l *gssLayer) Unwrap(token []byte) ([]byte, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	msg, seq, err := l.unwrapToken(token, l.conf)
	if err != nil {
		return nil, err
	}
	if !l.recvAny && seq != l.recvSeq {
		return nil, fmt.Errorf("%w: sequence number %d, want %d", ErrIntegrity, seq, l.recvSeq)
	}
	l.recvAny = false
	l.recvSeq = seq + 1
	return msg, nil
}

// unwrapToken parses and checks one token from the peer; conf says whether
// it must be sealed.
func (l *gssLayer) unwrapToken(token []byte, conf bool) (msg []byte, seq uint64, err error) {
	if len(token) < gssHeaderLen {
		return nil, 0, fmt.Errorf("%w: wrap token of %d bytes", ErrIntegrity, len(token))
	}
	if token[0] != 0x05 || token[1] != 0x04 || token[3] != 0xff {
		return nil, 0, fmt.Errorf("%w: not an RFC 4121 wrap token (starts % x)", ErrIntegrity, token[:4])
	}
	flags := token[2]
	if fromAcceptor := flags&gssFlagAcceptor != 0; fromAcceptor != l.initiator {
		return nil, 0, fmt.Errorf("%w: wrap token flags %#x: wrong direction", ErrIntegrity, flags)
	}
	if flags&gssFlagAccSubkey != 0 {
		return nil, 0, fmt.Errorf("%w: peer wraps with an acceptor subkey, which xres did not negotiate", ErrIntegrity)
	}
	if sealed := flags&gssFlagSealed != 0; sealed != conf {
		return nil, 0, fmt.Errorf("%w: wrap token sealed=%v, negotiated privacy=%v", ErrIntegrity, sealed, conf)
	}
	ec := int(binary.BigEndian.Uint16(token[4:6]))
	rrc := int(binary.BigEndian.Uint16(token[6:8]))
	seq = binary.BigEndian.Uint64(token[8:16])
	body := token[gssHeaderLen:]
	if len(body) > 0 && rrc%len(body) != 0 {
		r := rrc % len(body)
		body = append(append([]byte{}, body[r:]...), body[:r]...) // rotate left by r
	}
	if !conf {
		if ec != l.et.GetHMACBitLength()/8 || len(body) < ec {
			return nil, 0, fmt.Errorf("%w: checksum length %d in a %d-byte token", ErrIntegrity, ec, len(token))
		}
		msg, sum := body[:len(body)-ec], body[len(body)-ec:]
		if !hmac.Equal(sum, l.checksum(l.recv, msg, gssHeader(flags, 0, 0, seq))) {
			return nil, 0, fmt.Errorf("%w: %w", ErrIntegrity, errWrapChecksum)
		}
		return append([]byte{}, msg...), seq, nil
	}
	if len(body) < l.overhead(true)-gssHeaderLen {
		return nil, 0, fmt.Errorf("%w: sealed token of %d bytes", ErrIntegrity, len(token))
	}
	plain, err := l.open(l.recv, body)
	if err != nil {
		return nil, 0, fmt.Errorf("%w: %w: decrypt: %v", ErrIntegrity, errWrapChecksum, err)
	}
	if len(plain) < ec+gssHeaderLen {
		return nil, 0, fmt.Errorf("%w: sealed plaintext of %d bytes, filler %d", ErrIntegrity, len(plain), ec)
	}
	inner := plain[len(plain)-gssHeaderLen:]
	if !hmac.Equal(inner, gssHeader(flags, uint16(ec), 0, seq)) {
		return nil, 0, fmt.Errorf("%w: encrypted header copy differs from the token header", ErrIntegrity)
	}
	return plain[:len(plain)-gssHeaderLen-ec], seq, nil
}
