package contract

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// The device report is authenticated with a key of the container's own:
// `am submit` puts ReportSecretBytes random bytes into the AM's credentials
// as the secret key ReportSecretAlias (the application's secret, which
// never leaves the AM); the AM derives each worker container's key from it
// (ContainerKey: HMAC-SHA256(secret, "xres container key " + id)) and puts
// it, as the secret key ContainerKeyAlias, into that container's
// credentials alone, where the NodeManager writes them to the file
// HADOOP_TOKEN_FILE_LOCATION names. The launcher signs with its key and the
// AM checks with the key it derives for the container the request names,
// so a key signs for its own container only; no key travels, nor appears
// in an environment, a command line or a log.
//
//	POST /api/report HTTP/1.1
//	Content-Type: application/json
//	X-Xres-Report-Signature: hmac-sha256=<64 hex digits: HMAC-SHA256(key, body)>
//
//	{"container":"container_…_000002","seq":1733500000000000001,"resources":{…}}
//
// The body names the container, and carries seq, which grows with every
// report the launcher sends (DeviceReport.Seq): the AM refuses one not
// newer than the last it took, so a report recorded on the wire cannot be
// replayed.
//
// The launcher's GETs (the rendezvous, the worker counts with the peers'
// addresses) are signed over RendezvousMessage / WorkersMessage and carry
// a fresh nonce (HeaderNonce); the AM signs its answer over AnswerMessage
// with the same key (HeaderAnswerSignature), and the launcher believes
// only an answer so signed for its own request.
const (
	ReportSecretAlias = "xres.report.secret"
	ReportSecretBytes = 32
	// ContainerKeyAlias is the secret key of a worker container's
	// credentials that holds its own key (ContainerKey).
	ContainerKeyAlias = "xres.container.key"
	// HeaderReportSignature carries ReportSignaturePrefix and the hex HMAC.
	HeaderReportSignature = "X-Xres-Report-Signature"
	ReportSignaturePrefix = "hmac-sha256="
	// HeaderNonce is the launcher's fresh nonce for one GET (NonceBytes
	// random bytes, hex); HeaderAnswerSignature the AM's signature of its
	// answer (ReportSignaturePrefix and the hex HMAC of AnswerMessage).
	HeaderNonce           = "X-Xres-Nonce"
	HeaderAnswerSignature = "X-Xres-Answer-Signature"
	NonceBytes            = 16
)

// ContainerKey derives container's key from the application's secret; nil
// when there is no secret.
func ContainerKey(secret []byte, container string) []byte {
	if len(secret) == 0 {
		return nil
	}
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("xres container key "))
	m.Write([]byte(container))
	return m.Sum(nil)
}

// SignReport returns the HeaderReportSignature value for body.
func SignReport(key, body []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write(body)
	return ReportSignaturePrefix + hex.EncodeToString(m.Sum(nil))
}

// RendezvousMessage is what a launcher signs (SignReport) to ask the
// rendezvous endpoint about its container: distinct from every report body
// (JSON), so neither signature stands for the other.
func RendezvousMessage(container string) []byte { return []byte("rendezvous " + container) }

// WorkersMessage is what a launcher signs to read the worker counts with
// the peers' addresses (GET api/workers?container=ID).
func WorkersMessage(container string) []byte { return []byte("workers " + container) }

// What an answer answers (AnswerMessage).
const (
	AnswerRendezvous = "rendezvous"
	AnswerWorkers    = "workers"
)

// AnswerMessage is what the AM signs (SignReport, with the container's
// key) to answer the GET of kind (AnswerRendezvous, AnswerWorkers) that
// container's launcher sent with nonce: the answer is good for that one
// request only.
func AnswerMessage(kind, container, nonce string, body []byte) []byte {
	b := make([]byte, 0, len(kind)+len(container)+len(nonce)+len(body)+10)
	b = append(b, "answer "...)
	b = append(b, kind...)
	b = append(b, ' ')
	b = append(b, container...)
	b = append(b, ' ')
	b = append(b, nonce...)
	b = append(b, '\n')
	return append(b, body...)
}

// ErrBadNonce marks a HeaderNonce value that is not NonceBytes..64 bytes
// in hex.
var ErrBadNonce = errors.New("bad nonce")

// CheckNonce checks a HeaderNonce value.
func CheckNonce(nonce string) error {
	if len(nonce) < 2*NonceBytes || len(nonce) > 128 {
		return fmt.Errorf("%w: want %d to 128 hex digits, got %d characters", ErrBadNonce, 2*NonceBytes, len(nonce))
	}
	if _, err := hex.DecodeString(nonce); err != nil {
		return fmt.Errorf("%w: not hex", ErrBadNonce)
	}
	return nil
}

// VerifyReport reports whether sig is body's signature under key,
// comparing in constant time. An empty key verifies nothing.
func VerifyReport(key, body []byte, sig string) bool {
	if len(key) == 0 {
		return false
	}
	got, ok := strings.CutPrefix(strings.TrimSpace(sig), ReportSignaturePrefix)
	if !ok || len(got) != 2*sha256.Size {
		return false
	}
	mac, err := hex.DecodeString(got)
	if err != nil {
		return false
	}
	m := hmac.New(sha256.New, key)
	m.Write(body)
	return hmac.Equal(mac, m.Sum(nil))
}

// ErrCredentials marks a token storage file that does not parse.
var ErrCredentials = errors.New("malformed token storage file")

// ReportSecret returns the secret key ReportSecretAlias from a Hadoop token
// storage file's contents (what HADOOP_TOKEN_FILE_LOCATION names, in either
// format: 0, Writable, as NodeManagers write it, or 1, protobuf); nil when
// the file holds no such secret. Errors never quote the file's bytes.
//
// This reads only what the launcher needs; yarn/security reads and writes
// the whole format (and its tests check that both agree).
func ReportSecret(b []byte) ([]byte, error) { return CredentialsSecret(b, ReportSecretAlias) }

// ContainerKeyOf returns the container's key (ContainerKeyAlias) from its
// credentials file's contents, as ReportSecret does.
func ContainerKeyOf(b []byte) ([]byte, error) { return CredentialsSecret(b, ContainerKeyAlias) }

// CredentialsSecret returns the secret key alias from a Hadoop token
// storage file's contents, as ReportSecret does.
func CredentialsSecret(b []byte, alias string) ([]byte, error) {
	if len(b) < 5 || !bytes.Equal(b[:4], []byte("HDTS")) {
		return nil, fmt.Errorf("%w: no HDTS magic", ErrCredentials)
	}
	switch b[4] {
	case 0:
		return writableSecret(b[5:], alias)
	case 1:
		return protoSecret(b[5:], alias)
	default:
		return nil, fmt.Errorf("%w: unknown format version %d", ErrCredentials, b[4])
	}
}

// writableSecret scans format 0: VInt nTokens, nTokens × {Text alias,
// VInt len + identifier, VInt len + password, Text kind, Text service},
// VInt nSecrets, nSecrets × {Text alias, VInt len + bytes}; Text is VInt
// len + UTF-8, VInt is Hadoop's WritableUtils zero-compressed long.
func writableSecret(b []byte, want string) ([]byte, error) {
	r := vreader{b: b}
	n := r.count()
	for i := 0; i < n && r.err == nil; i++ {
		for f := 0; f < 5; f++ { // alias, identifier, password, kind, service
			r.field()
		}
	}
	n = r.count()
	var secret []byte
	for i := 0; i < n && r.err == nil; i++ {
		alias, v := r.field(), r.field()
		if r.err == nil && string(alias) == want {
			secret = append([]byte{}, v...)
		}
	}
	if r.err != nil {
		return nil, fmt.Errorf("%w: at byte %d: %v", ErrCredentials, 5+r.off, r.err)
	}
	return secret, nil
}

type vreader struct {
	b   []byte
	off int
	err error
}

// vlong reads one WritableUtils VLong: one byte for -112..127, else a
// length byte (-113..-120 positive, -121..-128 negative, one's
// complement) and that many big-endian bytes.
func (r *vreader) vlong() int64 {
	if r.err != nil {
		return 0
	}
	if r.off >= len(r.b) {
		r.err = errors.New("unexpected end")
		return 0
	}
	first := int8(r.b[r.off])
	r.off++
	if first >= -112 {
		return int64(first)
	}
	neg := first < -120
	n := -112 - int(first)
	if neg {
		n = -120 - int(first)
	}
	if n > len(r.b)-r.off {
		r.err = errors.New("unexpected end")
		return 0
	}
	var v int64
	for i := 0; i < n; i++ {
		v = v<<8 | int64(r.b[r.off+i])
	}
	r.off += n
	if neg {
		v = ^v
	}
	return v
}

// count reads a count no larger than the bytes left.
func (r *vreader) count() int {
	n := r.vlong()
	if r.err == nil && (n < 0 || n > int64(len(r.b)-r.off)) {
		r.err = fmt.Errorf("count %d out of range", n)
	}
	if r.err != nil {
		return 0
	}
	return int(n)
}

// field reads a length-prefixed byte string.
func (r *vreader) field() []byte {
	n := r.count()
	if r.err != nil {
		return nil
	}
	v := r.b[r.off : r.off+n]
	r.off += n
	return v
}

// protoSecret scans format 1: varint len, CredentialsProto {repeated
// CredentialsKVProto tokens = 1; repeated CredentialsKVProto secrets = 2},
// CredentialsKVProto {string alias = 1; TokenProto token = 2; bytes
// secret = 3}.
func protoSecret(b []byte, want string) ([]byte, error) {
	n, k := consumeVarint(b)
	if k < 0 || n > uint64(len(b)-k) {
		return nil, fmt.Errorf("%w: bad protobuf length", ErrCredentials)
	}
	msg := b[k : k+int(n)]
	var secret []byte
	err := protoFields(msg, func(num int32, v []byte) error {
		if num != 2 {
			return nil
		}
		var alias, value []byte
		if err := protoFields(v, func(num int32, v []byte) error {
			switch num {
			case 1:
				alias = v
			case 3:
				value = v
			}
			return nil
		}); err != nil {
			return err
		}
		if string(alias) == want {
			secret = append([]byte{}, value...)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCredentials, err)
	}
	return secret, nil
}

// protoFields calls f with each length-delimited field of msg, skipping
// the others.
func protoFields(msg []byte, f func(int32, []byte) error) error {
	for len(msg) > 0 {
		num, typ, k := consumeTag(msg)
		if k < 0 {
			return errWire
		}
		msg = msg[k:]
		if typ != wireBytes {
			k = consumeFieldValue(num, typ, msg)
			if k < 0 {
				return errWire
			}
			msg = msg[k:]
			continue
		}
		v, k := consumeBytes(msg)
		if k < 0 {
			return errWire
		}
		if err := f(num, v); err != nil {
			return err
		}
		msg = msg[k:]
	}
	return nil
}
