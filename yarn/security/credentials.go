package security

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/xres/xres/hadoopproto/hadoopcommon"
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

// ErrTokenFile marks a token storage file that does not parse.
var ErrTokenFile = errors.New("malformed token storage file")

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
var magic = []byte("HDTS")

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
// ContainerLaunchContextProto).
func ParseCredentials(b []byte) (*Credentials, error) {
	if len(b) < 5 || !bytes.Equal(b[:4], magic) {
		return nil, fmt.Errorf("%w: no HDTS magic", ErrTokenFile)
	}
	switch Format(b[4]) {
	case FormatWritable:
		d := &decoder{b: b, off: 5}
		c, err := d.credentials()
		if err != nil {
			return nil, fmt.Errorf("%w: at byte %d: %v", ErrTokenFile, d.off, err)
		}
		return c, nil
	case FormatProtobuf:
		n, k := protowire.ConsumeVarint(b[5:])
		if k < 0 || n > uint64(len(b)-5-k) {
			return nil, fmt.Errorf("%w: bad protobuf length", ErrTokenFile)
		}
		p := &hadoopcommon.CredentialsProto{}
		if err := proto.Unmarshal(b[5+k:5+k+int(n)], p); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrTokenFile, err)
		}
		c := &Credentials{}
		for _, kv := range p.GetTokens() {
			c.AddToken(kv.GetAlias(), FromProto(kv.GetToken()))
		}
		for _, kv := range p.GetSecrets() {
			c.AddSecret(kv.GetAlias(), append([]byte{}, kv.GetSecret()...))
		}
		return c, nil
	default:
		return nil, fmt.Errorf("%w: unknown format version %d", ErrTokenFile, b[4])
	}
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

type decoder struct {
	b   []byte
	off int
}

func (d *decoder) credentials() (*Credentials, error) {
	c := &Credentials{}
	n, err := d.count()
	if err != nil {
		return nil, fmt.Errorf("token count: %w", err)
	}
	for i := 0; i < n; i++ {
		alias, err := d.text()
		if err != nil {
			return nil, fmt.Errorf("token %d alias: %w", i, err)
		}
		t := &Token{}
		if t.Identifier, err = d.bytes(); err != nil {
			return nil, fmt.Errorf("token %q identifier: %w", alias, err)
		}
		if t.Password, err = d.bytes(); err != nil {
			return nil, fmt.Errorf("token %q password: %w", alias, err)
		}
		if t.Kind, err = d.text(); err != nil {
			return nil, fmt.Errorf("token %q kind: %w", alias, err)
		}
		if t.Service, err = d.text(); err != nil {
			return nil, fmt.Errorf("token %q service: %w", alias, err)
		}
		c.AddToken(alias, t)
	}
	n, err = d.count()
	if err != nil {
		return nil, fmt.Errorf("secret count: %w", err)
	}
	for i := 0; i < n; i++ {
		alias, err := d.text()
		if err != nil {
			return nil, fmt.Errorf("secret %d alias: %w", i, err)
		}
		v, err := d.bytes()
		if err != nil {
			return nil, fmt.Errorf("secret %q: %w", alias, err)
		}
		c.AddSecret(alias, v)
	}
	return c, nil
}

func (d *decoder) count() (int, error) {
	n, err := d.vlong()
	if err != nil {
		return 0, err
	}
	if n < 0 || n > int64(len(d.b)-d.off) {
		return 0, fmt.Errorf("count %d out of range", n)
	}
	return int(n), nil
}

func (d *decoder) bytes() ([]byte, error) {
	n, err := d.vlong()
	if err != nil {
		return nil, err
	}
	if n < 0 || n > int64(len(d.b)-d.off) {
		return nil, fmt.Errorf("length %d exceeds the %d bytes left", n, len(d.b)-d.off)
	}
	v := append([]byte{}, d.b[d.off:d.off+int(n)]...)
	d.off += int(n)
	return v, nil
}

func (d *decoder) text() (string, error) {
	b, err := d.bytes()
	return string(b), err
}

// vlong reads Hadoop's WritableUtils.readVLong form: one byte for
// -112..127, else a length byte (-113..-120 positive, -121..-128 negative,
// one's complement) and that many big-endian bytes.
func (d *decoder) vlong() (int64, error) {
	if d.off >= len(d.b) {
		return 0, io.ErrUnexpectedEOF
	}
	first := int8(d.b[d.off])
	d.off++
	if first >= -112 {
		return int64(first), nil
	}
	neg := first < -120
	n := int(-112 - int(first))
	if neg {
		n = int(-120 - int(first))
	}
	if n > len(d.b)-d.off {
		return 0, io.ErrUnexpectedEOF
	}
	var v int64
	for i := 0; i < n; i++ {
		v = v<<8 | int64(d.b[d.off+i])
	}
	d.off += n
	if neg {
		v = ^v
	}
	return v, nil
}

// writeVLong appends v in WritableUtils.writeVLong form.
func writeVLong(out []byte, v int64) []byte {
	if v >= -112 && v <= 127 {
		return append(out, byte(int8(v)))
	}
	l := -112
	if v < 0 {
		v = ^v
		l = -120
	}
	for tmp := v; tmp != 0; tmp >>= 8 {
		l--
	}
	out = append(out, byte(int8(l)))
	n := -(l + 112)
	if l < -120 {
		n = -(l + 120)
	}
	for i := n; i > 0; i-- {
		out = append(out, byte(v>>((i-1)*8)))
	}
	return out
}

func writeBytes(out, b []byte) []byte { return append(writeVLong(out, int64(len(b))), b...) }

func writeText(out []byte, s string) []byte { return writeBytes(out, []byte(s)) }
