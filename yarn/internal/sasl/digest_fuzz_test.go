package sasl

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
)

// digestChallenge is a Hadoop server's DIGEST-MD5 challenge offering every
// qop.
const digestChallenge = `realm="default",nonce="OA6MG9tEQGm2hh",qop="auth,auth-int,auth-conf",cipher="rc4,3des,des",maxbuf=65536,charset=utf-8,algorithm=md5-sess`

// FuzzDigestChallenge feeds arbitrary first challenges and then arbitrary
// final messages (rspauth) to the client: never a panic; a response it
// gives parses back with the challenge's nonce and realm as sent; a final
// message it accepts carries the server's proof for this exchange (the
// rspauth a real server computes), nothing else.
func FuzzDigestChallenge(f *testing.F) {
	f.Add([]byte(digestChallenge), []byte("rspauth=0123"))
	f.Add([]byte(`nonce="a\"b\\c",algorithm=md5-sess,qop="auth"`), []byte(""))
	f.Add([]byte(`nonce=x,algorithm=md5-sess,qop=auth-conf,cipher=rc4,maxbuf=63`), []byte(`rspauth=""`))
	f.Add([]byte(`realm="r",nonce="n",algorithm=MD5-SESS`), []byte(`rspauth="x",rspauth="y"`))
	f.Fuzz(func(t *testing.T, challenge, final []byte) {
		m := &DigestMD5{Username: "user", Password: "secret", CNonce: func() (string, error) { return "cnonce", nil }}
		resp, err := m.Start("yarn", "rm.example", challenge)
		if err != nil || len(resp) == 0 {
			return
		}
		d, err := ParseDirectives(resp)
		require.NoError(t, err, "the client's response does not parse: %s", resp)
		c, err := ParseDirectives(challenge)
		require.NoError(t, err)
		require.Equal(t, c.Get("nonce"), d.Get("nonce"), "the nonce comes back as sent")
		require.Equal(t, c.Get("realm"), d.Get("realm"))
		require.Equal(t, "user", d.Get("username"))

		_, proof, _ := digestResponse("user", c.Get("realm"), "secret", c.Get("nonce"), "cnonce", "00000001", "yarn/rm.example", d.Get("qop"))
		if err := m.Finish(final); err == nil && len(final) > 0 {
			f, perr := ParseDirectives(final)
			require.NoError(t, perr)
			require.Equal(t, proof, f.Get("rspauth"), "accepted a final message without the server's proof: %q", final)
		}
		good := []byte("rspauth=" + proof)
		require.NoError(t, (&DigestMD5{Username: "user", Password: "secret", CNonce: m.CNonce, wantProof: proof}).Finish(good))
	})
}

// FuzzDigestUnwrap feeds arbitrary tokens to the integrity and privacy
// layers (every cipher): never a panic, and no token is accepted that the
// peer did not wrap (a forged one fails the MAC). A message the peer wraps
// unwraps to itself, once.
func FuzzDigestUnwrap(f *testing.F) {
	f.Add([]byte("hello"), []byte{0, 1, 0, 0, 0, 0})
	f.Add([]byte{}, bytes.Repeat([]byte{0xff}, 32))
	f.Add(bytes.Repeat([]byte{7}, 100), append(bytes.Repeat([]byte{8}, 24), 0, 1, 0, 0, 0, 0))
	ha1 := bytes.Repeat([]byte{0x5a}, 16)
	type pair struct {
		qop, cipher string
	}
	pairs := []pair{{qopInt, ""}, {qopConf, "rc4"}, {qopConf, "3des"}, {qopConf, "des"}, {qopConf, "rc4-56"}, {qopConf, "rc4-40"}}
	f.Fuzz(func(t *testing.T, msg, token []byte) {
		for _, p := range pairs {
			client, err := newDigestLayer(ha1, p.qop, p.cipher, true, 65536)
			require.NoError(t, err)
			server, err := newDigestLayer(ha1, p.qop, p.cipher, false, 65536)
			require.NoError(t, err)
			if got, err := server.Unwrap(token); err == nil {
				t.Fatalf("%s/%s: a token nobody wrapped was accepted: %x → %x", p.qop, p.cipher, token, got)
			}
			// A refused token ends the connection (the stream cipher's
			// state has moved on): the round trip runs on a new one.
			server, err = newDigestLayer(ha1, p.qop, p.cipher, false, 65536)
			require.NoError(t, err)
			w, err := client.Wrap(msg)
			require.NoError(t, err)
			got, err := server.Unwrap(w)
			require.NoError(t, err, "%s/%s", p.qop, p.cipher)
			require.Equal(t, string(msg), string(got))
			_, err = server.Unwrap(w)
			require.Error(t, err, "%s/%s: a replayed token was accepted", p.qop, p.cipher)
		}
	})
}
