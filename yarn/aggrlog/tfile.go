package aggrlog

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// The TFile layer. A TFile is a BCFile ("block compressed file") whose data
// blocks hold key/value records and whose meta blocks include TFile.meta and
// TFile.index:
//
//	+------------------------------------------------------------------+
//	| magic (16 bytes)                                                 |
//	| data block 0 | data block 1 | ...   (each compressed on its own) |
//	| meta block "TFile.meta" (never compressed)                       |
//	| meta block "TFile.index"                                         |
//	| meta block "BCFile.index" = data index:                          |
//	|     string default codec, vint n, n x region                     |
//	+------------------------------------------------------------------+ <- metaIndexOffset
//	| meta index (never compressed): vint n, n x                       |
//	|     string "data:"+name, string codec, region                    |
//	+------------------------------------------------------------------+
//	| int64 metaIndexOffset | int16 major=1 | int16 minor | magic (16) |  tail, 28 bytes
//	+------------------------------------------------------------------+
//
//	region = vlong offset, vlong compressed size, vlong raw size
//	string = vint length (-1: null), UTF-8 bytes
//
// A data block is a run of whole records (a block only ends after a value):
//
//	record = vint key length, key bytes, value
//	value  = chunks: vint -n, n bytes (more follow) ... vint n, n bytes (last; n may be 0)

// magic opens and closes every BCFile.
var magic = [16]byte{0xd1, 0x11, 0xd3, 0x68, 0x91, 0xb5, 0xd7, 0xb6, 0x39, 0xdf, 0x41, 0x40, 0x92, 0xba, 0xe1, 0x50}

// tailSize is the BCFile tail: meta index offset, version, magic.
const tailSize = int64(8 + 4 + len(magic))

// Codec names of TFile's compression algorithms.
const (
	CodecNone = "none"
	CodecGz   = "gz"
)

// ErrNotTFile says the bytes are no TFile (no BCFile magic at the end): an
// IFile (yarn.log-aggregation.file-formats=IFile), a partial upload or
// another file.
var ErrNotTFile = errors.New("not a TFile")

// ErrCorrupt says a TFile's structure is damaged or cut short.
var ErrCorrupt = errors.New("corrupt TFile")

// ErrCodec says a block is compressed with a codec this reader lacks.
var ErrCodec = errors.New("unsupported TFile compression")

// region is where a block lies and how big it is unpacked.
type region struct {
	offset, compressed, raw int64
}

// metaEntry is one meta block of the meta index.
type metaEntry struct {
	codec string
	region
}

// tfile is an opened TFile: its data blocks, in order, and its meta blocks.
type tfile struct {
	r       io.ReaderAt
	size    int64
	codec   string // codec of the data blocks
	blocks  []region
	meta    map[string]metaEntry
	records int64 // TFile.meta's record count; -1 when absent
}

func openTFile(r io.ReaderAt, size int64) (*tfile, error) {
	if size < int64(len(magic))+tailSize {
		return nil, fmt.Errorf("%w: %d bytes is too short for a BCFile", ErrNotTFile, size)
	}
	tail := make([]byte, tailSize)
	if _, err := r.ReadAt(tail, size-tailSize); err != nil {
		return nil, fmt.Errorf("read the tail: %w", err)
	}
	if !bytes.Equal(tail[12:], magic[:]) {
		return nil, fmt.Errorf("%w: no BCFile magic at the end", ErrNotTFile)
	}
	if major := int16(binary.BigEndian.Uint16(tail[8:])); major != 1 {
		return nil, fmt.Errorf("%w: BCFile version %d.%d, want 1.x", ErrCorrupt, major, int16(binary.BigEndian.Uint16(tail[10:])))
	}
	metaOff := int64(binary.BigEndian.Uint64(tail))
	if metaOff < int64(len(magic)) || metaOff > size-tailSize {
		return nil, fmt.Errorf("%w: meta index offset %d outside the file (%d bytes)", ErrCorrupt, metaOff, size)
	}
	t := &tfile{r: r, size: size, meta: map[string]metaEntry{}, records: -1}
	br := bufio.NewReader(io.NewSectionReader(r, metaOff, size-tailSize-metaOff))
	n, err := readVInt(br)
	if err != nil || n < 0 {
		return nil, fmt.Errorf("%w: meta index count: %v", ErrCorrupt, errOr(err, "negative"))
	}
	for i := 0; i < n; i++ {
		name, err := readString(br)
		if err != nil {
			return nil, fmt.Errorf("%w: meta index entry %d: %v", ErrCorrupt, i, err)
		}
		codec, err := readString(br)
		if err != nil {
			return nil, fmt.Errorf("%w: meta index entry %q: %v", ErrCorrupt, name, err)
		}
		reg, err := t.readRegion(br)
		if err != nil {
			return nil, fmt.Errorf("%w: meta index entry %q: %v", ErrCorrupt, name, err)
		}
		const prefix = "data:"
		if len(name) < len(prefix) || name[:len(prefix)] != prefix {
			return nil, fmt.Errorf("%w: meta block name %q lacks %q", ErrCorrupt, name, prefix)
		}
		t.meta[name[len(prefix):]] = metaEntry{codec: codec, region: reg}
	}
	idx, ok := t.meta["BCFile.index"]
	if !ok {
		return nil, fmt.Errorf("%w: no BCFile.index meta block", ErrCorrupt)
	}
	ir, err := t.block(idx.codec, idx.region)
	if err != nil {
		return nil, fmt.Errorf("BCFile.index: %w", err)
	}
	if t.codec, err = readString(ir); err != nil {
		return nil, fmt.Errorf("%w: BCFile.index codec: %v", ErrCorrupt, err)
	}
	if n, err = readVInt(ir); err != nil || n < 0 {
		return nil, fmt.Errorf("%w: BCFile.index block count: %v", ErrCorrupt, errOr(err, "negative"))
	}
	for i := 0; i < n; i++ {
		reg, err := t.readRegion(ir)
		if err != nil {
			return nil, fmt.Errorf("%w: data block %d: %v", ErrCorrupt, i, err)
		}
		t.blocks = append(t.blocks, reg)
	}
	if m, ok := t.meta["TFile.meta"]; ok {
		mr, err := t.block(m.codec, m.region)
		if err != nil {
			return nil, fmt.Errorf("TFile.meta: %w", err)
		}
		var v [4]byte
		if _, err := io.ReadFull(mr, v[:]); err != nil {
			return nil, fmt.Errorf("%w: TFile.meta version: %v", ErrCorrupt, err)
		}
		if major := int16(binary.BigEndian.Uint16(v[:])); major != 1 {
			return nil, fmt.Errorf("%w: TFile version %d, want 1.x", ErrCorrupt, major)
		}
		if t.records, err = readVLong(mr); err != nil {
			return nil, fmt.Errorf("%w: TFile.meta record count: %v", ErrCorrupt, err)
		}
	}
	return t, nil
}

func errOr(err error, s string) any {
	if err != nil {
		return err
	}
	return s
}

func (t *tfile) readRegion(r io.ByteReader) (region, error) {
	var reg region
	var err error
	if reg.offset, err = readVLong(r); err != nil {
		return reg, err
	}
	if reg.compressed, err = readVLong(r); err != nil {
		return reg, err
	}
	if reg.raw, err = readVLong(r); err != nil {
		return reg, err
	}
	if reg.offset < 0 || reg.compressed < 0 || reg.raw < 0 || reg.offset > t.size || reg.compressed > t.size-reg.offset {
		return reg, fmt.Errorf("region offset %d size %d outside the file (%d bytes)", reg.offset, reg.compressed, t.size)
	}
	return reg, nil
}

// block opens one block, unpacked, read through a buffer.
func (t *tfile) block(codec string, reg region) (*bufio.Reader, error) {
	sec := io.NewSectionReader(t.r, reg.offset, reg.compressed)
	switch codec {
	case CodecNone:
		return bufio.NewReader(sec), nil
	case CodecGz:
		// Hadoop's "gz" is its DefaultCodec: a zlib stream. A gzip header is
		// taken too.
		br := bufio.NewReader(sec)
		head, _ := br.Peek(2)
		var zr io.Reader
		var err error
		if len(head) == 2 && head[0] == 0x1f && head[1] == 0x8b {
			zr, err = gzip.NewReader(br)
		} else {
			zr, err = zlib.NewReader(br)
		}
		if err != nil {
			return nil, fmt.Errorf("%w: block at %d: %v", ErrCorrupt, reg.offset, err)
		}
		return bufio.NewReader(io.LimitReader(zr, reg.raw)), nil
	default:
		return nil, fmt.Errorf("%w: %q (yarn.nodemanager.log-aggregation.compression-type): this reader has none and gz", ErrCodec, codec)
	}
}

// readVLong decodes TFile's variable-length integer (Utils.readVLong): a
// first byte b >= -32 is the value; [-72, -33] one more byte follows,
// [-104, -73] two, [-120, -105] three; [-128, -121] says b+129 (4 to 8)
// big-endian bytes follow.
func readVLong(r io.ByteReader) (int64, error) {
	b0, err := r.ReadByte()
	if err != nil {
		return 0, err
	}
	fb := int64(int8(b0))
	if fb >= -32 {
		return fb, nil
	}
	next := func(n int) (int64, error) {
		var v int64
		for i := 0; i < n; i++ {
			b, err := r.ReadByte()
			if err != nil {
				return 0, noEOF(err)
			}
			v = v<<8 | int64(b)
		}
		return v, nil
	}
	switch {
	case fb >= -72:
		v, err := next(1)
		return (fb+52)<<8 | v, err
	case fb >= -104:
		v, err := next(2)
		return (fb+88)<<16 | v, err
	case fb >= -120:
		v, err := next(3)
		return (fb+112)<<24 | v, err
	}
	n := int(fb + 129)
	if n < 4 || n > 8 {
		return 0, fmt.Errorf("%w: vlong of %d bytes", ErrCorrupt, n)
	}
	v, err := next(n)
	if err != nil {
		return 0, err
	}
	// sign-extend the n-byte big-endian value
	shift := uint(64 - 8*n)
	return v << shift >> shift, nil
}

func readVInt(r io.ByteReader) (int, error) {
	v, err := readVLong(r)
	if err != nil {
		return 0, err
	}
	if v < -1<<31 || v > 1<<31-1 {
		return 0, fmt.Errorf("%w: vint %d out of range", ErrCorrupt, v)
	}
	return int(v), nil
}

// maxString bounds a TFile string (codec and meta block names are short).
const maxString = 1 << 16

func readString(r *bufio.Reader) (string, error) {
	n, err := readVInt(r)
	if err != nil {
		return "", err
	}
	if n == -1 {
		return "", nil
	}
	if n < 0 || n > maxString {
		return "", fmt.Errorf("%w: string of %d bytes", ErrCorrupt, n)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return "", noEOF(err)
	}
	return string(b), nil
}

func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// chunkReader reads one chunk-encoded value and stops at its last chunk.
type chunkReader struct {
	r      *bufio.Reader
	remain int64
	last   bool
}

func (c *chunkReader) Read(p []byte) (int, error) {
	for c.remain == 0 {
		if c.last {
			return 0, io.EOF
		}
		n, err := readVInt(c.r)
		if err != nil {
			return 0, fmt.Errorf("%w: value chunk length: %v", ErrCorrupt, noEOF(err))
		}
		if n >= 0 {
			c.last = true
			c.remain = int64(n)
		} else {
			c.remain = -int64(n)
		}
	}
	if int64(len(p)) > c.remain {
		p = p[:c.remain]
	}
	n, err := c.r.Read(p)
	c.remain -= int64(n)
	if err == io.EOF {
		if c.remain > 0 {
			err = fmt.Errorf("%w: value cut short", ErrCorrupt)
		} else {
			err = nil
		}
	}
	return n, err
}

// drain skips what is left of the value.
func (c *chunkReader) drain() error {
	_, err := io.Copy(io.Discard, c)
	return err
}
