package sasl

import (
	"bytes"
	"crypto/aes"
	"crypto/hmac"
	"crypto/sha1"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"testing"

	"github.com/jcmturner/gokrb5/v8/crypto"
	"github.com/jcmturner/gokrb5/v8/crypto/rfc3961"
	"github.com/jcmturner/gokrb5/v8/crypto/rfc3962"
	"github.com/jcmturner/gokrb5/v8/gssapi"
	"github.com/jcmturner/gokrb5/v8/iana/etypeID"
	"github.com/jcmturner/gokrb5/v8/iana/keyusage"
	krbtypes "github.com/jcmturner/gokrb5/v8/types"
	"github.com/stretchr/testify/require"
)

// The test vectors below are built by hand from the RFC layouts, with the
// standard library's AES and HMAC-SHA1 and no code of gsswrap.go:
//
//	DK(key, usage|kind) = AES-ECB(key, n-fold(usage|kind, 128)) chained (RFC 3961 §5.1)
//	Kc = DK(.., 0x99), Ke = DK(.., 0xAA), Ki = DK(.., 0x55)   (RFC 3961 §5.3)
//	checksum = HMAC-SHA1(Kc, data)[:12]                        (RFC 3962)
//
// Only n-fold and AES-CTS come from gokrb5 (n-fold checked against RFC
// 3961's own vector first).

func TestNfoldVector(t *testing.T) {
	// RFC 3961 appendix A.1: 128-fold("kerberos").
	require.Equal(t, "6b65726265726f737b9b5b2b93132b93", hex.EncodeToString(rfc3961.Nfold([]byte("kerberos"), 128)))
}

// dk derives an AES key by hand (RFC 3961 DK with the AES block cipher).
func dk(t *testing.T, key []byte, usage uint32, kind byte) []byte {
	t.Helper()
	c := make([]byte, 5)
	binary.BigEndian.PutUint32(c, usage)
	c[4] = kind
	block, err := aes.NewCipher(key)
	require.NoError(t, err)
	in := rfc3961.Nfold(c, 128)
	var out []byte
	for len(out) < len(key) {
		k := make([]byte, 16)
		block.Encrypt(k, in)
		out = append(out, k...)
		in = k
	}
	return out[:len(key)]
}

func hmacSHA1(key []byte, parts ...[]byte) []byte {
	h := hmac.New(sha1.New, key)
	for _, p := range parts {
		h.Write(p)
	}
	return h.Sum(nil)[:12]
}

func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	require.NoError(t, err)
	return b
}

func rotateRight(b []byte, n int) []byte {
	n %= len(b)
	return append(append([]byte{}, b[len(b)-n:]...), b[:len(b)-n]...)
}

func aesKey(t *testing.T, keyType int32) krbtypes.EncryptionKey {
	et, err := crypto.GetEtype(keyType)
	require.NoError(t, err)
	k := make([]byte, et.GetKeyByteSize())
	for i := range k {
		k[i] = byte(0xa0 + i)
	}
	return krbtypes.EncryptionKey{KeyType: keyType, KeyValue: k}
}

func testLayer(t *testing.T, key krbtypes.EncryptionKey, conf, initiator bool) *gssLayer {
	l, err := newGSSLayer(key, conf, initiator)
	require.NoError(t, err)
	l.maxSend = 1 << 16
	return l
}

func TestGSSDerivedKeyMatchesGokrb5(t *testing.T) {
	for _, kt := range []int32{etypeID.AES128_CTS_HMAC_SHA1_96, etypeID.AES256_CTS_HMAC_SHA1_96} {
		key := aesKey(t, kt)
		et, err := crypto.GetEtype(kt)
		require.NoError(t, err)
		got, err := et.DeriveKey(key.KeyValue, []byte{0, 0, 0, 24, 0x99})
		require.NoError(t, err)
		require.Equal(t, dk(t, key.KeyValue, 24, 0x99), got, "enctype %d", kt)
	}
}

// Our tokens read with gokrb5's own code (checksum via GetChecksumHash,
// decryption via DecryptMessage), for every AES enctype.
func TestGSSWrapAgreesWithGokrb5(t *testing.T) {
	for _, kt := range []int32{etypeID.AES128_CTS_HMAC_SHA1_96, etypeID.AES256_CTS_HMAC_SHA1_96,
		etypeID.AES128_CTS_HMAC_SHA256_128, etypeID.AES256_CTS_HMAC_SHA384_192} {
		key := aesKey(t, kt)
		et, err := crypto.GetEtype(kt)
		require.NoError(t, err)
		msg := []byte("cross-checked with gokrb5")

		tok, err := testLayer(t, key, false, true).Wrap(msg)
		require.NoError(t, err)
		var wt gssapi.WrapToken
		require.NoError(t, wt.Unmarshal(tok, false))
		ok, err := wt.Verify(key, keyusage.GSSAPI_INITIATOR_SEAL)
		require.NoError(t, err, "enctype %d", kt)
		require.True(t, ok)
		require.Equal(t, msg, wt.Payload)

		if !gssCanSeal(kt) {
			continue
		}
		tok, err = testLayer(t, key, true, true).Wrap(msg)
		require.NoError(t, err)
		plain, err := et.DecryptMessage(key.KeyValue, tok[16:], keyusage.GSSAPI_INITIATOR_SEAL)
		require.NoError(t, err, "enctype %d", kt)
		require.Equal(t, append(append([]byte{}, msg...), tok[:16]...), plain)
	}
}

// Our initiator's integrity token, byte for byte.
func TestGSSWrapIntegrityVector(t *testing.T) {
	for _, kt := range []int32{etypeID.AES128_CTS_HMAC_SHA1_96, etypeID.AES256_CTS_HMAC_SHA1_96} {
		key := aesKey(t, kt)
		l := testLayer(t, key, false, true)
		l.sendSeq = 0x0102030405060708
		msg := []byte("getClusterMetrics request bytes")

		got, err := l.Wrap(msg)
		require.NoError(t, err)

		// 05 04 | flags 00 (initiator, not sealed) | ff | EC 000c | RRC 0000 | seq
		hdr := unhex(t, "050400ff000c00000102030405060708")
		sumHdr := unhex(t, "050400ff000000000102030405060708") // EC and RRC zero
		want := append(append(append([]byte{}, hdr...), msg...), hmacSHA1(dk(t, key.KeyValue, 24, 0x99), msg, sumHdr)...)
		require.Equal(t, hex.EncodeToString(want), hex.EncodeToString(got), "enctype %d", kt)
		require.Equal(t, uint64(0x0102030405060709), l.sendSeq)
	}
}

// Our initiator's sealed token, taken apart by hand.
func TestGSSWrapPrivacyVector(t *testing.T) {
	key := aesKey(t, etypeID.AES256_CTS_HMAC_SHA1_96)
	l := testLayer(t, key, true, true)
	l.sendSeq = 7
	msg := bytes.Repeat([]byte("sealed payload "), 5)

	tok, err := l.Wrap(msg)
	require.NoError(t, err)
	hdr := unhex(t, "050402ff000000000000000000000007") // sealed, EC 0, RRC 0, seq 7
	require.Equal(t, hex.EncodeToString(hdr), hex.EncodeToString(tok[:16]))
	body := tok[16:]
	ct, mac := body[:len(body)-12], body[len(body)-12:]
	et, err := crypto.GetEtype(key.KeyType)
	require.NoError(t, err)
	plain, err := rfc3962.DecryptData(dk(t, key.KeyValue, 24, 0xaa), ct, et)
	require.NoError(t, err)
	require.Equal(t, hmacSHA1(dk(t, key.KeyValue, 24, 0x55), plain), mac, "integrity hash over confounder|plaintext")
	require.Len(t, plain, 16+len(msg)+16, "confounder | message | header copy")
	require.Equal(t, msg, plain[16:16+len(msg)])
	require.Equal(t, hdr, plain[16+len(msg):])
}

// Acceptor tokens built by hand, rotated (RRC) and padded (EC) the ways
// RFC 4121 allows, are read back.
func TestGSSUnwrapHandBuiltAcceptorTokens(t *testing.T) {
	key := aesKey(t, etypeID.AES256_CTS_HMAC_SHA1_96)
	et, err := crypto.GetEtype(key.KeyType)
	require.NoError(t, err)
	msg := []byte("a response from the ResourceManager")
	header := func(flags byte, ec, rrc uint16, seq uint64) []byte {
		h := []byte{5, 4, flags, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
		binary.BigEndian.PutUint16(h[4:], ec)
		binary.BigEndian.PutUint16(h[6:], rrc)
		binary.BigEndian.PutUint64(h[8:], seq)
		return h
	}
	integrity := func(rrc uint16) []byte {
		body := append(append([]byte{}, msg...), hmacSHA1(dk(t, key.KeyValue, 22, 0x99), msg, header(0x01, 0, 0, 3))...)
		if rrc > 0 {
			body = rotateRight(body, int(rrc))
		}
		return append(header(0x01, 12, rrc, 3), body...)
	}
	sealed := func(ec, rrc uint16) []byte {
		plain := append(bytes.Repeat([]byte{0xc0}, 16), msg...)       // confounder | message
		plain = append(plain, bytes.Repeat([]byte{0xff}, int(ec))...) // filler
		plain = append(plain, header(0x03, ec, 0, 3)...)              // header copy, RRC 0
		_, ct, err := rfc3962.EncryptData(dk(t, key.KeyValue, 22, 0xaa), plain, et)
		require.NoError(t, err)
		body := append(ct, hmacSHA1(dk(t, key.KeyValue, 22, 0x55), plain)...)
		if rrc > 0 {
			body = rotateRight(body, int(rrc))
		}
		return append(header(0x03, ec, rrc, 3), body...)
	}
	tests := []struct {
		name  string
		conf  bool
		token []byte
	}{
		{"integrity", false, integrity(0)},
		{"integrity, RRC 12", false, integrity(12)},
		{"integrity, RRC past the body", false, integrity(uint16(len(msg) + 12 + 5))},
		{"sealed", true, sealed(0, 0)},
		{"sealed, RRC 28 (as SSPI sends)", true, sealed(0, 28)},
		{"sealed, EC 5 filler", true, sealed(5, 0)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := testLayer(t, key, tt.conf, true)
			l.recvSeq, l.recvAny = 3, false
			got, err := l.Unwrap(tt.token)
			require.NoError(t, err)
			require.Equal(t, msg, got)
			require.Equal(t, uint64(4), l.recvSeq)
		})
	}
}

// Our initiator and acceptor sides talk to each other, and every kind of
// damage is refused with ErrIntegrity.
func TestGSSLayerRoundTripAndTampering(t *testing.T) {
	for _, kt := range []int32{etypeID.AES128_CTS_HMAC_SHA1_96, etypeID.AES256_CTS_HMAC_SHA1_96,
		etypeID.AES128_CTS_HMAC_SHA256_128, etypeID.AES256_CTS_HMAC_SHA384_192} {
		for _, conf := range []bool{false, true} {
			if conf && !gssCanSeal(kt) {
				continue
			}
			key := aesKey(t, kt)
			client, server := testLayer(t, key, conf, true), testLayer(t, key, conf, false)
			for i, n := range []int{0, 1, 15, 16, 17, 1000, 70000} {
				msg := bytes.Repeat([]byte{byte(i)}, n)
				tok, err := client.Wrap(msg)
				require.NoError(t, err, "enctype %d conf %v", kt, conf)
				require.Len(t, tok, n+client.overhead(conf), "enctype %d conf %v", kt, conf)
				got, err := server.Unwrap(tok)
				require.NoError(t, err)
				require.Equal(t, msg, got)
				tok, err = server.Wrap(msg)
				require.NoError(t, err)
				got, err = client.Unwrap(tok)
				require.NoError(t, err)
				require.Equal(t, msg, got)
			}
		}
	}
	for _, conf := range []bool{false, true} {
		key := aesKey(t, etypeID.AES128_CTS_HMAC_SHA1_96)

		fresh := func() (*gssLayer, *gssLayer) {
			return testLayer(t, key, conf, true), testLayer(t, key, conf, false)
		}
		tests := []struct {
			name  string
			alter func(c, s *gssLayer, tok []byte) []byte
		}{
			{"payload byte flipped", func(_, _ *gssLayer, tok []byte) []byte { tok[len(tok)/2+8] ^= 1; return tok }},
			{"checksum byte flipped", func(_, _ *gssLayer, tok []byte) []byte { tok[len(tok)-1] ^= 1; return tok }},
			{"sequence number changed", func(_, _ *gssLayer, tok []byte) []byte { tok[15] ^= 1; return tok }},
			{"truncated", func(_, _ *gssLayer, tok []byte) []byte { return tok[:20] }},
			{"header only", func(_, _ *gssLayer, tok []byte) []byte { return tok[:16] }},
			{"not a wrap token", func(_, _ *gssLayer, tok []byte) []byte { tok[1] = 0x05; return tok }},
			{"sealed flag flipped", func(_, _ *gssLayer, tok []byte) []byte { tok[2] ^= gssFlagSealed; return tok }},
			{"acceptor subkey flag", func(_, _ *gssLayer, tok []byte) []byte { tok[2] |= gssFlagAccSubkey; return tok }},
			{"reflected back to its sender", func(_, s *gssLayer, _ []byte) []byte {
				got, err := s.wrapToken([]byte("x"), conf, 0)
				require.NoError(t, err)
				return got
			}},
			{"replayed", func(_, s *gssLayer, tok []byte) []byte {
				_, err := s.Unwrap(append([]byte{}, tok...))
				require.NoError(t, err)
				return tok
			}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				c, s := fresh()
				tok, err := c.Wrap([]byte("the message that must arrive intact"))
				require.NoError(t, err)
				_, err = s.Unwrap(tt.alter(c, s, tok))
				require.ErrorIs(t, err, ErrIntegrity)
			})
		}
	}
}

func TestGSSLayerWrongKey(t *testing.T) {
	key := aesKey(t, etypeID.AES256_CTS_HMAC_SHA1_96)
	other := aesKey(t, etypeID.AES256_CTS_HMAC_SHA1_96)
	other.KeyValue[3] ^= 0x40
	for _, conf := range []bool{false, true} {
		tok, err := testLayer(t, key, conf, false).Wrap([]byte("hello"))
		require.NoError(t, err)
		_, err = testLayer(t, other, conf, true).Unwrap(tok)
		require.ErrorIs(t, err, ErrIntegrity)
	}
}

// FuzzGSSUnwrap feeds arbitrary tokens to both kinds of initiator layer:
// they must never panic, and never accept a token the key did not make.
func FuzzGSSUnwrap(f *testing.F) {
	key := krbtypes.EncryptionKey{KeyType: etypeID.AES128_CTS_HMAC_SHA1_96, KeyValue: bytes.Repeat([]byte{7}, 16)}
	for _, conf := range []bool{false, true} {
		acc, err := newGSSLayer(key, conf, false)
		require.NoError(f, err)
		for _, m := range []string{"", "x", "a longer message of a few blocks......"} {
			tok, err := acc.Wrap([]byte(m))
			require.NoError(f, err)
			f.Add(tok)
		}
	}
	f.Add([]byte{5, 4, 1, 0xff, 0, 12, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Add([]byte{5, 4, 3, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3})
	f.Fuzz(func(t *testing.T, tok []byte) {
		for _, conf := range []bool{false, true} {
			l, err := newGSSLayer(key, conf, true)
			require.NoError(t, err)
			msg, err := l.Unwrap(tok)
			if err != nil {
				require.ErrorIs(t, err, ErrIntegrity)
				continue
			}
			// Accepted: it must be exactly what the acceptor makes for msg.
			acc, err := newGSSLayer(key, conf, false)
			require.NoError(t, err)
			acc.sendSeq = binary.BigEndian.Uint64(tok[8:16])
			if !conf {
				again, err := acc.Wrap(msg)
				require.NoError(t, err)
				if tok[6] == 0 && tok[7] == 0 { // RRC 0: the very same bytes
					require.Equal(t, tok, again)
				} else {
					require.Len(t, again, len(tok))
				}
			}
		}
	})
}

// BenchmarkLayers compares the security layers side by side: one Wrap and
// one Unwrap of a message per op.
//
//	go test -run XXX -bench Layers -benchtime 2000x ./yarn/internal/sasl/
func BenchmarkLayers(b *testing.B) {
	key := krbtypes.EncryptionKey{KeyType: etypeID.AES256_CTS_HMAC_SHA1_96, KeyValue: bytes.Repeat([]byte{9}, 32)}
	ha1 := bytes.Repeat([]byte{3}, 16)
	type pair struct{ send, recv Layer }
	layers := []struct {
		name string
		mk   func() (pair, error)
	}{
		{"gssapi-integrity-aes256", func() (pair, error) {
			s, err := newGSSLayer(key, false, true)
			if err != nil {
				return pair{}, err
			}
			r, err := newGSSLayer(key, false, false)
			return pair{s, r}, err
		}},
		{"gssapi-privacy-aes256", func() (pair, error) {
			s, err := newGSSLayer(key, true, true)
			if err != nil {
				return pair{}, err
			}
			r, err := newGSSLayer(key, true, false)
			return pair{s, r}, err
		}},
		{"digest-auth-int", func() (pair, error) {
			s, err := newDigestLayer(ha1, qopInt, "", true, 65536)
			if err != nil {
				return pair{}, err
			}
			r, err := newDigestLayer(ha1, qopInt, "", false, 65536)
			return pair{s, r}, err
		}},
		{"digest-auth-conf-rc4", func() (pair, error) {
			s, err := newDigestLayer(ha1, qopConf, "rc4", true, 65536)
			if err != nil {
				return pair{}, err
			}
			r, err := newDigestLayer(ha1, qopConf, "rc4", false, 65536)
			return pair{s, r}, err
		}},
	}
	for _, size := range []int{256, 64 << 10} {
		msg := bytes.Repeat([]byte{1}, size)
		for _, l := range layers {
			b.Run(fmt.Sprintf("%s/%dB", l.name, size), func(b *testing.B) {
				p, err := l.mk()
				require.NoError(b, err)
				b.SetBytes(int64(size))
				for b.Loop() {
					tok, err := p.send.Wrap(msg)
					if err != nil {
						b.Fatal(err)
					}
					if _, err := p.recv.Unwrap(tok); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
