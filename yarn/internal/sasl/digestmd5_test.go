package sasl

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

// RFC 2831 §4, the IMAP example: user chris, password secret.
func TestDigestMD5RFC2831Example(t *testing.T) {
	resp, proof, _ := digestResponse("chris", "elwood.innosoft.com", "secret",
		"OA6MG9tEQGm2hh", "OA6MHXh6VqTrRk", "00000001", "imap/elwood.innosoft.com", "auth")
	require.Equal(t, "d388dad90d4bbd760a152321f2143af7", resp)
	require.Equal(t, "ea40f60335c427b5527b84dbabcdfffd", proof)
}

func TestDigestMD5ClientRFC2831(t *testing.T) {
	m := &DigestMD5{Username: "chris", Password: "secret",
		CNonce: func() (string, error) { return "OA6MHXh6VqTrRk", nil }}
	challenge := []byte(`realm="elwood.innosoft.com",nonce="OA6MG9tEQGm2hh",qop="auth",algorithm=md5-sess,charset=utf-8`)
	out, err := m.Start("imap", "elwood.innosoft.com", challenge)
	require.NoError(t, err)
	d, err := ParseDirectives(out)
	require.NoError(t, err)
	require.Equal(t, "d388dad90d4bbd760a152321f2143af7", d.Get("response"))
	require.Equal(t, "imap/elwood.innosoft.com", d.Get("digest-uri"))
	require.Equal(t, "chris", d.Get("username"))
	require.Equal(t, "auth", d.Get("qop"))
	require.NoError(t, m.Finish([]byte("rspauth=ea40f60335c427b5527b84dbabcdfffd")))
	require.ErrorIs(t, m.Finish([]byte("rspauth=00000000000000000000000000000000")), ErrServerProof)
}

func TestDigestMD5AgainstServer(t *testing.T) {
	user, pass := TokenCredentials([]byte{0, 1, 2, 0xff}, []byte("s3cret"))
	srv := &DigestServer{Realm: "default", Nonce: "n0nce", Password: func(u string) (string, error) {
		if u != user {
			return "", errors.New("unknown token")
		}
		return pass, nil
	}}
	tests := []struct {
		name    string
		pass    string
		wantErr error
	}{
		{"right password", pass, nil},
		{"wrong password", "d3JvbmcK", ErrBadResponse},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &DigestMD5{Username: user, Password: tt.pass}
			out, err := c.Start("", "default", srv.Challenge())
			require.NoError(t, err)
			reply, gotUser, err := srv.Verify(out, "/default")
			require.Equal(t, user, gotUser)
			if tt.wantErr != nil {
				require.ErrorIs(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.NoError(t, c.Finish(reply))
		})
	}
}

func TestDigestMD5ChallengeErrors(t *testing.T) {
	tests := []struct {
		name      string
		challenge string
		wantErr   error
	}{
		{"privacy with no cipher we have", `realm="default",nonce="x",qop="auth-conf",cipher="aes-gcm",algorithm=md5-sess`, ErrQOP},
		{"unknown qop only", `realm="default",nonce="x",qop="auth-foo",algorithm=md5-sess`, ErrQOP},
		{"no nonce", `realm="default",qop="auth",algorithm=md5-sess`, ErrBadChallenge},
		{"wrong algorithm", `nonce="x",algorithm=md5`, ErrBadChallenge},
		{"unterminated quote", `nonce="x`, ErrBadChallenge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &DigestMD5{Username: "u", Password: "p"}
			_, err := c.Start("", "default", []byte(tt.challenge))
			require.ErrorIs(t, err, tt.wantErr)
		})
	}
	t.Run("qop error names the hadoop key", func(t *testing.T) {
		c := &DigestMD5{Username: "u", Password: "p", AuthOnly: true}
		_, err := c.Start("", "default", []byte(`nonce="x",qop="auth-conf",cipher="rc4",algorithm=md5-sess`))
		require.ErrorIs(t, err, ErrQOP)
		require.ErrorContains(t, err, "hadoop.rpc.protection")
	})
}

func TestDigestMD5StringRedacts(t *testing.T) {
	c := &DigestMD5{Username: "dXNlcg==", Password: "cGFzc3dvcmQ="}
	require.NotContains(t, c.String(), "cGFzc3dvcmQ=")
}
