package tokenfile

import "errors"

// The protobuf wire format, read as far as the token file needs it. The
// launcher links this package; google.golang.org/protobuf's protowire
// would bring its internal/detrand, whose package initialisation reads the
// running executable (0.1 ms of every launch).

// errWire marks a field that does not parse (truncated, an overlong
// varint, a bad field number or wire type, an unmatched group end).
var errWire = errors.New("bad protobuf field")

// Wire types (protobuf encoding).
const (
	wireVarint     = 0
	wireFixed64    = 1
	wireBytes      = 2
	wireStartGroup = 3
	wireEndGroup   = 4
	wireFixed32    = 5
)

// wireMaxDepth bounds nested groups, as protowire does.
const wireMaxDepth = 10000

// consumeVarint decodes a varint at the start of b: its value and length,
// n < 0 when b holds none (truncated, or more than 64 bits).
func consumeVarint(b []byte) (v uint64, n int) {
	for i := 0; i < len(b) && i < 10; i++ {
		c := b[i]
		if i == 9 && c > 1 {
			return 0, -1
		}
		v |= uint64(c&0x7f) << (7 * uint(i))
		if c < 0x80 {
			return v, i + 1
		}
	}
	return 0, -1
}

// consumeTag decodes a field's tag: number, wire type and length; n < 0
// on a bad tag (a field number below 1 or above int32).
func consumeTag(b []byte) (num int32, typ int, n int) {
	v, n := consumeVarint(b)
	if n < 0 || v>>3 > 1<<31-1 || v>>3 < 1 {
		return 0, 0, -1
	}
	return int32(v >> 3), int(v & 7), n
}

// consumeBytes decodes a length-delimited value: its bytes and the length
// read.
func consumeBytes(b []byte) ([]byte, int) {
	m, n := consumeVarint(b)
	if n < 0 || m > uint64(len(b)-n) {
		return nil, -1
	}
	return b[n : n+int(m)], n + int(m)
}

// consumeFieldValue skips the value of field num of wire type typ at the
// start of b (a group to its matching end): the length skipped, < 0 on an
// error.
func consumeFieldValue(num int32, typ int, b []byte) int {
	return consumeValue(num, typ, b, wireMaxDepth)
}

func consumeValue(num int32, typ int, b []byte, depth int) int {
	switch typ {
	case wireVarint:
		_, n := consumeVarint(b)
		return n
	case wireFixed32:
		if len(b) < 4 {
			return -1
		}
		return 4
	case wireFixed64:
		if len(b) < 8 {
			return -1
		}
		return 8
	case wireBytes:
		_, n := consumeBytes(b)
		return n
	case wireStartGroup:
		if depth <= 0 {
			return -1
		}
		for total := 0; ; {
			num2, typ2, n := consumeTag(b[total:])
			if n < 0 {
				return -1
			}
			total += n
			if typ2 == wireEndGroup {
				if num2 != num {
					return -1
				}
				return total
			}
			n = consumeValue(num2, typ2, b[total:], depth-1)
			if n < 0 {
				return -1
			}
			total += n
		}
	default: // an end group without its start, reserved types
		return -1
	}
}
