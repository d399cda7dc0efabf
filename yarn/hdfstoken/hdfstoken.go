// Package hdfstoken fetches an HDFS delegation token from the NameNode
// (ClientProtocol.getDelegationToken over Hadoop IPC, authenticated with
// Kerberos): what a Kerberized submission gives the AM container so the
// NodeManagers can localize its staged files and the AM can pass it on.
// It is the one place that speaks the NameNode's RPC protocol.
package hdfstoken

import (
	"context"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/colinmarc/hdfs/v2"
	"github.com/colinmarc/hdfs/v2/hadoopconf"
	"github.com/sirupsen/logrus"
	"google.golang.org/protobuf/proto"

	"github.com/xres/xres/conf"
	"github.com/xres/xres/hadoopproto/hadoopcommon"
	"github.com/xres/xres/yarn"
	"github.com/xres/xres/yarn/internal/ipc"
	"github.com/xres/xres/yarn/internal/logutil"
	"github.com/xres/xres/yarn/internal/sasl"
	"github.com/xres/xres/yarn/security"
)

// ProtocolClientNamenode is the NameNode's client protocol.
const ProtocolClientNamenode = "org.apache.hadoop.hdfs.protocol.ClientProtocol"

// nameNodeAddr is the NameNode of fs.defaultFS (or the first of
// dfs.namenode.rpc-address.*) as host:port.
func nameNodeAddr(hc *conf.HadoopConfig) (string, error) {
	opts := ClientOptions(hc)
	if len(opts.Addresses) == 0 {
		return "", fmt.Errorf("no namenode address in fs.defaultFS or dfs.namenode.rpc-address (HADOOP_CONF_DIR %s)", hc.Dir())
	}
	return opts.Addresses[0], nil
}

// TokenService is the service Hadoop clients give a NameNode's delegation
// token: its resolved ip:port (hadoop.security.token.service.use_ip).
func TokenService(ctx context.Context, addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("token service %s: %w", addr, err)
	}
	if ip := net.ParseIP(host); ip != nil {
		return net.JoinHostPort(ip.String(), port), nil
	}
	ips, err := net.DefaultResolver.LookupIP(ctx, "ip", host)
	if err != nil || len(ips) == 0 {
		return "", fmt.Errorf("token service %s: resolve %s: %w", addr, host, err)
	}
	ip := ips[0]
	for _, c := range ips {
		if c.To4() != nil {
			ip = c
			break
		}
	}
	return net.JoinHostPort(ip.String(), port), nil
}

// servicePrincipalFor resolves a Hadoop server principal for host: _HOST
// replaced, realm dropped.
func servicePrincipalFor(principal, host string) string {
	spn, _, _ := strings.Cut(principal, "@")
	return strings.ReplaceAll(spn, "_HOST", strings.ToLower(host))
}

// nameNode is a client-protocol connection to the NameNode of hc as krb.
type nameNode struct {
	c       *ipc.Conn
	addr    string
	service string // the NameNode's token service, ip:port
}

// dialNameNode connects to the NameNode of hc over its client protocol,
// authenticated with Kerberos as krb. what names the call in errors.
func dialNameNode(ctx context.Context, hc *conf.HadoopConfig, krb *yarn.Kerberos, what string, log logrus.FieldLogger) (*nameNode, error) {
	if krb == nil || krb.Client == nil || krb.Client.Credentials == nil {
		return nil, fmt.Errorf("%s: %w", what, yarn.ErrNoCredentials)
	}
	addr, err := nameNodeAddr(hc)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	host, _, _ := net.SplitHostPort(addr)
	nnPrincipal, _ := hc.Get(conf.HadoopNNPrincipal)
	if nnPrincipal == "" {
		return nil, fmt.Errorf("%s from %s: dfs.namenode.kerberos.principal is not set", what, addr)
	}
	service, err := TokenService(ctx, addr)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	user := krb.Client.Credentials.UserName() + "@" + krb.Client.Credentials.Realm()
	spn := servicePrincipalFor(nnPrincipal, host)
	c, err := ipc.Dial(ctx, ipc.Config{Addr: addr, Protocol: ProtocolClientNamenode, User: user, Log: log,
		Mechanism: func() (sasl.Mechanism, error) { return &sasl.GSSAPI{Client: krb.Client, ServicePrincipal: spn}, nil }})
	if err != nil {
		return nil, fmt.Errorf("%s from %s (%s): %w", what, addr, spn, err)
	}
	return &nameNode{c: c, addr: addr, service: service}, nil
}

// Get fetches an HDFS delegation token renewable by renewer
// (a short name, see yarn/submit.ShortName) from the NameNode over its client protocol
// (getDelegationToken), as user krb, and sets its service to the
// NameNode's ip:port.
func Get(ctx context.Context, hc *conf.HadoopConfig, krb *yarn.Kerberos, renewer string, log logrus.FieldLogger) (*security.Token, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	nn, err := dialNameNode(ctx, hc, krb, "get HDFS delegation token", log)
	if err != nil {
		return nil, err
	}
	defer nn.c.Close()
	addr := nn.addr
	resp := &hadoopcommon.GetDelegationTokenResponseProto{}
	if err := nn.c.Call(ctx, "getDelegationToken", &hadoopcommon.GetDelegationTokenRequestProto{Renewer: proto.String(renewer)}, resp); err != nil {
		return nil, fmt.Errorf("get HDFS delegation token from %s: %w", addr, err)
	}
	if resp.GetToken() == nil {
		return nil, fmt.Errorf("get HDFS delegation token from %s: the NameNode issued none (is security on?)", addr)
	}
	tok := security.FromProto(resp.GetToken())
	tok.Service = nn.service
	if tok.Kind == "" {
		tok.Kind = security.KindHDFSDelegation
	}
	logutil.OrDiscard(log).WithFields(logrus.Fields{"namenode": addr, "renewer": renewer, "token": tok.String()}).Debug("got HDFS delegation token")
	return tok, nil
}

// Renew extends tok's life at the NameNode (renewDelegationToken; krb
// must be its renewer) and returns its new expiry: the earlier of now plus
// the NameNode's renew interval and the token's max date.
func Renew(ctx context.Context, hc *conf.HadoopConfig, krb *yarn.Kerberos, tok *security.Token, log logrus.FieldLogger) (time.Time, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	nn, err := dialNameNode(ctx, hc, krb, "renew HDFS delegation token", log)
	if err != nil {
		return time.Time{}, err
	}
	defer nn.c.Close()
	resp := &hadoopcommon.RenewDelegationTokenResponseProto{}
	if err := nn.c.Call(ctx, "renewDelegationToken", &hadoopcommon.RenewDelegationTokenRequestProto{Token: tok.Proto()}, resp); err != nil {
		return time.Time{}, fmt.Errorf("renew HDFS delegation token at %s: %w", nn.addr, err)
	}
	return time.UnixMilli(int64(resp.GetNewExpiryTime())), nil
}

// Cancel makes the NameNode forget tok (cancelDelegationToken; krb must
// be its owner or renewer).
func Cancel(ctx context.Context, hc *conf.HadoopConfig, krb *yarn.Kerberos, tok *security.Token, log logrus.FieldLogger) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	nn, err := dialNameNode(ctx, hc, krb, "cancel HDFS delegation token", log)
	if err != nil {
		return err
	}
	defer nn.c.Close()
	if err := nn.c.Call(ctx, "cancelDelegationToken", &hadoopcommon.CancelDelegationTokenRequestProto{Token: tok.Proto()},
		&hadoopcommon.CancelDelegationTokenResponseProto{}); err != nil {
		return fmt.Errorf("cancel HDFS delegation token at %s: %w", nn.addr, err)
	}
	return nil
}

// ClientOptions are colinmarc/hdfs's options for the NameNode(s) of hc
// (fs.defaultFS or dfs.namenode.rpc-address.*): the token call and
// submission's HDFS client read the same.
func ClientOptions(hc *conf.HadoopConfig) hdfs.ClientOptions {
	return hdfs.ClientOptionsFromConf(hadoopConf(hc))
}

// hadoopConf copies the Hadoop configuration for colinmarc/hdfs.
func hadoopConf(hc *conf.HadoopConfig) hadoopconf.HadoopConf {
	m := hadoopconf.HadoopConf{}
	for _, k := range hc.Keys() {
		if v, ok := hc.Get(k); ok {
			m[k] = v
		}
	}
	return m
}
