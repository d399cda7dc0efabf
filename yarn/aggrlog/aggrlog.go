// Package aggrlog reads the log files a NodeManager uploads when YARN log
// aggregation is on (yarn.log-aggregation-enable): one file per node and
// application, in the TFile format (yarn.log-aggregation.file-formats=TFile,
// the default), holding the logs of every container of the application
// that ran on that node. It is what `yarn logs -applicationId` reads.
//
// Blocks compressed with "none" or "gz"
// (yarn.nodemanager.log-aggregation.compression-type) are read; another
// codec is ErrCodec, naming it. An IFile is ErrNotTFile.
package aggrlog

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strconv"
	"unicode/utf8"
)

// The aggregated-log layer, in the TFile's records (every key and value
// written by java.io.DataOutput; utf = uint16 length + modified UTF-8):
//
//	key utf "VERSION"            value int32 (1)
//	key utf "APPLICATION_OWNER"  value utf user
//	key utf "APPLICATION_ACL"    value (utf access type, utf ACL)...
//	key utf <container id>       value per log file, until the value ends:
//	    +-----------------+-------------------------+------------------+
//	    | utf file name   | utf length (in decimal) | length raw bytes |
//	    +-----------------+-------------------------+------------------+

// Reserved keys: not containers.
const (
	keyVersion = "VERSION"
	keyOwner   = "APPLICATION_OWNER"
	keyACL     = "APPLICATION_ACL"
)

// Reader walks an aggregated log file: Next moves to the next container,
// NextFile to the next log file of that container.
type Reader struct {
	t       *tfile
	block   int           // next data block to open
	br      *bufio.Reader // current data block; nil between blocks
	value   *chunkReader  // current record's value
	file    *io.LimitedReader
	version int32
	owner   string
	acls    map[string]string
	ctr     string
}

// LogFile is one log of a container (stdout, stderr, syslog, …). Body is
// valid until the next call to NextFile or Next.
type LogFile struct {
	Name   string
	Length int64
	Body   io.Reader
}

// NewReader opens the aggregated log file r of size bytes: it reads the
// TFile's tail and indexes. Containers come from Next.
func NewReader(r io.ReaderAt, size int64) (*Reader, error) {
	t, err := openTFile(r, size)
	if err != nil {
		return nil, err
	}
	return &Reader{t: t, acls: map[string]string{}}, nil
}

// Codec is the compression of the file's data blocks ("none", "gz", …).
func (r *Reader) Codec() string { return r.t.codec }

// Owner is the application's owner (APPLICATION_OWNER), known once Next has
// passed it (it is the first records of a file Hadoop writes).
func (r *Reader) Owner() string { return r.owner }

// Version is the aggregated log format's VERSION record (1), 0 if not seen.
func (r *Reader) Version() int { return int(r.version) }

// ACLs maps an application access type (VIEW_APP, MODIFY_APP) to its ACL.
func (r *Reader) ACLs() map[string]string { return r.acls }

// Next moves to the next container and returns its id; io.EOF after the
// last one.
func (r *Reader) Next() (string, error) {
	for {
		if err := r.skipValue(); err != nil {
			return "", err
		}
		key, err := r.nextKey()
		if err != nil {
			return "", err
		}
		r.value = &chunkReader{r: r.br}
		switch key {
		case keyVersion:
			var b [4]byte
			if _, err := io.ReadFull(r.value, b[:]); err != nil {
				return "", fmt.Errorf("%w: VERSION value: %v", ErrCorrupt, noEOF(err))
			}
			r.version = int32(binary.BigEndian.Uint32(b[:]))
		case keyOwner:
			if r.owner, err = readUTF(r.value); err != nil {
				return "", fmt.Errorf("%w: APPLICATION_OWNER value: %v", ErrCorrupt, noEOF(err))
			}
		case keyACL:
			for {
				typ, err := readUTF(r.value)
				if err == io.EOF {
					break
				}
				if err != nil {
					return "", fmt.Errorf("%w: APPLICATION_ACL value: %v", ErrCorrupt, err)
				}
				acl, err := readUTF(r.value)
				if err != nil {
					return "", fmt.Errorf("%w: APPLICATION_ACL value: %v", ErrCorrupt, noEOF(err))
				}
				r.acls[typ] = acl
			}
		default:
			r.ctr = key
			return key, nil
		}
	}
}

// NextFile returns the current container's next log file; io.EOF after its
// last one.
func (r *Reader) NextFile() (LogFile, error) {
	if r.value == nil || r.ctr == "" {
		return LogFile{}, errors.New("aggrlog: NextFile before Next")
	}
	if r.file != nil {
		if _, err := io.Copy(io.Discard, r.file); err != nil {
			return LogFile{}, err
		}
		if r.file.N > 0 {
			return LogFile{}, fmt.Errorf("%w: container %s: log cut short", ErrCorrupt, r.ctr)
		}
		r.file = nil
	}
	name, err := readUTF(r.value)
	if err == io.EOF {
		return LogFile{}, io.EOF
	}
	if err != nil {
		return LogFile{}, fmt.Errorf("%w: container %s: log name: %v", ErrCorrupt, r.ctr, err)
	}
	ls, err := readUTF(r.value)
	if err != nil {
		return LogFile{}, fmt.Errorf("%w: container %s, log %s: length: %v", ErrCorrupt, r.ctr, name, noEOF(err))
	}
	n, err := strconv.ParseInt(ls, 10, 64)
	if err != nil || n < 0 {
		return LogFile{}, fmt.Errorf("%w: container %s, log %s: length %q", ErrCorrupt, r.ctr, name, ls)
	}
	r.file = &io.LimitedReader{R: r.value, N: n}
	return LogFile{Name: name, Length: n, Body: r.file}, nil
}

// skipValue passes what is left of the current record's value.
func (r *Reader) skipValue() error {
	r.file = nil
	r.ctr = ""
	if r.value == nil {
		return nil
	}
	err := r.value.drain()
	r.value = nil
	return err
}

// nextKey reads the next record's key, opening the next data block when
// the current one is used up.
func (r *Reader) nextKey() (string, error) {
	for {
		if r.br == nil {
			if r.block >= len(r.t.blocks) {
				return "", io.EOF
			}
			reg := r.t.blocks[r.block]
			r.block++
			br, err := r.t.block(r.t.codec, reg)
			if err != nil {
				return "", fmt.Errorf("data block %d: %w", r.block-1, err)
			}
			r.br = br
		}
		n, err := readVInt(r.br)
		if err == io.EOF {
			r.br = nil
			continue
		}
		if err != nil {
			return "", fmt.Errorf("%w: key length: %v", ErrCorrupt, err)
		}
		if n < 2 || n > maxString {
			return "", fmt.Errorf("%w: key of %d bytes", ErrCorrupt, n)
		}
		kb := make([]byte, n)
		if _, err := io.ReadFull(r.br, kb); err != nil {
			return "", fmt.Errorf("%w: key: %v", ErrCorrupt, noEOF(err))
		}
		// A LogKey is one writeUTF: its own length, then the characters.
		if int(binary.BigEndian.Uint16(kb)) != n-2 {
			return "", fmt.Errorf("%w: key of %d bytes holds a string of %d", ErrCorrupt, n, binary.BigEndian.Uint16(kb))
		}
		return decodeModifiedUTF8(kb[2:]), nil
	}
}

// readUTF reads a java.io.DataInput.readUTF string; io.EOF only when r
// ends before its first byte.
func readUTF(r io.Reader) (string, error) {
	var l [2]byte
	if n, err := io.ReadFull(r, l[:]); err != nil {
		if n == 0 && err == io.EOF {
			return "", io.EOF
		}
		return "", noEOF(err)
	}
	b := make([]byte, binary.BigEndian.Uint16(l[:]))
	if _, err := io.ReadFull(r, b); err != nil {
		return "", noEOF(err)
	}
	return decodeModifiedUTF8(b), nil
}

// decodeModifiedUTF8 decodes Java's modified UTF-8 (NUL as C0 80,
// characters beyond the BMP as two 3-byte surrogates). What is not valid
// becomes U+FFFD.
func decodeModifiedUTF8(b []byte) string {
	ascii := true
	for _, c := range b {
		if c >= 0x80 {
			ascii = false
			break
		}
	}
	if ascii {
		return string(b)
	}
	var units []rune
	for i := 0; i < len(b); {
		c := b[i]
		switch {
		case c < 0x80:
			units = append(units, rune(c))
			i++
		case c&0xe0 == 0xc0 && i+1 < len(b) && b[i+1]&0xc0 == 0x80:
			units = append(units, rune(c&0x1f)<<6|rune(b[i+1]&0x3f))
			i += 2
		case c&0xf0 == 0xe0 && i+2 < len(b) && b[i+1]&0xc0 == 0x80 && b[i+2]&0xc0 == 0x80:
			units = append(units, rune(c&0x0f)<<12|rune(b[i+1]&0x3f)<<6|rune(b[i+2]&0x3f))
			i += 3
		default:
			units = append(units, utf8.RuneError)
			i++
		}
	}
	out := make([]rune, 0, len(units))
	for i := 0; i < len(units); i++ {
		u := units[i]
		if u >= 0xd800 && u < 0xdc00 && i+1 < len(units) && units[i+1] >= 0xdc00 && units[i+1] < 0xe000 {
			out = append(out, 0x10000+(u-0xd800)<<10+(units[i+1]-0xdc00))
			i++
			continue
		}
		if u >= 0xd800 && u < 0xe000 {
			u = utf8.RuneError
		}
		out = append(out, u)
	}
	return string(out)
}
