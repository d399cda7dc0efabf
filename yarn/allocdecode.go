package yarn

import (
	"errors"
	"fmt"
	"strconv"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/xres/xres/hadoopproto/hadoopyarn"
	"github.com/xres/xres/yarn/security"
)

// The allocate answer's containers, decoded by hand.
//
// An answer can grant thousands of containers, and proto.Unmarshal spends
// about 40 allocations on each (every optional scalar of proto2 is a
// pointer of its own, every nested message too) before fromContainer turns
// them into one Container. The allocated containers (AllocateResponseProto
// field 3) are therefore read straight from the wire into Containers; every
// other field goes through proto.Unmarshal as before. What is read, by
// field number (our hadoopproto/hadoopyarn/yarn_protos.proto):
//
//	ContainerProto            1 id (ContainerIdProto)  2 nodeId (NodeIdProto)
//	                          3 node_http_address      4 resource (ResourceProto)
//	                          6 container_token (TokenProto)
//	                          8 allocation_request_id (default -1)
//	                          (5 priority, 7 execution_type, 9 version: skipped)
//	ContainerIdProto          1 app_id  2 app_attempt_id  3 id
//	ApplicationAttemptIdProto 1 application_id  2 attemptId
//	ApplicationIdProto        1 id  2 cluster_timestamp
//	NodeIdProto               1 host  2 port
//	ResourceProto             1 memory  2 virtual_cores  3 resource_value_map
//	ResourceInformationProto  1 key (required)  2 value  (3 units, 4 type: skipped)
//	TokenProto                1 identifier  2 password  3 kind  4 service (all required)
//
// As proto.Unmarshal does: a field seen twice merges (the last scalar
// wins, repeated fields append), a field of an unexpected wire type or an
// unknown number is skipped, and a required field missing is an error.

// allocatedField is AllocateResponseProto.allocated_containers.
const allocatedField = 3

// allocateAnswer is the allocate call's response: ipc.Conn.Call decodes it
// with DecodeFrom.
type allocateAnswer struct {
	*hadoopyarn.AllocateResponseProto
	allocated []Container
}

func newAllocateAnswer() *allocateAnswer {
	return &allocateAnswer{AllocateResponseProto: &hadoopyarn.AllocateResponseProto{}}
}

// DecodeFrom decodes an AllocateResponseProto's bytes: the allocated
// containers by hand, the rest with proto.Unmarshal.
func (a *allocateAnswer) DecodeFrom(b []byte) error {
	a.allocated = nil
	var rest []byte
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		if m < 0 {
			return protowire.ParseError(m)
		}
		if num == allocatedField && typ == protowire.BytesType {
			v, _ := protowire.ConsumeBytes(b[n:])
			c, err := decodeContainer(v)
			if err != nil {
				return fmt.Errorf("allocated container %d: %w", len(a.allocated)+1, err)
			}
			a.allocated = append(a.allocated, c)
		} else {
			rest = append(rest, b[:n+m]...)
		}
		b = b[n+m:]
	}
	return proto.Unmarshal(rest, a.AllocateResponseProto)
}

// response converts a decoded answer.
func (a *allocateAnswer) response() AllocateResponse {
	out := allocateResponse(a.AllocateResponseProto)
	out.Allocated = a.allocated
	return out
}

// wireField is one field of a message being read: its number, wire type
// and, for the three wire types a decoder reads, its value.
type wireField struct {
	num protowire.Number
	typ protowire.Type
	u   uint64 // VarintType
	val []byte // BytesType
}

// eachField calls f for each field of message b.
func eachField(b []byte, f func(wireField) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		fd := wireField{num: num, typ: typ}
		switch typ {
		case protowire.VarintType:
			fd.u, n = protowire.ConsumeVarint(b)
		case protowire.BytesType:
			fd.val, n = protowire.ConsumeBytes(b)
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		if err := f(fd); err != nil {
			return err
		}
	}
	return nil
}

// varint and bytes say whether fd is field num of that wire type (bytes:
// a string, bytes or message field).
func (fd wireField) varint(num protowire.Number) bool {
	return fd.num == num && fd.typ == protowire.VarintType
}
func (fd wireField) bytes(num protowire.Number) bool {
	return fd.num == num && fd.typ == protowire.BytesType
}

// appID is an ApplicationIdProto's fields.
type appID struct {
	id int32
	ts int64
}

func (a *appID) decode(b []byte) error {
	return eachField(b, func(fd wireField) error {
		switch {
		case fd.varint(1):
			a.id = int32(fd.u)
		case fd.varint(2):
			a.ts = int64(fd.u)
		}
		return nil
	})
}

// decodeContainerID reads a ContainerIdProto into ContainerID's string.
func decodeContainerID(b []byte) (string, error) {
	var app, attApp appID
	var attempt int32
	var id int64
	hasAttApp := false
	err := eachField(b, func(fd wireField) error {
		switch {
		case fd.bytes(1):
			return app.decode(fd.val)
		case fd.bytes(2):
			return eachField(fd.val, func(fd wireField) error {
				switch {
				case fd.bytes(1):
					hasAttApp = true
					return attApp.decode(fd.val)
				case fd.varint(2):
					attempt = int32(fd.u)
				}
				return nil
			})
		case fd.varint(3):
			id = int64(fd.u)
		}
		return nil
	})
	if hasAttApp {
		app = attApp
	}
	return formatContainerID(app.ts, app.id, attempt, id), err
}

// errRequired is a required field missing, as proto.Unmarshal reports it.
var errRequired = errors.New("required field not set")

// decodeContainer reads one ContainerProto into a Container, as
// fromContainer converts a decoded one. A message field seen twice merges
// as proto.Unmarshal merges it: its encodings concatenated.
func decodeContainer(b []byte) (Container, error) {
	c := Container{AllocationRequestID: -1}
	var id, node, token []byte
	err := eachField(b, func(fd wireField) error {
		switch {
		case fd.bytes(1):
			id = concat(id, fd.val)
		case fd.bytes(2):
			node = concat(node, fd.val)
		case fd.bytes(3):
			c.NodeHTTP = string(fd.val)
		case fd.bytes(4):
			return decodeResource(fd.val, &c.Resource)
		case fd.bytes(6):
			token = concat(token, fd.val)
		case fd.varint(8):
			c.AllocationRequestID = int64(fd.u)
		}
		return nil
	})
	if err != nil {
		return c, err
	}
	if c.ID, err = decodeContainerID(id); err != nil {
		return c, err
	}
	var host string
	var port int32
	if err := eachField(node, func(fd wireField) error {
		switch {
		case fd.bytes(1):
			host = string(fd.val)
		case fd.varint(2):
			port = int32(fd.u)
		}
		return nil
	}); err != nil {
		return c, err
	}
	c.NodeID = host + ":" + strconv.FormatInt(int64(port), 10)
	if token != nil {
		err = decodeToken(token, &c.Token)
	}
	return c, err
}

// concat is a followed by b, in a new array when a holds something (a
// is part of the wire buffer, which append would write over).
func concat(a, b []byte) []byte {
	if a == nil {
		return b
	}
	return append(append(make([]byte, 0, len(a)+len(b)), a...), b...)
}

// decodeResource reads a ResourceProto into r (merging, as a repeated
// field of the message would).
func decodeResource(b []byte, r *Resource) error {
	return eachField(b, func(fd wireField) error {
		switch {
		case fd.varint(1):
			r.MemoryMB = int64(fd.u)
		case fd.varint(2):
			r.VCores = int64(int32(fd.u))
		case fd.bytes(3):
			var key string
			var value int64
			hasKey := false
			if err := eachField(fd.val, func(fd wireField) error {
				switch {
				case fd.bytes(1):
					key, hasKey = string(fd.val), true
				case fd.varint(2):
					value = int64(fd.u)
				}
				return nil
			}); err != nil {
				return err
			}
			if !hasKey {
				return fmt.Errorf("resource information: key: %w", errRequired)
			}
			switch key {
			case "memory-mb", "vcores":
			default:
				if r.Extra == nil {
					r.Extra = map[string]int64{}
				}
				r.Extra[key] = value
			}
		}
		return nil
	})
}

// decodeToken reads a TokenProto into t. The identifier and password are
// copied into one new array (the wire buffer is not kept).
func decodeToken(b []byte, t *security.Token) error {
	var ident, pass []byte
	var seen uint8
	err := eachField(b, func(fd wireField) error {
		switch {
		case fd.bytes(1):
			ident, seen = fd.val, seen|1
		case fd.bytes(2):
			pass, seen = fd.val, seen|2
		case fd.bytes(3):
			t.Kind, seen = string(fd.val), seen|4
		case fd.bytes(4):
			t.Service, seen = string(fd.val), seen|8
		}
		return nil
	})
	if err != nil {
		return err
	}
	if seen != 15 {
		return fmt.Errorf("container token: %w", errRequired)
	}
	both := make([]byte, len(ident)+len(pass))
	n := copy(both, ident)
	copy(both[n:], pass)
	t.Identifier, t.Password = both[:n:n], both[n:]
	return nil
}
