package yarntest

import (
	"github.com/jcmturner/gokrb5/v8/crypto"
	"github.com/jcmturner/gokrb5/v8/gssapi"
	"github.com/jcmturner/gokrb5/v8/iana/keyusage"
	"github.com/jcmturner/gokrb5/v8/service"
	"github.com/jcmturner/gokrb5/v8/spnego"

	"github.com/xres/xres/hadoopproto/hadoopcommon"
)

// kerberosServe runs the server side of GSSAPI after the client's INITIATE:
// check the AP-REQ with the keytab, offer "no security layer" in a wrap
// token sealed with the session key, check the client's wrap token.
func (s *Server) kerberosServe(c *serverConn, info *ConnInfo, token []byte,
	readSasl func() (*hadoopcommon.RpcSaslProto, bool), reply func(*hadoopcommon.RpcSaslProto)) bool {
	deny := func(msg string) bool {
		c.fatal("javax.security.sasl.SaslException", "GSS initiate failed: "+msg, fatalUnauthorized)
		return false
	}
	var tok spnego.KRB5Token
	if err := tok.Unmarshal(token); err != nil || !tok.IsAPReq() {
		return deny("not a KRB5 AP-REQ")
	}
	ok, creds, err := service.VerifyAPREQ(&tok.APReq, service.NewSettings(s.keytab))
	if err != nil || !ok {
		return deny("ticket does not verify")
	}
	key := tok.APReq.Ticket.DecryptedEncPart.Key
	et, err := crypto.GetEtype(key.KeyType)
	if err != nil {
		return deny("unknown key type")
	}
	offer := &gssapi.WrapToken{Flags: 0x01, EC: uint16(et.GetHMACBitLength() / 8), Payload: []byte{0x01, 0x00, 0x10, 0x00}}
	if err := offer.SetCheckSum(key, keyusage.GSSAPI_ACCEPTOR_SEAL); err != nil {
		return deny("seal offer")
	}
	b, err := offer.Marshal()
	if err != nil {
		return deny("marshal offer")
	}
	reply(&hadoopcommon.RpcSaslProto{State: hadoopcommon.RpcSaslProto_CHALLENGE.Enum(), Token: b})
	m, ok := readSasl()
	if !ok || m.GetState() != hadoopcommon.RpcSaslProto_RESPONSE {
		return false
	}
	var answer gssapi.WrapToken
	if err := answer.Unmarshal(m.GetToken(), false); err != nil {
		return deny("bad wrap token")
	}
	if ok, _ := answer.Verify(key, keyusage.GSSAPI_INITIATOR_SEAL); !ok || len(answer.Payload) < 4 || answer.Payload[0] != 0x01 {
		return deny("security layer answer does not verify")
	}
	info.Principal = creds.UserName() + "@" + creds.Domain()
	reply(&hadoopcommon.RpcSaslProto{State: hadoopcommon.RpcSaslProto_SUCCESS.Enum()})
	return true
}
