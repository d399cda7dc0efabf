// Package yarntest runs in-process fakes of a ResourceManager or a
// NodeManager that speak real Hadoop IPC on loopback: preamble, SASL (SIMPLE,
// or TOKEN with DIGEST-MD5 checked against registered tokens), connection
// context, framed calls answered concurrently and out of order, standby
// mode, and hang-ups mid-call. Tests register a Handler per method.
package yarntest

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jcmturner/gokrb5/v8/keytab"
	"google.golang.org/protobuf/proto"

	"github.com/xres/xres/hadoopproto/hadoopcommon"
	"github.com/xres/xres/yarn/internal/ipc"
	"github.com/xres/xres/yarn/internal/sasl"
)

// Call is one request as the server saw it.
type Call struct {
	Method   string
	Protocol string // declaringClassProtocolName
	Conn     *ConnInfo
	Body     []byte
}

// Decode unmarshals the request message.
func (c *Call) Decode(m proto.Message) error { return proto.Unmarshal(c.Body, m) }

// ConnInfo is what the server learnt while setting up a connection.
type ConnInfo struct {
	User       string // effectiveUser of the connection context (SIMPLE)
	Protocol   string // protocol of the connection context
	Identifier []byte // token identifier the client authenticated with (TOKEN)
	Principal  string // Kerberos client principal, user@REALM (KERBEROS)
}

// Handler answers one method.
type Handler func(ctx context.Context, call *Call) (proto.Message, error)

// Exception makes a Handler fail the call with a Java exception.
type Exception struct {
	Class   string
	Message string
}

func (e *Exception) Error() string { return e.Class + ": " + e.Message }

// ErrHangUp makes a Handler close the connection without answering.
var ErrHangUp = errors.New("yarntest: hang up")

// Options configure a Server.
type Options struct {
	// Token makes the server accept TOKEN authentication only, as the RM
	// scheduler port and NodeManagers do. Register tokens with AddToken.
	Token bool
	// QOP is the DIGEST-MD5 qop list offered with Token, as
	// hadoop.rpc.protection sets it: "auth" (default), "auth-int"
	// (integrity), "auth-conf" (privacy), or several, comma-separated.
	QOP string
	// Ciphers are the auth-conf ciphers offered ("" = the JDK's list).
	Ciphers string
	// Keytab, when set, makes the server accept KERBEROS (GSSAPI) for
	// Principal (service/host, e.g. "rm/localhost"), checking AP-REQs with
	// the keytab's keys, as a secure ResourceManager does.
	Keytab    *keytab.Keytab
	Principal string
}

// Server is a fake Hadoop RPC server on 127.0.0.1.
type Server struct {
	// Addr is host:port to dial.
	Addr string

	ln        net.Listener
	token     bool
	qop       string
	ciphers   string
	keytab    *keytab.Keytab
	principal string

	mu       sync.Mutex
	handlers map[string]Handler
	tokens   map[string][]byte // base64(identifier) → password
	standby  bool
	conns    map[net.Conn]struct{}
	closed   bool

	calls, pings, connects atomic.Int64
	ctx                    context.Context
	cancel                 context.CancelFunc
	wg                     sync.WaitGroup
}

// NewServer starts a server; it stops when the test ends.
func NewServer(t testing.TB, opt Options) *Server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("yarntest: listen: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{
		Addr: ln.Addr().String(), ln: ln, token: opt.Token, qop: opt.QOP, ciphers: opt.Ciphers,
		keytab: opt.Keytab, principal: opt.Principal,
		handlers: map[string]Handler{}, tokens: map[string][]byte{},
		conns: map[net.Conn]struct{}{}, ctx: ctx, cancel: cancel,
	}
	s.wg.Add(1)
	go s.accept()
	t.Cleanup(s.Close)
	return s
}

// Handle registers h for method.
func (s *Server) Handle(method string, h Handler) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.handlers[method] = h
}

// AddToken lets a client authenticate with this identifier and password.
func (s *Server) AddToken(identifier, password []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tokens[base64.StdEncoding.EncodeToString(identifier)] = append([]byte(nil), password...)
}

// RemoveToken stops accepting a token (as an RM does once it retires a
// master key); established connections stay.
func (s *Server) RemoveToken(identifier []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.tokens, base64.StdEncoding.EncodeToString(identifier))
}

// SetStandby makes every call fail with StandbyException, as a standby RM.
func (s *Server) SetStandby(v bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.standby = v
}

// Calls counts calls received (answered or not).
func (s *Server) Calls() int64 { return s.calls.Load() }

// Pings counts pings received.
func (s *Server) Pings() int64 { return s.pings.Load() }

// Connects counts connections that completed set-up.
func (s *Server) Connects() int64 { return s.connects.Load() }

// DropConnections closes every open connection (the server keeps
// listening).
func (s *Server) DropConnections() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		_ = c.Close()
	}
}

// Close stops the server and closes every connection.
func (s *Server) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	s.mu.Unlock()
	s.cancel()
	_ = s.ln.Close()
	s.DropConnections()
	s.wg.Wait()
}

func (s *Server) accept() {
	defer s.wg.Done()
	for {
		nc, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			_ = nc.Close()
			return
		}
		s.conns[nc] = struct{}{}
		s.mu.Unlock()
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.serve(nc)
			s.mu.Lock()
			delete(s.conns, nc)
			s.mu.Unlock()
			_ = nc.Close()
		}()
	}
}

type serverConn struct {
	nc    net.Conn
	br    *bufio.Reader
	wmu   sync.Mutex
	layer sasl.Layer // set once SASL negotiated integrity or privacy
}

func (c *serverConn) send(callID int32, status hadoopcommon.RpcResponseHeaderProto_RpcStatusProto,
	class, msg string, code hadoopcommon.RpcResponseHeaderProto_RpcErrorCodeProto, body proto.Message) {
	h := &hadoopcommon.RpcResponseHeaderProto{
		CallId:              proto.Uint32(uint32(callID)),
		Status:              status.Enum(),
		ServerIpcVersionNum: proto.Uint32(9),
	}
	if status != hadoopcommon.RpcResponseHeaderProto_SUCCESS {
		h.ExceptionClassName = proto.String(class)
		h.ErrorMsg = proto.String(msg)
		h.ErrorDetail = code.Enum()
	}
	msgs := []proto.Message{h}
	if body != nil {
		msgs = append(msgs, body)
	}
	pkt, err := ipc.EncodePacket(msgs...)
	if err != nil {
		return
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.layer != nil {
		token, err := c.layer.Wrap(pkt)
		if err != nil {
			return
		}
		pkt, err = ipc.EncodePacket(&hadoopcommon.RpcResponseHeaderProto{
			CallId: proto.Uint32(uint32(0xffffffdf)), Status: hadoopcommon.RpcResponseHeaderProto_SUCCESS.Enum(),
		}, &hadoopcommon.RpcSaslProto{State: hadoopcommon.RpcSaslProto_WRAP.Enum(), Token: token})
		if err != nil {
			return
		}
	}
	_, _ = c.nc.Write(pkt)
}

// unwrapReader yields the plain request stream of a protected connection.
type unwrapReader struct {
	c   *serverConn
	src *bufio.Reader
	buf []byte
}

func (u *unwrapReader) Read(p []byte) (int, error) {
	for len(u.buf) == 0 {
		pkt, err := ipc.ReadPacket(u.src)
		if err != nil {
			return 0, err
		}
		h, rest, _, err := ipc.SplitDelimited(pkt)
		if err != nil {
			return 0, err
		}
		hdr := &hadoopcommon.RpcRequestHeaderProto{}
		if err := proto.Unmarshal(h, hdr); err != nil || hdr.GetCallId() != -33 {
			return 0, errors.New("yarntest: expected a SASL WRAP packet")
		}
		body, _, _, err := ipc.SplitDelimited(rest)
		if err != nil {
			return 0, err
		}
		m := &hadoopcommon.RpcSaslProto{}
		if err := proto.Unmarshal(body, m); err != nil || m.GetState() != hadoopcommon.RpcSaslProto_WRAP {
			return 0, errors.New("yarntest: expected a SASL WRAP message")
		}
		if u.buf, err = u.c.layer.Unwrap(m.GetToken()); err != nil {
			return 0, err
		}
	}
	n := copy(p, u.buf)
	u.buf = u.buf[n:]
	return n, nil
}

func (c *serverConn) fatal(class, msg string, code hadoopcommon.RpcResponseHeaderProto_RpcErrorCodeProto) {
	c.send(-1, hadoopcommon.RpcResponseHeaderProto_FATAL, class, msg, code, nil)
}

// read returns the header and the remaining delimited messages of a packet.
func (c *serverConn) read() (*hadoopcommon.RpcRequestHeaderProto, [][]byte, error) {
	p, err := ipc.ReadPacket(c.br)
	if err != nil {
		return nil, nil, err
	}
	var parts [][]byte
	for {
		m, rest, ok, err := ipc.SplitDelimited(p)
		if err != nil {
			return nil, nil, err
		}
		if !ok {
			break
		}
		parts = append(parts, m)
		p = rest
	}
	if len(parts) == 0 {
		return nil, nil, errors.New("empty packet")
	}
	h := &hadoopcommon.RpcRequestHeaderProto{}
	if err := proto.Unmarshal(parts[0], h); err != nil {
		return nil, nil, err
	}
	return h, parts[1:], nil
}

const (
	classAccessControl = "org.apache.hadoop.security.AccessControlException"
	classInvalidToken  = "org.apache.hadoop.security.token.SecretManager$InvalidToken"
	classSasl          = "javax.security.sasl.SaslException"
	classStandby       = "org.apache.hadoop.ipc.StandbyException"
	classNoSuchMethod  = "org.apache.hadoop.ipc.RpcNoSuchMethodException"
	classIPC           = "org.apache.hadoop.ipc.IpcException"
	fatalUnauthorized  = hadoopcommon.RpcResponseHeaderProto_FATAL_UNAUTHORIZED
)

func (s *Server) serve(nc net.Conn) {
	c := &serverConn{nc: nc, br: bufio.NewReader(nc)}
	pre := make([]byte, 7)
	if _, err := io.ReadFull(c.br, pre); err != nil {
		return
	}
	if !bytes.Equal(pre[:4], []byte("hrpc")) || pre[4] != 9 {
		c.fatal("org.apache.hadoop.ipc.RPC$VersionMismatch", "Server IPC version 9 cannot communicate with client",
			hadoopcommon.RpcResponseHeaderProto_FATAL_VERSION_MISMATCH)
		return
	}
	info := &ConnInfo{}
	switch pre[6] {
	case 0x00:
		if s.token || s.keytab != nil {
			c.fatal(classAccessControl, "SIMPLE authentication is not enabled.  Available:[TOKEN]", fatalUnauthorized)
			return
		}
	case 0xdf:
		if !s.saslServe(c, info) {
			return
		}
	default:
		c.fatal(classIPC, "Unknown auth protocol", hadoopcommon.RpcResponseHeaderProto_FATAL_UNKNOWN)
		return
	}
	h, parts, err := c.read()
	if err != nil {
		return
	}
	if h.GetCallId() != -3 || len(parts) != 1 {
		c.fatal(classIPC, "Connection context not established", hadoopcommon.RpcResponseHeaderProto_FATAL_INVALID_RPC_HEADER)
		return
	}
	cc := &hadoopcommon.IpcConnectionContextProto{}
	if err := proto.Unmarshal(parts[0], cc); err != nil {
		return
	}
	info.User = cc.GetUserInfo().GetEffectiveUser()
	info.Protocol = cc.GetProtocol()
	s.connects.Add(1)

	for {
		h, parts, err := c.read()
		if err != nil {
			return
		}
		switch id := h.GetCallId(); {
		case id == -4:
			s.pings.Add(1)
			continue
		case id < 0:
			c.fatal(classIPC, fmt.Sprintf("Unknown out of band call #%d", id), hadoopcommon.RpcResponseHeaderProto_FATAL_INVALID_RPC_HEADER)
			return
		}
		if len(parts) != 2 {
			c.fatal(classIPC, "bad call packet", hadoopcommon.RpcResponseHeaderProto_FATAL_DESERIALIZING_REQUEST)
			return
		}
		rh := &hadoopcommon.RequestHeaderProto{}
		if err := proto.Unmarshal(parts[0], rh); err != nil {
			return
		}
		s.calls.Add(1)
		call := &Call{Method: rh.GetMethodName(), Protocol: rh.GetDeclaringClassProtocolName(), Conn: info, Body: parts[1]}
		id := h.GetCallId()
		go s.dispatch(c, id, call)
	}
}

func (s *Server) dispatch(c *serverConn, id int32, call *Call) {
	s.mu.Lock()
	standby := s.standby
	h := s.handlers[call.Method]
	s.mu.Unlock()
	if standby {
		c.send(id, hadoopcommon.RpcResponseHeaderProto_ERROR, classStandby,
			"Operation category READ is not supported in state standby", hadoopcommon.RpcResponseHeaderProto_ERROR_APPLICATION, nil)
		return
	}
	if h == nil {
		c.send(id, hadoopcommon.RpcResponseHeaderProto_ERROR, classNoSuchMethod,
			"Unknown method "+call.Method+" called on "+call.Protocol+" protocol.", hadoopcommon.RpcResponseHeaderProto_ERROR_NO_SUCH_METHOD, nil)
		return
	}
	resp, err := h(s.ctx, call)
	var ex *Exception
	switch {
	case errors.Is(err, ErrHangUp):
		_ = c.nc.Close()
	case errors.As(err, &ex):
		c.send(id, hadoopcommon.RpcResponseHeaderProto_ERROR, ex.Class, ex.Message, hadoopcommon.RpcResponseHeaderProto_ERROR_APPLICATION, nil)
	case err != nil:
		c.send(id, hadoopcommon.RpcResponseHeaderProto_ERROR, "org.apache.hadoop.yarn.exceptions.YarnException", err.Error(),
			hadoopcommon.RpcResponseHeaderProto_ERROR_APPLICATION, nil)
	default:
		c.send(id, hadoopcommon.RpcResponseHeaderProto_SUCCESS, "", "", 0, resp)
	}
}

// saslServe runs the server side of Hadoop's SASL exchange. It reports
// whether the connection may go on.
func (s *Server) saslServe(c *serverConn, info *ConnInfo) bool {
	readSasl := func() (*hadoopcommon.RpcSaslProto, bool) {
		h, parts, err := c.read()
		if err != nil || h.GetCallId() != -33 || len(parts) != 1 {
			return nil, false
		}
		m := &hadoopcommon.RpcSaslProto{}
		if proto.Unmarshal(parts[0], m) != nil {
			return nil, false
		}
		return m, true
	}
	reply := func(m *hadoopcommon.RpcSaslProto) {
		c.send(-33, hadoopcommon.RpcResponseHeaderProto_SUCCESS, "", "", 0, m)
	}
	m, ok := readSasl()
	if !ok || m.GetState() != hadoopcommon.RpcSaslProto_NEGOTIATE {
		return false
	}
	if !s.token && s.keytab == nil {
		reply(&hadoopcommon.RpcSaslProto{State: hadoopcommon.RpcSaslProto_SUCCESS.Enum()})
		return true
	}
	nonce := make([]byte, 12)
	_, _ = rand.Read(nonce)
	ds := &sasl.DigestServer{Realm: "default", Nonce: base64.StdEncoding.EncodeToString(nonce), QOP: s.qop, Ciphers: s.ciphers,
		Password: func(user string) (string, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			p, ok := s.tokens[user]
			if !ok {
				return "", &Exception{Class: classInvalidToken, Message: "token is not known to this server (identifier " + user + ")"}
			}
			return base64.StdEncoding.EncodeToString(p), nil
		}}
	tokenOffer := &hadoopcommon.RpcSaslProto_SaslAuth{
		Method: proto.String("TOKEN"), Mechanism: proto.String("DIGEST-MD5"),
		Protocol: proto.String(""), ServerId: proto.String("default"),
	}
	var krbOffer *hadoopcommon.RpcSaslProto_SaslAuth
	var offers []*hadoopcommon.RpcSaslProto_SaslAuth
	if s.token {
		withChallenge := proto.Clone(tokenOffer).(*hadoopcommon.RpcSaslProto_SaslAuth)
		withChallenge.Challenge = ds.Challenge()
		offers = append(offers, withChallenge)
	}
	if s.keytab != nil {
		service, host, _ := strings.Cut(s.principal, "/")
		krbOffer = &hadoopcommon.RpcSaslProto_SaslAuth{Method: proto.String("KERBEROS"), Mechanism: proto.String("GSSAPI"),
			Protocol: proto.String(service), ServerId: proto.String(host)}
		offers = append(offers, krbOffer)
	}
	reply(&hadoopcommon.RpcSaslProto{State: hadoopcommon.RpcSaslProto_NEGOTIATE.Enum(), Auths: offers})
	m, ok = readSasl()
	if !ok || m.GetState() != hadoopcommon.RpcSaslProto_INITIATE {
		return false
	}
	if len(m.GetAuths()) == 1 && krbOffer != nil && proto.Equal(m.GetAuths()[0], krbOffer) {
		return s.kerberosServe(c, info, m.GetToken(), readSasl, reply)
	}
	if !s.token || len(m.GetAuths()) != 1 || !proto.Equal(m.GetAuths()[0], tokenOffer) {
		c.fatal(classAccessControl, "authentication method is not enabled", fatalUnauthorized)
		return false
	}
	proof, user, layer, err := ds.VerifyLayer(m.GetToken(), "/default")
	if err != nil {
		var ex *Exception
		if errors.As(err, &ex) {
			c.fatal(ex.Class, ex.Message, fatalUnauthorized)
		} else {
			c.fatal(classSasl, "DIGEST-MD5: digest response format violation. Mismatched response.", fatalUnauthorized)
		}
		return false
	}
	id, _ := base64.StdEncoding.DecodeString(user)
	info.Identifier = id
	reply(&hadoopcommon.RpcSaslProto{State: hadoopcommon.RpcSaslProto_SUCCESS.Enum(), Token: proof})
	if layer != nil {
		c.layer = layer
		c.br = bufio.NewReader(&unwrapReader{c: c, src: c.br})
	}
	return true
}
