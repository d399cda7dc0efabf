package sasl

import (
	"crypto/cipher"
	"crypto/des"
	"crypto/hmac"
	"crypto/md5"
	"crypto/rc4"
	"crypto/subtle"
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"sync"
)

// Layer is a negotiated SASL security layer: after authentication every
// message is wrapped (integrity, or integrity and privacy).
type Layer interface {
	// Wrap protects one outgoing message.
	Wrap(msg []byte) ([]byte, error)
	// Unwrap checks (and decrypts) one incoming message.
	Unwrap(token []byte) ([]byte, error)
	// MaxSend is the largest message Wrap may be given (the peer's buffer).
	MaxSend() int
}

// Layered is implemented by mechanisms that can negotiate a Layer. Layer
// returns nil when the exchange settled on authentication only.
type Layered interface {
	Layer() Layer
}

// ErrIntegrity means a wrapped message failed its check: tampered with,
// replayed, or out of order.
var ErrIntegrity = errors.New("sasl: message integrity check failed")

// DIGEST-MD5 qop values, strongest last.
const (
	qopAuth = "auth"
	qopInt  = "auth-int"
	qopConf = "auth-conf"
)

// Magic constants of RFC 2831 §2.3 and §2.4.
const (
	magicSignC2S = "Digest session key to client-to-server signing key magic constant"
	magicSignS2C = "Digest session key to server-to-client signing key magic constant"
	magicSealC2S = "Digest H(A1) to client-to-server sealing key magic constant"
	magicSealS2C = "Digest H(A1) to server-to-client sealing key magic constant"
)

// digestLayer implements RFC 2831 integrity and confidentiality:
//
//	integrity:      msg | HMAC-MD5(Ki, seq|msg)[0:10] | 0x0001 | seq
//	confidentiality: CIPHER(Kc, msg | pad | HMAC-MD5(Ki, seq|msg)[0:10]) | 0x0001 | seq
//
// seq is a 4-byte big-endian counter per direction, from 0. Cipher state
// (RC4 stream, DES CBC chain) carries over from message to message.
type digestLayer struct {
	maxSend int

	mu             sync.Mutex
	sendKi, recvKi []byte
	sendSeq        uint32
	recvSeq        uint32
	enc, dec       cipherStream // nil for integrity only
	blockSize      int
}

type cipherStream interface {
	XORKeyStream(dst, src []byte) // stream ciphers
}

type cbcStream struct{ m cipher.BlockMode }

func (c cbcStream) XORKeyStream(dst, src []byte) { c.m.CryptBlocks(dst, src) }

// newDigestLayer derives the keys from H(A1) (raw 16 bytes) for qop and
// cipher. client says which side we are.
func newDigestLayer(ha1 []byte, qop, cipherName string, client bool, maxSend int) (*digestLayer, error) {
	kic := md5.Sum(append(append([]byte{}, ha1...), magicSignC2S...))
	kis := md5.Sum(append(append([]byte{}, ha1...), magicSignS2C...))
	l := &digestLayer{maxSend: maxSend, sendKi: kic[:], recvKi: kis[:]}
	if !client {
		l.sendKi, l.recvKi = kis[:], kic[:]
	}
	if qop == qopInt {
		return l, nil
	}
	n := 16
	switch cipherName {
	case "rc4", "3des":
	case "des", "rc4-56":
		n = 7
	case "rc4-40":
		n = 5
	default:
		return nil, fmt.Errorf("%w: cipher %q", ErrQOP, cipherName)
	}
	kcc := md5.Sum(append(append([]byte{}, ha1[:n]...), magicSealC2S...))
	kcs := md5.Sum(append(append([]byte{}, ha1[:n]...), magicSealS2C...))
	sendKc, recvKc := kcc[:], kcs[:]
	if !client {
		sendKc, recvKc = kcs[:], kcc[:]
	}
	var err error
	if l.enc, l.dec, l.blockSize, err = makeCiphers(cipherName, sendKc, recvKc); err != nil {
		return nil, err
	}
	return l, nil
}

func makeCiphers(name string, sendKc, recvKc []byte) (enc, dec cipherStream, blockSize int, err error) {
	switch name {
	case "rc4", "rc4-56", "rc4-40":
		e, err := rc4.NewCipher(sendKc)
		if err != nil {
			return nil, nil, 0, err
		}
		d, err := rc4.NewCipher(recvKc)
		if err != nil {
			return nil, nil, 0, err
		}
		return e, d, 0, nil
	case "des", "3des":
		mk := func(kc []byte) (cipher.Block, error) {
			k1 := desParity(kc[0:7])
			if name == "des" {
				return des.NewCipher(k1)
			}
			k2 := desParity(kc[7:14])
			return des.NewTripleDESCipher(append(append(append([]byte{}, k1...), k2...), k1...))
		}
		eb, err := mk(sendKc)
		if err != nil {
			return nil, nil, 0, err
		}
		db, err := mk(recvKc)
		if err != nil {
			return nil, nil, 0, err
		}
		return cbcStream{cipher.NewCBCEncrypter(eb, sendKc[8:16])}, cbcStream{cipher.NewCBCDecrypter(db, recvKc[8:16])}, 8, nil
	}
	return nil, nil, 0, fmt.Errorf("%w: cipher %q", ErrQOP, name)
}

// desParity spreads 7 key bytes over 8, seven bits each, and sets each
// byte's low bit for odd parity.
func desParity(in []byte) []byte {
	var v uint64
	for _, b := range in {
		v = v<<8 | uint64(b)
	}
	out := make([]byte, 8)
	for i := range out {
		b := byte((v>>(56-7*(i+1)))&0x7f) << 1
		if bits.OnesCount8(b)%2 == 0 {
			b |= 1
		}
		out[i] = b
	}
	return out
}

func (l *digestLayer) MaxSend() int { return l.maxSend }

func mac(ki []byte, seq uint32, msg []byte) []byte {
	h := hmac.New(md5.New, ki)
	var s [4]byte
	binary.BigEndian.PutUint32(s[:], seq)
	h.Write(s[:])
	h.Write(msg)
	return h.Sum(nil)[:10]
}

func (l *digestLayer) Wrap(msg []byte) ([]byte, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	seq := l.sendSeq
	l.sendSeq++
	m := mac(l.sendKi, seq, msg)
	var body []byte
	if l.enc == nil {
		body = append(append([]byte{}, msg...), m...)
	} else {
		plain := append([]byte{}, msg...)
		if l.blockSize > 0 {
			pad := l.blockSize - (len(msg)+10)%l.blockSize
			for i := 0; i < pad; i++ {
				plain = append(plain, byte(pad))
			}
		}
		plain = append(plain, m...)
		body = make([]byte, len(plain))
		l.enc.XORKeyStream(body, plain)
	}
	var tail [6]byte
	binary.BigEndian.PutUint16(tail[:2], 1)
	binary.BigEndian.PutUint32(tail[2:], seq)
	return append(body, tail[:]...), nil
}

func (l *digestLayer) Unwrap(token []byte) ([]byte, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(token) < 16 {
		return nil, fmt.Errorf("%w: token of %d bytes", ErrIntegrity, len(token))
	}
	body, tail := token[:len(token)-6], token[len(token)-6:]
	if binary.BigEndian.Uint16(tail[:2]) != 1 {
		return nil, fmt.Errorf("%w: bad message type", ErrIntegrity)
	}
	seq := binary.BigEndian.Uint32(tail[2:])
	if seq != l.recvSeq {
		return nil, fmt.Errorf("%w: sequence number %d, want %d", ErrIntegrity, seq, l.recvSeq)
	}
	var msg, m []byte
	if l.dec == nil {
		msg, m = body[:len(body)-10], body[len(body)-10:]
	} else {
		if l.blockSize > 0 && len(body)%l.blockSize != 0 {
			return nil, fmt.Errorf("%w: %d bytes is not a whole number of blocks", ErrIntegrity, len(body))
		}
		plain := make([]byte, len(body))
		l.dec.XORKeyStream(plain, body)
		msg, m = plain[:len(plain)-10], plain[len(plain)-10:]
		if l.blockSize > 0 {
			if len(msg) == 0 {
				return nil, fmt.Errorf("%w: no padding", ErrIntegrity)
			}
			pad := int(msg[len(msg)-1])
			if pad < 1 || pad > l.blockSize || pad > len(msg) {
				return nil, fmt.Errorf("%w: bad padding", ErrIntegrity)
			}
			msg = msg[:len(msg)-pad]
		}
	}
	if subtle.ConstantTimeCompare(m, mac(l.recvKi, seq, msg)) != 1 {
		return nil, fmt.Errorf("%w: mac mismatch", ErrIntegrity)
	}
	l.recvSeq++
	return msg, nil
}
