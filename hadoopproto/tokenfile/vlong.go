package tokenfile

import (
	"errors"
	"fmt"
)

// Hadoop's WritableUtils variable-length integer (VLong; a VInt is the
// same form): one byte for -112..127, else a length byte (-113..-120:
// positive, -121..-128: negative, stored as its one's complement) and
// that many big-endian bytes. (TFile's Utils.readVLong, used by the
// aggregated logs, is another encoding: yarn/aggrlog.)

// ErrShort means the input ended inside a value.
var ErrShort = errors.New("unexpected end")

// Reader reads Writable values from a byte slice. Off is the offset of
// the next byte.
type Reader struct {
	B   []byte
	Off int
}

// Left is the number of bytes not yet read.
func (r *Reader) Left() int { return len(r.B) - r.Off }

// VLong reads one VLong.
func (r *Reader) VLong() (int64, error) {
	if r.Off >= len(r.B) {
		return 0, ErrShort
	}
	first := int8(r.B[r.Off])
	r.Off++
	if first >= -112 {
		return int64(first), nil
	}
	neg := first < -120
	n := -112 - int(first)
	if neg {
		n = -120 - int(first)
	}
	if n > len(r.B)-r.Off {
		return 0, ErrShort
	}
	var v int64
	for i := 0; i < n; i++ {
		v = v<<8 | int64(r.B[r.Off+i])
	}
	r.Off += n
	if neg {
		v = ^v
	}
	return v, nil
}

// Count reads a VLong count or length that cannot exceed the bytes left
// (each counted item takes at least one byte).
func (r *Reader) Count() (int, error) {
	n, err := r.VLong()
	if err != nil {
		return 0, err
	}
	if n < 0 || n > int64(r.Left()) {
		return 0, fmt.Errorf("count %d out of range (%d bytes left)", n, r.Left())
	}
	return int(n), nil
}

// Bytes reads a VLong length and that many bytes, returned as a subslice
// of the input (not a copy).
func (r *Reader) Bytes() ([]byte, error) {
	n, err := r.Count()
	if err != nil {
		return nil, err
	}
	v := r.B[r.Off : r.Off+n : r.Off+n]
	r.Off += n
	return v, nil
}

// Text reads a Hadoop Text: a VLong length and that many UTF-8 bytes.
func (r *Reader) Text() (string, error) {
	b, err := r.Bytes()
	return string(b), err
}

// AppendVLong appends v in WritableUtils.writeVLong form.
func AppendVLong(out []byte, v int64) []byte {
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

// AppendBytes appends a VLong length and b.
func AppendBytes(out, b []byte) []byte { return append(AppendVLong(out, int64(len(b))), b...) }

// AppendText appends s as a Hadoop Text.
func AppendText(out []byte, s string) []byte { return AppendBytes(out, []byte(s)) }
