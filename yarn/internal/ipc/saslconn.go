package ipc

import (
	"fmt"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/xres/xres/hadoopproto/hadoopcommon"
	"github.com/xres/xres/yarn/internal/sasl"
)

// saslConnect runs Hadoop's SASL exchange (call id -33 both ways):
//
//	client                                   server
//	NEGOTIATE                        ──►
//	                                 ◄──     NEGOTIATE auths=[{TOKEN, DIGEST-MD5, "", "default", challenge}, …]
//	INITIATE token=r0 auths=[picked] ──►     (picked = the offer, minus challenge)
//	                                 ◄──     CHALLENGE token=c1   (repeat as needed)
//	RESPONSE token=r1                ──►
//	                                 ◄──     SUCCESS token=proof
//
// A server that only allows SIMPLE answers the first NEGOTIATE with
// SUCCESS; xres then refuses, since it was configured for SASL.
func (c *Conn) saslConnect(mech sasl.Mechanism) error {
	send := func(m *hadoopcommon.RpcSaslProto) error {
		pkt, err := encodePacket(requestHeader(callIDSASL, []byte{}, invalidRetryCount), m)
		if err != nil {
			return err
		}
		if _, err := c.nc.Write(pkt); err != nil {
			return &NetError{Op: "write", Addr: c.cfg.Addr, Err: err}
		}
		return nil
	}
	recv := func() (*hadoopcommon.RpcSaslProto, error) {
		p, err := readPacket(c.br)
		if err != nil {
			return nil, &NetError{Op: "read", Addr: c.cfg.Addr, Err: err}
		}
		r, err := decodeResponse(p)
		if err != nil {
			return nil, err
		}
		// Status first: failures come back on call id -1.
		if r.status != hadoopcommon.RpcResponseHeaderProto_SUCCESS {
			return nil, fmt.Errorf("sasl %s: %w", c.cfg.Addr, remoteError("sasl", r.header))
		}
		if id := r.callID; id != callIDSASL {
			return nil, fmt.Errorf("%w: sasl reply on call id %d", ErrFrame, id)
		}
		m := &hadoopcommon.RpcSaslProto{}
		if err := proto.Unmarshal(r.body, m); err != nil {
			return nil, fmt.Errorf("%w: sasl message: %v", ErrFrame, err)
		}
		return m, nil
	}

	if err := send(&hadoopcommon.RpcSaslProto{State: hadoopcommon.RpcSaslProto_NEGOTIATE.Enum()}); err != nil {
		return err
	}
	m, err := recv()
	if err != nil {
		return err
	}
	if m.GetState() == hadoopcommon.RpcSaslProto_SUCCESS {
		return fmt.Errorf("sasl %s: server allows SIMPLE authentication only, client is set up for %s", c.cfg.Addr, mech.Method())
	}
	if m.GetState() != hadoopcommon.RpcSaslProto_NEGOTIATE {
		return fmt.Errorf("sasl %s: %w: got %s, want NEGOTIATE", c.cfg.Addr, ErrFrame, m.GetState())
	}
	var picked *hadoopcommon.RpcSaslProto_SaslAuth
	var offered []string
	for _, a := range m.GetAuths() {
		offered = append(offered, a.GetMethod()+"/"+a.GetMechanism())
		if picked == nil && a.GetMethod() == mech.Method() && a.GetMechanism() == mech.Mechanism() {
			picked = a
		}
	}
	if picked == nil {
		return fmt.Errorf("sasl %s: %w: server offers [%s], client has %s/%s",
			c.cfg.Addr, ErrUnauthorized, strings.Join(offered, " "), mech.Method(), mech.Mechanism())
	}
	token, err := mech.Start(picked.GetProtocol(), picked.GetServerId(), picked.GetChallenge())
	if err != nil {
		return fmt.Errorf("sasl %s %s: %w", c.cfg.Addr, mech.Mechanism(), err)
	}
	echo := proto.Clone(picked).(*hadoopcommon.RpcSaslProto_SaslAuth)
	echo.Challenge = nil
	if echo.Protocol == nil {
		echo.Protocol = proto.String("")
	}
	out := &hadoopcommon.RpcSaslProto{
		State: hadoopcommon.RpcSaslProto_INITIATE.Enum(),
		Token: token,
		Auths: []*hadoopcommon.RpcSaslProto_SaslAuth{echo},
	}
	for {
		if err := send(out); err != nil {
			return err
		}
		m, err := recv()
		if err != nil {
			return err
		}
		switch m.GetState() {
		case hadoopcommon.RpcSaslProto_SUCCESS:
			if err := mech.Finish(m.GetToken()); err != nil {
				return fmt.Errorf("sasl %s %s: %w", c.cfg.Addr, mech.Mechanism(), err)
			}
			return nil
		case hadoopcommon.RpcSaslProto_CHALLENGE:
			resp, err := mech.Next(m.GetToken())
			if err != nil {
				return fmt.Errorf("sasl %s %s: %w", c.cfg.Addr, mech.Mechanism(), err)
			}
			out = &hadoopcommon.RpcSaslProto{State: hadoopcommon.RpcSaslProto_RESPONSE.Enum(), Token: resp}
		default:
			return fmt.Errorf("sasl %s: %w: unexpected state %s", c.cfg.Addr, ErrFrame, m.GetState())
		}
	}
}
