package coord

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/xres/xres/resources/jsonfile"
)

// Entry records that one process holds one device of one resource.
type Entry struct {
	Resource string `json:"resource"`
	Key      string `json:"key"`
	// Parent is the key of the physical device Key is a partition of (a
	// MIG instance's GPU); "" for a whole device. Version 2 of the file.
	Parent string `json:"parent,omitempty"`
	Owner
	// Group is the worker's process group, recorded once the worker runs:
	// while any process of it lives the device stays held, even after the
	// owner died (a worker's forked helpers outlive a SIGKILLed launcher).
	// Version 3 of the file.
	Group *Group `json:"group,omitempty"`
	// Index is the device's index, recorded when the grant was written to
	// Flink's coordination file too (to remove it there on release).
	// Version 3 of the file.
	Index string    `json:"index,omitempty"`
	Since time.Time `json:"since"`
	// Quarantine, when set, makes the entry a quarantine, not a grant: the
	// device is never granted while it is there, whoever recorded it
	// (Owner) and whether that process lives (see quarantine.go).
	// Version 4 of the file.
	Quarantine *Quarantine `json:"quarantine,omitempty"`
}

// stateBody is the state file's body; appendStateBody and readStateBody
// write and read it by hand, as encoding/json would with these tags.
type stateBody struct {
	Entries []Entry `json:"entries"`
}

const stateMagic = "xres-coordination"

// State file versions. v2 adds an entry's "parent", v3 its "group"; a
// file is written in the oldest version that holds its entries (v1 while no
// entry has a parent or a group), so that launchers of the previous version
// sharing the host keep reading it. A v1 reader refuses a v2 file (as
// corrupt), which is right: it would not see that a held partition keeps
// its whole device busy.
const (
	stateV1      = "v1"
	stateV2      = "v2"
	stateV3      = "v3"
	stateV4      = "v4"    // quarantines; a v3 reader refuses the file, so it grants nothing: never a quarantined device
	stateVersion = stateV4 // the newest this code reads and writes
)

// The state file: a header line that pins the length and SHA-256 of the
// JSON body, so a truncated, garbled or foreign file is detected rather than
// read as "nothing is held".
//
//	┌────────────────────────────────────────────────────────────────┐
//	│ xres-coordination v2 <body length> <sha256 of body, hex>\n     │
//	├────────────────────────────────────────────────────────────────┤
//	│ {"entries":[{"resource":"gpu","key":"MIG-7a0e…",               │
//	│   "parent":"GPU-3f1c…","pid":4711,"start":8812345,"boot":"…",   │
//	│   "pidns":"pid:[4026531836]","since":"2026-11-29T13:40:00Z"},  │
//	│   …]}                                              (<len> bytes) │
//	└────────────────────────────────────────────────────────────────┘
//
// v1 is the same without "parent" (and "v1" in the header).
//
// The body may end in spaces (JSON whitespace, counted in the length and
// the checksum): a file rewritten in place is padded so that it never
// shrinks (see Host.writeInPlace).
func encodeState(entries []Entry) []byte {
	return encodeStatePadded(entries, 0)
}

// encodeStatePadded encodes entries into a file of at least size bytes,
// the body padded with trailing spaces where it is shorter.
func encodeStatePadded(entries []Entry, size int) []byte {
	version := stateV1
	for _, e := range entries {
		if e.Quarantine != nil {
			version = stateV4
			break
		}
	}
	for _, e := range entries {
		if version == stateV4 {
			break
		}
		if e.Group != nil || e.Index != "" {
			version = stateV3
			break
		}
		if e.Parent != "" {
			version = stateV2
		}
	}
	body := appendStateBody(make([]byte, 0, max(size, 64+160*len(entries))), entries)
	// The header's length depends on the body's only through the digits
	// of its length: find the shortest padded body that makes the file at
	// least size bytes (one more than size where the length gains a digit).
	fixed := len(stateMagic) + 1 + len(version) + 1 + 1 + 2*32 + 1 // the header but its length's digits
	n := max(len(body), size-fixed-len(strconv.Itoa(size)))
	for fixed+len(strconv.Itoa(n))+n < size {
		n++
	}
	for len(body) < n {
		body = append(body, ' ')
	}
	return append(headerFor(version, body), body...)
}

// headerFor returns the header line of the given version that pins body.
func headerFor(version string, body []byte) []byte {
	sum := sum256(body)
	return fmt.Appendf(nil, "%s %s %d %s\n", stateMagic, version, len(body), hex.EncodeToString(sum[:]))
}

// errStateFormat marks a state file that is not a complete file of ours.
var errStateFormat = errors.New("bad state file")

// decodeState parses a state file. Any deviation (empty file, missing or
// foreign header, wrong length, checksum mismatch, bad JSON, invalid or
// duplicate entries) is an error wrapping errStateFormat.
func decodeState(b []byte) ([]Entry, error) {
	nl := bytes.IndexByte(b, '\n')
	if nl < 0 {
		if len(b) == 0 {
			return nil, fmt.Errorf("%w: empty (truncated)", errStateFormat)
		}
		return nil, fmt.Errorf("%w: no header line", errStateFormat)
	}
	f := strings.Fields(string(b[:nl]))
	if len(f) != 4 || f[0] != stateMagic {
		return nil, fmt.Errorf("%w: header is not %q (not written by xres)", errStateFormat, stateMagic+" "+stateVersion+" …")
	}
	version := f[1]
	if version != stateV1 && version != stateV2 && version != stateV3 && version != stateV4 {
		return nil, fmt.Errorf("%w: unsupported version %q (this xres reads %s to %s; written by a newer xres?)", errStateFormat, version, stateV1, stateVersion)
	}
	n, err := strconv.Atoi(f[2])
	if err != nil || n < 0 {
		return nil, fmt.Errorf("%w: bad body length %q", errStateFormat, f[2])
	}
	body := b[nl+1:]
	if len(body) != n {
		return nil, fmt.Errorf("%w: body is %d bytes, header says %d (truncated or appended to)", errStateFormat, len(body), n)
	}
	sum := sum256(body)
	if hex.EncodeToString(sum[:]) != strings.ToLower(f[3]) {
		return nil, fmt.Errorf("%w: checksum mismatch", errStateFormat)
	}
	entries, err := readStateBody(body)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errStateFormat, err)
	}
	seen := map[[2]string]bool{}
	for i, e := range entries {
		if e.Resource == "" || e.Key == "" || e.PID <= 0 {
			return nil, fmt.Errorf("%w: entry %d incomplete", errStateFormat, i)
		}
		if e.Parent != "" && version == stateV1 {
			return nil, fmt.Errorf("%w: entry %d has a parent, which a %s file cannot have", errStateFormat, i, stateV1)
		}
		if (e.Group != nil || e.Index != "") && version != stateV3 && version != stateV4 || e.Group != nil && e.Group.PGID <= 0 {
			return nil, fmt.Errorf("%w: entry %d has a bad group or one a %s file cannot have", errStateFormat, i, version)
		}
		if e.Parent == e.Key {
			return nil, fmt.Errorf("%w: entry %d names %s as its own parent", errStateFormat, i, e.Key)
		}
		if e.Quarantine != nil && (version != stateV4 || e.Quarantine.Reason == "" || e.Group != nil || e.Index != "" ||
			e.Quarantine.Return != ReturnQuiet && !e.Quarantine.untilSeen()) {
			return nil, fmt.Errorf("%w: entry %d is a bad quarantine or one a %s file cannot have", errStateFormat, i, version)
		}
		// A device may be held by a worker and quarantined: two entries.
		k := [2]string{e.Resource, e.Key}
		if e.Quarantine != nil {
			k[0] = "quarantine"
		}
		if seen[k] {
			return nil, fmt.Errorf("%w: device %s/%s recorded twice", errStateFormat, e.Resource, e.Key)
		}
		seen[k] = true
	}
	return entries, nil
}

// appendStateBody appends the JSON body of a state file: what json.Marshal
// writes for stateBody{entries}, written by hand (jsonfile: no reflection
// on a launcher's every start).
func appendStateBody(b []byte, entries []Entry) []byte {
	b = append(b, `{"entries":[`...)
	for i, e := range entries {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"resource":`...)
		b = jsonfile.AppendString(b, e.Resource)
		b = append(b, `,"key":`...)
		b = jsonfile.AppendString(b, e.Key)
		if e.Parent != "" {
			b = append(b, `,"parent":`...)
			b = jsonfile.AppendString(b, e.Parent)
		}
		b = append(b, `,"pid":`...)
		b = strconv.AppendInt(b, int64(e.PID), 10)
		b = append(b, `,"start":`...)
		b = strconv.AppendUint(b, e.Start, 10)
		if e.Boot != "" {
			b = append(b, `,"boot":`...)
			b = jsonfile.AppendString(b, e.Boot)
		}
		if e.PIDNS != "" {
			b = append(b, `,"pidns":`...)
			b = jsonfile.AppendString(b, e.PIDNS)
		}
		if e.Group != nil {
			b = append(b, `,"group":{"pgid":`...)
			b = strconv.AppendInt(b, int64(e.Group.PGID), 10)
			b = append(b, `,"start":`...)
			b = strconv.AppendUint(b, e.Group.Start, 10)
			b = append(b, '}')
		}
		if e.Index != "" {
			b = append(b, `,"index":`...)
			b = jsonfile.AppendString(b, e.Index)
		}
		b = append(b, `,"since":`...)
		b = jsonfile.AppendTime(b, e.Since)
		if e.Quarantine != nil {
			b = appendQuarantine(append(b, `,"quarantine":`...), *e.Quarantine)
		}
		b = append(b, '}')
	}
	return append(b, "]}"...)
}

// readStateBody reads a state file's JSON body as json.Decoder with
// DisallowUnknownFields reads it into stateBody, except that member names
// must match in case (xres never wrote them otherwise), a member may be
// given once only (encoding/json merges a repeated one), and nothing may
// follow the document.
func readStateBody(body []byte) ([]Entry, error) {
	r := jsonfile.NewReader(body)
	var entries []Entry
	err := r.Object(func(key string) error {
		if key != "entries" {
			return jsonfile.Unknown(key)
		}
		entries = entries[:0]
		return r.Array(func() error {
			e, err := readEntry(r)
			entries = append(entries, e)
			return err
		})
	})
	if err == nil {
		err = r.End()
	}
	return entries, err
}

func readEntry(r *jsonfile.Reader) (Entry, error) {
	var e Entry
	err := r.Object(func(key string) (err error) {
		switch key {
		case "resource":
			e.Resource, err = r.String()
		case "key":
			e.Key, err = r.String()
		case "parent":
			e.Parent, err = r.String()
		case "pid":
			e.PID, err = r.Int()
		case "start":
			e.Start, err = r.Uint64()
		case "boot":
			e.Boot, err = r.String()
		case "pidns":
			e.PIDNS, err = r.String()
		case "group":
			e.Group, err = readGroup(r)
		case "index":
			e.Index, err = r.String()
		case "since":
			e.Since, err = r.Time()
		case "quarantine":
			e.Quarantine, err = readQuarantine(r)
		default:
			err = jsonfile.Unknown(key)
		}
		return err
	})
	return e, err
}

// readGroup reads an entry's group; null is none.
func readGroup(r *jsonfile.Reader) (*Group, error) {
	if null, err := r.Null(); null || err != nil {
		return nil, err
	}
	g := &Group{}
	err := r.Object(func(key string) (err error) {
		switch key {
		case "pgid":
			g.PGID, err = r.Int()
		case "start":
			g.Start, err = r.Uint64()
		default:
			err = jsonfile.Unknown(key)
		}
		return err
	})
	return g, err
}
