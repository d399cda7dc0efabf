package security

import (
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/xres/xres/hadoopproto/hadoopcommon"
)

// ParseCredentials decodes format 1 with hadoopproto/tokenfile's scanner,
// not the generated CredentialsProto: on the protobuf corner cases
// (repeated and merged fields, other wire types, unknown fields, missing
// required fields, malformed entries) both read the same.
func TestProtobufFormatAsGeneratedCode(t *testing.T) {
	ld := func(num protowire.Number, parts ...[]byte) []byte {
		var v []byte
		for _, p := range parts {
			v = append(v, p...)
		}
		return protowire.AppendBytes(protowire.AppendTag(nil, num, protowire.BytesType), v)
	}
	s := func(v string) []byte { return []byte(v) }
	varint := func(num protowire.Number, v uint64) []byte {
		return protowire.AppendVarint(protowire.AppendTag(nil, num, protowire.VarintType), v)
	}
	tok := func(id, pw, kind, svc string) []byte {
		return ld(2, ld(1, s(id)), ld(2, s(pw)), ld(3, s(kind)), ld(4, s(svc)))
	}
	bodies := map[string][]byte{
		"plain":                   append(ld(1, ld(1, s("a")), tok("i", "p", "K", "svc")), ld(2, ld(1, s("k")), ld(3, s("v")))...),
		"token field twice":       ld(1, ld(1, s("a")), tok("i", "p", "K", "svc"), ld(2, ld(2, s("p2")))),
		"alias twice":             ld(1, ld(1, s("a")), ld(1, s("b")), tok("i", "p", "K", "svc")),
		"unknown and varint":      append(varint(7, 3), ld(1, varint(1, 5), ld(1, s("a")), ld(9, s("x")), tok("i", "p", "K", "svc"))...),
		"missing alias":           ld(2, ld(3, s("v"))),
		"token missing service":   ld(1, ld(1, s("a")), ld(2, ld(1, s("i")), ld(2, s("p")), ld(3, s("K")))),
		"entry without token":     ld(1, ld(1, s("a"))),
		"secret without value":    ld(2, ld(1, s("k"))),
		"malformed token entry":   ld(1, []byte{0x0a, 0x05, 'a'}),
		"malformed unknown":       []byte{0x38},
		"same secret alias twice": append(ld(2, ld(1, s("k")), ld(3, s("1"))), ld(2, ld(1, s("k")), ld(3, s("2")))...),
	}
	for name, body := range bodies {
		t.Run(name, func(t *testing.T) {
			file := append(protowire.AppendVarint([]byte("HDTS\x01"), uint64(len(body))), body...)
			got, err := ParseCredentials(file)

			p := &hadoopcommon.CredentialsProto{}
			werr := proto.Unmarshal(body, p)
			if werr != nil {
				require.Error(t, err, "generated code: %v", werr)
				require.ErrorIs(t, err, ErrTokenFile)
				return
			}
			require.NoError(t, err)
			want := &Credentials{}
			for _, kv := range p.GetTokens() {
				want.AddToken(kv.GetAlias(), FromProto(kv.GetToken()))
			}
			for _, kv := range p.GetSecrets() {
				want.AddSecret(kv.GetAlias(), append([]byte{}, kv.GetSecret()...))
			}
			require.Equal(t, want, got)
		})
	}
}
