package security

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"sort"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/xres/xres/hadoopproto/hadoopcommon"
	"github.com/xres/xres/hadoopproto/tokenfile"
)

// Format is the token storage file format version.
type Format byte

const (
	// FormatWritable (0) is Hadoop's Writable layout, what NodeManagers
	// write by default.
	FormatWritable Format = 0
	// FormatProtobuf (1) is a length-delimited CredentialsProto.
	FormatProtobuf Format = 1
)

// ErrTokenFile marks a token storage file that does not parse (the one
// sentinel of hadoopproto/tokenfile, which decodes the format).
var ErrTokenFile = tokenfile.ErrMalformed

// maxFileSize bounds what ReadCredentials accepts.
const maxFileSize = 16 << 20

// Credentials is a set of tokens and secrets, each under an alias, in the
// order they were added.
type Credentials struct {
	tokens  []aliased[*Token]
	secrets []aliased[[]byte]
}

type aliased[T any] struct {
	alias string
	v     T
}

// AddToken stores t under alias, replacing an earlier token of that alias.
func (c *Credentials) AddToken(alias string, t *Token) {
	for i := range c.tokens {
		if c.tokens[i].alias == alias {
			c.tokens[i].v = t
			return
		}
	}
	c.tokens = append(c.tokens, aliased[*Token]{alias, t})
}

// AddSecret stores a secret key under alias, replacing an earlier one.
func (c *Credentials) AddSecret(alias string, secret []byte) {
	for i := range c.secrets {
		if c.secrets[i].alias == alias {
			c.secrets[i].v = secret
			return
		}
	}
	c.secrets = append(c.secrets, aliased[[]byte]{alias, secret})
}

// Token returns the token under alias, or nil.
func (c *Credentials) Token(alias string) *Token {
	for _, e := range c.tokens {
		if e.alias == alias {
			return e.v
		}
	}
	return nil
}

// Secret returns the secret under alias, or nil.
func (c *Credentials) Secret(alias string) []byte {
	for _, e := range c.secrets {
		if e.alias == alias {
			return e.v
		}
	}
	return nil
}

// Aliases lists the token aliases in file order.
func (c *Credentials) Aliases() []string {
	out := make([]string, 0, len(c.tokens))
	for _, e := range c.tokens {
		out = append(out, e.alias)
	}
	return out
}

// SecretAliases lists the secret aliases, sorted.
func (c *Credentials) SecretAliases() []string {
	out := make([]string, 0, len(c.secrets))
	for _, e := range c.secrets {
		out = append(out, e.alias)
	}
	sort.Strings(out)
	return out
}

// Select returns the first token of kind whose service matches service
// (see Token.MatchesService); service "" matches any.
func (c *Credentials) Select(kind, service string) *Token {
	for _, e := range c.tokens {
		if e.v != nil && e.v.Kind == kind && (service == "" || e.v.MatchesService(service)) {
			return e.v
		}
	}
	return nil
}

// Remove deletes the token under alias (e.g. the AMRMToken before the
// credentials are passed on to task containers).
func (c *Credentials) Remove(alias string) {
	for i, e := range c.tokens {
		if e.alias == alias {
			c.tokens = append(c.tokens[:i], c.tokens[i+1:]...)
			return
		}
	}
}

// RemoveSecret deletes the secret key under alias (the application's
// report secret before the credentials are passed on to workers).
func (c *Credentials) RemoveSecret(alias string) {
	for i, e := range c.secrets {
		if e.alias == alias {
			c.secrets = append(c.secrets[:i:i], c.secrets[i+1:]...)
			return
		}
	}
}

// WithoutKind returns a copy of c without the tokens of kind: what an AM
// passes on to task containers (never the AMRMToken:
// c.WithoutKind(KindAMRMToken)).
func (c *Credentials) WithoutKind(kind string) *Credentials {
	out := &Credentials{}
	for _, e := range c.tokens {
		if e.v == nil || e.v.Kind != kind {
			out.tokens = append(out.tokens, e)
		}
	}
	out.secrets = append(out.secrets, c.secrets...)
	return out
}

// String lists aliases and redacted tokens.
func (c *Credentials) String() string {
	var b bytes.Buffer
	b.WriteString("Credentials{")
	for i, e := range c.tokens {
		if i > 0 {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "%s=%s", e.alias, e.v.String())
	}
	fmt.Fprintf(&b, " secrets=%d}", len(c.secrets))
	return b.String()
}

// ReadTokenFile reads a token storage file, e.g. $HADOOP_TOKEN_FILE_LOCATION.
func ReadTokenFile(path string) (*Credentials, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read token file %s: %w", path, err)
	}
	defer f.Close()
	c, err := ReadCredentials(f)
	if err != nil {
		return nil, fmt.Errorf("read token file %s: %w", path, err)
	}
	return c, nil
}

// WriteTokenFile writes c to path (mode 0600) in format f.
func WriteTokenFile(path string, c *Credentials, f Format) error {
	b, err := c.Marshal(f)
	if err != nil {
		return fmt.Errorf("write token file %s: %w", path, err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return fmt.Errorf("write token file %s: %w", path, err)
	}
	return nil
}

// Token storage file:
//
//	+------+------+------+------+---------+-------------------------------+
//	| 'H'  | 'D'  | 'T'  | 'S'  | format  | body                          |
//	+------+------+------+------+---------+-------------------------------+
//	format 0 (Writable):
//	  VInt nTokens, nTokens × { Text alias, Token },
//	  VInt nSecrets, nSecrets × { Text alias, VInt len, len bytes }
//	  Token = VInt len, identifier, VInt len, password, Text kind, Text service
//	  Text  = VInt len, UTF-8 bytes; VInt is Hadoop's WritableUtils zero-compressed form
//	format 1 (protobuf):
//	  varint len, CredentialsProto
var magic = tokenfile.Magic

// ReadCredentials parses a token storage stream in either format.
func ReadCredentials(r io.Reader) (*Credentials, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxFileSize {
		return nil, fmt.Errorf("%w: larger than %d bytes", ErrTokenFile, maxFileSize)
	}
	return ParseCredentials(b)
}

// ParseCredentials parses a token storage blob (also the tokens field of a
// ContainerLaunchContextProto) with hadoopproto/tokenfile, the one decoder
// of the format (the container launcher reads its secrets with it too).
func ParseCredentials(b []byte) (*Credentials, error) {
	f, err := tokenfile.Parse(b)
	if err == nil {
		err = f.CheckRequired()
	}
	if err != nil {
		return nil, err
	}
	c := &Credentials{}
	for _, e := range f.Tokens {
		var t *Token
		if e.Token != nil {
			t = &Token{
				Identifier: append([]byte{}, e.Token.Identifier...),
				Password:   append([]byte{}, e.Token.Password...),
				Kind:       e.Token.Kind,
				Service:    e.Token.Service,
			}
		}
		c.AddToken(e.Alias, t)
	}
	for _, e := range f.Secrets {
		c.AddSecret(e.Alias, append([]byte{}, e.Secret...))
	}
	return c, nil
}

// Marshal encodes c as a token storage blob.
func (c *Credentials) Marshal(f Format) ([]byte, error) {
	out := append([]byte{}, magic...)
	out = append(out, byte(f))
	switch f {
	case FormatWritable:
		out = writeVLong(out, int64(len(c.tokens)))
		for _, e := range c.tokens {
			out = writeText(out, e.alias)
			t := e.v
			if t == nil {
				t = &Token{}
			}
			out = writeBytes(out, t.Identifier)
			out = writeBytes(out, t.Password)
			out = writeText(out, t.Kind)
			out = writeText(out, t.Service)
		}
		out = writeVLong(out, int64(len(c.secrets)))
		for _, e := range c.secrets {
			out = writeText(out, e.alias)
			out = writeBytes(out, e.v)
		}
		return out, nil
	case FormatProtobuf:
		p := &hadoopcommon.CredentialsProto{}
		for _, e := range c.tokens {
			t := e.v
			if t == nil {
				t = &Token{}
			}
			p.Tokens = append(p.Tokens, &hadoopcommon.CredentialsKVProto{Alias: proto.String(e.alias), Token: t.Proto()})
		}
		for _, e := range c.secrets {
			p.Secrets = append(p.Secrets, &hadoopcommon.CredentialsKVProto{Alias: proto.String(e.alias), Secret: append([]byte{}, e.v...)})
		}
		b, err := proto.Marshal(p)
		if err != nil {
			return nil, fmt.Errorf("marshal credentials: %w", err)
		}
		out = protowire.AppendVarint(out, uint64(len(b)))
		return append(out, b...), nil
	default:
		return nil, fmt.Errorf("marshal credentials: unknown format %d", f)
	}
}

func writeVLong(out []byte, v int64) []byte { return tokenfile.AppendVLong(out, v) }

func writeBytes(out, b []byte) []byte { return tokenfile.AppendBytes(out, b) }

func writeText(out []byte, s string) []byte { return tokenfile.AppendText(out, s) }
