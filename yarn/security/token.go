package security

import (
	"fmt"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/xres/xres/hadoopproto/hadoopcommon"
)

// Token kinds xres handles.
const (
	KindAMRMToken      = "YARN_AM_RM_TOKEN"
	KindNMToken        = "NMToken"
	KindContainerToken = "ContainerToken"
	KindHDFSDelegation = "HDFS_DELEGATION_TOKEN"
	KindRMDelegation   = "RM_DELEGATION_TOKEN"
)

// Token is a Hadoop security token. Identifier and Password are secret:
// String and GoString print only the kind, the service and sizes.
type Token struct {
	Identifier []byte
	Password   []byte
	Kind       string
	Service    string
}

// String prints the token without its secret parts. The methods have
// value receivers so that a Token printed by value is redacted too (fmt
// prints a nil *Token as <nil>).
func (t Token) String() string {
	return fmt.Sprintf("Token{kind=%s service=%s identifier=%dB password=redacted}", t.Kind, t.Service, len(t.Identifier))
}

// GoString keeps %#v from printing the secret parts.
func (t Token) GoString() string { return t.String() }

// Format makes every fmt verb print the redacted form.
func (t Token) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(t.String())) }

// Proto converts to the wire form.
func (t Token) Proto() *hadoopcommon.TokenProto {
	return &hadoopcommon.TokenProto{
		Identifier: append([]byte{}, t.Identifier...),
		Password:   append([]byte{}, t.Password...),
		Kind:       proto.String(t.Kind),
		Service:    proto.String(t.Service),
	}
}

// FromProto converts from the wire form; nil gives nil.
func FromProto(p *hadoopcommon.TokenProto) *Token {
	if p == nil {
		return nil
	}
	return &Token{
		Identifier: append([]byte{}, p.GetIdentifier()...),
		Password:   append([]byte{}, p.GetPassword()...),
		Kind:       p.GetKind(),
		Service:    p.GetService(),
	}
}

// MatchesService reports whether the token is for addr. An AMRMToken in an
// HA cluster names every RM scheduler address, comma-separated, so this
// matches on any element, as Hadoop's AMRMTokenSelector does.
func (t Token) MatchesService(addr string) bool {
	for _, s := range strings.Split(t.Service, ",") {
		if strings.TrimSpace(s) == addr {
			return true
		}
	}
	return false
}
