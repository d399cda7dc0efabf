// Package tokenfile decodes Hadoop's token storage file ("HDTS", what
// HADOOP_TOKEN_FILE_LOCATION names and a ContainerLaunchContext's tokens
// hold) and the Writable variable-length integers it and token
// identifiers are written with. It is a leaf: the container launcher
// reads its credentials with it (resources/contract) and yarn/security
// builds its Credentials on it, so both read the file alike. Errors never
// quote the file's bytes (they hold secrets).
package tokenfile

import (
	"bytes"
	"errors"
	"fmt"
)

// Magic opens every token storage file.
var Magic = []byte("HDTS")

// Format versions (the byte after Magic).
const (
	// FormatWritable (0) is Hadoop's Writable layout, what NodeManagers
	// write by default.
	FormatWritable = 0
	// FormatProtobuf (1) is a length-delimited CredentialsProto.
	FormatProtobuf = 1
)

// ErrMalformed marks a token storage file that does not parse.
var ErrMalformed = errors.New("malformed token storage file")

// Token is one token of the file; its byte fields are subslices of the
// parsed input.
type Token struct {
	Identifier, Password []byte
	Kind, Service        string
}

// Entry is a token or a secret under its alias, in file order. Token is
// nil for a secret, and for a protobuf token entry without a token.
type Entry struct {
	Alias  string
	Token  *Token
	Secret []byte // subslice of the input
}

// File is a parsed token storage file.
type File struct {
	Format  byte
	Tokens  []Entry
	Secrets []Entry
	// missing names the first proto2 required field a protobuf file left
	// out ("" when none, and always for the Writable format).
	missing string
}

// CheckRequired reports a protobuf file whose entries leave out a field
// Hadoop's CredentialsProto requires (an alias; a token's identifier,
// password, kind or service), as Hadoop's own reader refuses it.
func (f *File) CheckRequired() error {
	if f.missing != "" {
		return fmt.Errorf("%w: required field %s not set", ErrMalformed, f.missing)
	}
	return nil
}

// Secret returns the value of the last secret under alias, or nil.
func (f *File) Secret(alias string) []byte {
	var v []byte
	for _, e := range f.Secrets {
		if e.Alias == alias {
			v = e.Secret
		}
	}
	return v
}

// Parse decodes a token storage file in either format. Errors wrap
// ErrMalformed and give the byte offset, never the bytes.
func Parse(b []byte) (*File, error) {
	if len(b) < 5 || !bytes.Equal(b[:4], Magic) {
		return nil, fmt.Errorf("%w: no HDTS magic", ErrMalformed)
	}
	f := &File{Format: b[4]}
	switch b[4] {
	case FormatWritable:
		r := &Reader{B: b, Off: 5}
		if err := f.writable(r); err != nil {
			return nil, fmt.Errorf("%w: at byte %d: %v", ErrMalformed, r.Off, err)
		}
	case FormatProtobuf:
		n, k := consumeVarint(b[5:])
		if k < 0 || n > uint64(len(b)-5-k) {
			return nil, fmt.Errorf("%w: bad protobuf length", ErrMalformed)
		}
		if err := f.protobuf(b[5+k : 5+k+int(n)]); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
		}
	default:
		return nil, fmt.Errorf("%w: unknown format version %d", ErrMalformed, b[4])
	}
	return f, nil
}

// writable reads format 0: VInt nTokens, nTokens × {Text alias, Token},
// VInt nSecrets, nSecrets × {Text alias, VInt len, len bytes}; Token =
// VInt len + identifier, VInt len + password, Text kind, Text service.
func (f *File) writable(r *Reader) error {
	n, err := r.Count()
	if err != nil {
		return fmt.Errorf("token count: %w", err)
	}
	for i := 0; i < n; i++ {
		e := Entry{Token: &Token{}}
		if e.Alias, err = r.Text(); err != nil {
			return fmt.Errorf("token %d alias: %w", i, err)
		}
		if e.Token.Identifier, err = r.Bytes(); err != nil {
			return fmt.Errorf("token %d identifier: %w", i, err)
		}
		if e.Token.Password, err = r.Bytes(); err != nil {
			return fmt.Errorf("token %d password: %w", i, err)
		}
		if e.Token.Kind, err = r.Text(); err != nil {
			return fmt.Errorf("token %d kind: %w", i, err)
		}
		if e.Token.Service, err = r.Text(); err != nil {
			return fmt.Errorf("token %d service: %w", i, err)
		}
		f.Tokens = append(f.Tokens, e)
	}
	if n, err = r.Count(); err != nil {
		return fmt.Errorf("secret count: %w", err)
	}
	for i := 0; i < n; i++ {
		var e Entry
		if e.Alias, err = r.Text(); err != nil {
			return fmt.Errorf("secret %d alias: %w", i, err)
		}
		if e.Secret, err = r.Bytes(); err != nil {
			return fmt.Errorf("secret %d: %w", i, err)
		}
		f.Secrets = append(f.Secrets, e)
	}
	return nil
}

// protobuf reads format 1's CredentialsProto {repeated CredentialsKVProto
// tokens = 1; repeated CredentialsKVProto secrets = 2}, with proto2's
// rules: unknown fields and fields of another wire type are skipped, a
// repeated scalar field keeps its last value, a repeated message field
// merges.
func (f *File) protobuf(msg []byte) error {
	return fields(msg, func(num int32, v []byte) error {
		if num != 1 && num != 2 {
			return nil
		}
		what := fmt.Sprintf("token %d", len(f.Tokens))
		if num == 2 {
			what = fmt.Sprintf("secret %d", len(f.Secrets))
		}
		e, err := f.entry(v, what)
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		if num == 1 {
			f.Tokens = append(f.Tokens, e)
		} else {
			f.Secrets = append(f.Secrets, e)
		}
		return nil
	})
}

// entry reads CredentialsKVProto {required string alias = 1; optional
// TokenProto token = 2; optional bytes secret = 3}.
func (f *File) entry(msg []byte, what string) (Entry, error) {
	var e Entry
	var hasAlias bool
	var has [5]bool // TokenProto's required fields 1-4
	err := fields(msg, func(num int32, v []byte) error {
		switch num {
		case 1:
			e.Alias, hasAlias = string(v), true
		case 2:
			if e.Token == nil {
				e.Token = &Token{}
			}
			return tokenFields(v, e.Token, &has)
		case 3:
			e.Secret = v
		}
		return nil
	})
	if err != nil {
		return Entry{}, err
	}
	if e.Secret == nil {
		e.Secret = []byte{}
	}
	if f.missing == "" {
		switch {
		case !hasAlias:
			f.missing = what + " alias"
		case e.Token != nil && !(has[1] && has[2] && has[3] && has[4]):
			f.missing = what + " token field"
		}
	}
	return e, nil
}

// tokenFields reads TokenProto {required bytes identifier = 1; required
// bytes password = 2; required string kind = 3; required string service
// = 4} into t.
func tokenFields(msg []byte, t *Token, has *[5]bool) error {
	return fields(msg, func(num int32, v []byte) error {
		switch num {
		case 1:
			t.Identifier = v
		case 2:
			t.Password = v
		case 3:
			t.Kind = string(v)
		case 4:
			t.Service = string(v)
		default:
			return nil
		}
		has[num] = true
		return nil
	})
}

// fields calls f with each length-delimited field of msg, skipping the
// others (checking they are well formed).
func fields(msg []byte, f func(int32, []byte) error) error {
	for len(msg) > 0 {
		num, typ, k := consumeTag(msg)
		if k < 0 {
			return errWire
		}
		msg = msg[k:]
		if typ != wireBytes {
			k = consumeFieldValue(num, typ, msg)
			if k < 0 {
				return errWire
			}
			msg = msg[k:]
			continue
		}
		v, k := consumeBytes(msg)
		if k < 0 {
			return errWire
		}
		if err := f(num, v); err != nil {
			return err
		}
		msg = msg[k:]
	}
	return nil
}
