package sasl

import (
	"testing"
	"time"

	"github.com/jcmturner/gofork/encoding/asn1"
	krbclient "github.com/jcmturner/gokrb5/v8/client"
	krbconfig "github.com/jcmturner/gokrb5/v8/config"
	"github.com/jcmturner/gokrb5/v8/crypto"
	"github.com/jcmturner/gokrb5/v8/gssapi"
	"github.com/jcmturner/gokrb5/v8/iana/etypeID"
	"github.com/jcmturner/gokrb5/v8/iana/keyusage"
	"github.com/jcmturner/gokrb5/v8/iana/nametype"
	"github.com/jcmturner/gokrb5/v8/keytab"
	"github.com/jcmturner/gokrb5/v8/messages"
	"github.com/jcmturner/gokrb5/v8/service"
	"github.com/jcmturner/gokrb5/v8/spnego"
	krbtypes "github.com/jcmturner/gokrb5/v8/types"
	"github.com/stretchr/testify/require"
)

func testKey(t *testing.T) krbtypes.EncryptionKey {
	et, err := crypto.GetEtype(etypeID.AES256_CTS_HMAC_SHA1_96)
	require.NoError(t, err)
	key := make([]byte, et.GetKeyByteSize())
	for i := range key {
		key[i] = byte(i)
	}
	return krbtypes.EncryptionKey{KeyType: etypeID.AES256_CTS_HMAC_SHA1_96, KeyValue: key}
}

// acceptorToken builds the wrap token a Hadoop server sends after the AP-REQ.
func acceptorToken(t *testing.T, key krbtypes.EncryptionKey, payload []byte) []byte {
	et, err := crypto.GetEtype(key.KeyType)
	require.NoError(t, err)
	wt := &gssapi.WrapToken{Flags: 0x01, EC: uint16(et.GetHMACBitLength() / 8), Payload: payload}
	require.NoError(t, wt.SetCheckSum(key, keyusage.GSSAPI_ACCEPTOR_SEAL))
	b, err := wt.Marshal()
	require.NoError(t, err)
	return b
}

// The server's offer (RFC 4752 §3.1: layer bitmask, 24-bit max buffer) is
// answered with the strongest layer offered and our buffer size, in an
// initiator wrap token that gokrb5's own WrapToken verifies.
func TestGSSAPISecurityLayer(t *testing.T) {
	key := testKey(t)
	tests := []struct {
		name     string
		authOnly bool
		token    func() []byte
		wantErr  error
		wantResp []byte
		wantConf bool // privacy layer (when a layer is wanted)
		wantMax  int  // MaxSend of the layer; 0: no layer
	}{
		{name: "all offered: privacy", token: func() []byte { return acceptorToken(t, key, []byte{0x07, 0, 0x10, 0}) },
			wantResp: []byte{0x04, 0x01, 0, 0}, wantConf: true, wantMax: 0x1000 - 16 - 12 - 16 - 16},
		{name: "privacy only", token: func() []byte { return acceptorToken(t, key, []byte{0x04, 0x01, 0, 0}) },
			wantResp: []byte{0x04, 0x01, 0, 0}, wantConf: true, wantMax: 0x10000 - 60},
		{name: "integrity and none: integrity", token: func() []byte { return acceptorToken(t, key, []byte{0x03, 0, 0x10, 0}) },
			wantResp: []byte{0x02, 0x01, 0, 0}, wantMax: 0x1000 - 16 - 12},
		{name: "none only", token: func() []byte { return acceptorToken(t, key, []byte{0x01, 0, 0, 0}) },
			wantResp: []byte{0x01, 0, 0, 0}},
		{name: "auth only client, all offered", authOnly: true, token: func() []byte { return acceptorToken(t, key, []byte{0x07, 0, 0x10, 0}) },
			wantResp: []byte{0x01, 0, 0, 0}},
		{name: "auth only client, privacy demanded", authOnly: true, token: func() []byte { return acceptorToken(t, key, []byte{0x04, 0, 0x10, 0}) },
			wantErr: ErrQOP},
		{name: "nothing offered", token: func() []byte { return acceptorToken(t, key, []byte{0x00, 0, 0x10, 0}) }, wantErr: ErrQOP},
		{name: "server buffer too small", token: func() []byte { return acceptorToken(t, key, []byte{0x04, 0, 0, 60}) }, wantErr: ErrBadChallenge},
		{name: "bad payload size", token: func() []byte { return acceptorToken(t, key, []byte{0x01}) }, wantErr: ErrBadChallenge},
		{name: "not a wrap token", token: func() []byte { return []byte{1, 2, 3} }, wantErr: ErrBadChallenge},
		{name: "initiator's token", token: func() []byte {
			wt, err := gssapi.NewInitiatorWrapToken([]byte{0x01, 0, 0, 0}, key)
			require.NoError(t, err)
			b, err := wt.Marshal()
			require.NoError(t, err)
			return b
		}, wantErr: ErrBadChallenge},
		{name: "signed with another key", token: func() []byte {
			other := testKey(t)
			other.KeyValue[0] ^= 0xff
			return acceptorToken(t, other, []byte{0x01, 0, 0, 0})
		}, wantErr: ErrServerProof},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := &GSSAPI{key: key, started: true, AuthOnly: tt.authOnly}
			out, err := g.Next(tt.token())
			if tt.wantErr != nil {
				require.ErrorIs(t, err, tt.wantErr)
				require.Nil(t, g.Layer())
				return
			}
			require.NoError(t, err)
			var wt gssapi.WrapToken
			require.NoError(t, wt.Unmarshal(out, false))
			ok, err := wt.Verify(key, keyusage.GSSAPI_INITIATOR_SEAL)
			require.NoError(t, err)
			require.True(t, ok)
			require.Equal(t, tt.wantResp, wt.Payload)
			require.Zero(t, wt.SndSeqNum, "the first initiator token")
			if tt.wantMax == 0 {
				require.Nil(t, g.Layer())
				return
			}
			l, ok := g.Layer().(*gssLayer)
			require.True(t, ok)
			require.Equal(t, tt.wantConf, l.conf)
			require.Equal(t, tt.wantMax, l.MaxSend())
			require.Equal(t, uint64(1), l.sendSeq, "data tokens continue after the negotiation token")
			require.Equal(t, uint64(1), l.recvSeq, "the acceptor's next token follows its offer")
		})
	}
}

// With an aes256-cts-hmac-sha384-192 session key (which gokrb5 cannot
// encrypt with) privacy is never chosen: integrity when offered, else ErrQOP.
func TestGSSAPINoPrivacyForSHA384(t *testing.T) {
	key := aesKey(t, etypeID.AES256_CTS_HMAC_SHA384_192)
	g := &GSSAPI{key: key, started: true}
	out, err := g.Next(acceptorToken(t, key, []byte{0x06, 0x01, 0, 0}))
	require.NoError(t, err)
	var wt gssapi.WrapToken
	require.NoError(t, wt.Unmarshal(out, false))
	require.Equal(t, []byte{0x02, 0x01, 0, 0}, wt.Payload)
	require.False(t, g.Layer().(*gssLayer).conf)

	g = &GSSAPI{key: key, started: true}
	_, err = g.Next(acceptorToken(t, key, []byte{0x04, 0x01, 0, 0}))
	require.ErrorIs(t, err, ErrQOP)
	require.ErrorContains(t, err, "enctype 20")
}

func TestGSSAPIOldEnctype(t *testing.T) {
	key := krbtypes.EncryptionKey{KeyType: etypeID.RC4_HMAC, KeyValue: make([]byte, 16)}
	_, err := (&GSSAPI{key: key, started: true}).Next([]byte{5, 4, 1, 0xff})
	require.ErrorIs(t, err, ErrKerberos)
	require.ErrorContains(t, err, "enctype 23")
}

func TestGSSAPIStartErrors(t *testing.T) {
	_, err := (&GSSAPI{}).Start("rm", "host", nil)
	require.ErrorIs(t, err, ErrKerberos)
	_, err = (&GSSAPI{}).Next([]byte{1})
	require.ErrorIs(t, err, ErrKerberos)
}

// Start's AP-REQ is accepted by a Kerberos acceptor holding the service's
// keytab, for the principal protocol/serverId the server offered. The
// ticket is made locally (no KDC): the KDC exchange itself is gokrb5's.
func TestGSSAPIStartAPREQ(t *testing.T) {
	const realm = "EXAMPLE.COM"
	kt := keytab.New()
	require.NoError(t, kt.AddEntry("rm/rmhost.example.com", realm, "service-secret", time.Now(), 1, etypeID.AES256_CTS_HMAC_SHA1_96))
	cfg, err := krbconfig.NewFromString("[libdefaults]\n default_realm = " + realm + "\n")
	require.NoError(t, err)
	cl := krbclient.NewWithPassword("alice", realm, "user-secret", cfg, krbclient.DisablePAFXFAST(true))

	var asked string
	g := &GSSAPI{Client: cl, GetTicket: func(spn string) (messages.Ticket, krbtypes.EncryptionKey, error) {
		asked = spn
		now := time.Now().UTC()
		return messages.NewTicket(
			krbtypes.NewPrincipalName(nametype.KRB_NT_PRINCIPAL, "alice"), realm,
			krbtypes.NewPrincipalName(nametype.KRB_NT_PRINCIPAL, spn), realm,
			asn1.BitString{Bytes: make([]byte, 4), BitLength: 32}, kt, etypeID.AES256_CTS_HMAC_SHA1_96, 1,
			now, now, now.Add(time.Hour), now.Add(time.Hour))
	}}
	out, err := g.Start("rm", "rmhost.example.com", nil)
	require.NoError(t, err)
	require.Equal(t, "rm/rmhost.example.com", asked)

	var tok spnego.KRB5Token
	require.NoError(t, tok.Unmarshal(out))
	require.True(t, tok.IsAPReq())
	ok, creds, err := service.VerifyAPREQ(&tok.APReq, service.NewSettings(kt))
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "alice", creds.UserName())

	// The acceptor's security-layer offer, sealed with the ticket's session
	// key, is answered.
	resp, err := g.Next(acceptorToken(t, g.key, []byte{0x01, 0, 0x10, 0}))
	require.NoError(t, err)
	var wt gssapi.WrapToken
	require.NoError(t, wt.Unmarshal(resp, false))
	ok, err = wt.Verify(g.key, keyusage.GSSAPI_INITIATOR_SEAL)
	require.NoError(t, err)
	require.True(t, ok)
}
