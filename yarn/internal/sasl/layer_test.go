package sasl

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// handshake runs a DIGEST-MD5 exchange between our client and server and
// returns both security layers.
func handshake(t *testing.T, qop, ciphers string) (client, server Layer, chosen string) {
	t.Helper()
	user, pass := TokenCredentials([]byte("ident"), []byte("pw"))
	srv := &DigestServer{Realm: "default", Nonce: "bm9uY2U=", QOP: qop, Ciphers: ciphers,
		Password: func(u string) (string, error) {
			if u != user {
				return "", errors.New("unknown")
			}
			return pass, nil
		}}
	c := &DigestMD5{Username: user, Password: pass}
	out, err := c.Start("", "default", srv.Challenge())
	require.NoError(t, err)
	d, err := ParseDirectives(out)
	require.NoError(t, err)
	reply, _, sl, err := srv.VerifyLayer(out, "/default")
	require.NoError(t, err)
	require.NoError(t, c.Finish(reply))
	return c.Layer(), sl, d.Get("qop") + "/" + d.Get("cipher")
}

func TestDigestLayerRoundTrip(t *testing.T) {
	tests := []struct {
		qop, ciphers, want string
	}{
		{"auth", "", "auth/"},
		{"auth-int", "", "auth-int/"},
		{"auth,auth-int,auth-conf", "", "auth-conf/rc4"},
		{"auth-conf", "3des", "auth-conf/3des"},
		{"auth-conf", "des", "auth-conf/des"},
		{"auth-conf", "rc4-56", "auth-conf/rc4-56"},
		{"auth-conf", "rc4-40", "auth-conf/rc4-40"},
	}
	for _, tt := range tests {
		t.Run(tt.qop+"/"+tt.ciphers, func(t *testing.T) {
			cl, sl, chosen := handshake(t, tt.qop, tt.ciphers)
			require.Equal(t, tt.want, chosen, "strongest qop is chosen")
			if tt.qop == "auth" {
				require.Nil(t, cl)
				require.Nil(t, sl)
				return
			}
			require.NotNil(t, cl)
			// Several messages each way: sequence numbers and cipher state
			// must stay in step.
			for i := 0; i < 5; i++ {
				msg := bytes.Repeat([]byte{byte(i)}, 1+i*37)
				w, err := cl.Wrap(msg)
				require.NoError(t, err)
				if tt.qop != "auth-int" && len(msg) > 8 {
					require.False(t, bytes.Contains(w, msg[:8]), "auth-conf hides the message")
				}
				got, err := sl.Unwrap(w)
				require.NoError(t, err)
				require.Equal(t, msg, got)

				back := []byte(fmt.Sprintf("answer %d", i))
				w, err = sl.Wrap(back)
				require.NoError(t, err)
				got, err = cl.Unwrap(w)
				require.NoError(t, err)
				require.Equal(t, back, got)
			}
		})
	}
}

func TestDigestLayerRejects(t *testing.T) {
	for _, qop := range []string{"auth-int", "auth-conf"} {
		t.Run(qop, func(t *testing.T) {
			cl, sl, _ := handshake(t, qop, "rc4")
			w, err := cl.Wrap([]byte("first message"))
			require.NoError(t, err)
			tampered := append([]byte{}, w...)
			tampered[0] ^= 1
			_, err = sl.Unwrap(tampered)
			require.ErrorIs(t, err, ErrIntegrity)

			cl, sl, _ = handshake(t, qop, "rc4")
			w1, err := cl.Wrap([]byte("one"))
			require.NoError(t, err)
			w2, err := cl.Wrap([]byte("two"))
			require.NoError(t, err)
			_, err = sl.Unwrap(w2)
			require.ErrorIs(t, err, ErrIntegrity, "out of order")
			_, err = sl.Unwrap([]byte("short"))
			require.ErrorIs(t, err, ErrIntegrity)
			_ = w1
		})
	}
}

func TestDESParity(t *testing.T) {
	k := desParity([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	require.Equal(t, []byte{0xfe, 0xfe, 0xfe, 0xfe, 0xfe, 0xfe, 0xfe, 0xfe}, k)
	k = desParity([]byte{0, 0, 0, 0, 0, 0, 0})
	require.Equal(t, []byte{1, 1, 1, 1, 1, 1, 1, 1}, k)
}
