package coord

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
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
}

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
	stateVersion = stateV3 // the newest this code reads and writes
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
func encodeState(entries []Entry) ([]byte, error) {
	return encodeStatePadded(entries, 0)
}

// encodeStatePadded encodes entries into a file of at least size bytes,
// the body padded with trailing spaces where it is shorter.
func encodeStatePadded(entries []Entry, size int) ([]byte, error) {
	if entries == nil {
		entries = []Entry{}
	}
	version := stateV1
	for _, e := range entries {
		if e.Group != nil || e.Index != "" {
			version = stateV3
			break
		}
		if e.Parent != "" {
			version = stateV2
		}
	}
	body, err := json.Marshal(stateBody{Entries: entries})
	if err != nil {
		return nil, fmt.Errorf("encode coordination state: %w", err)
	}
	// The header's length depends on the body's only through the digits
	// of its length: find the shortest padded body that makes the file at
	// least size bytes (one more than size where the length gains a digit).
	fixed := len(headerFor(version, body)) - len(strconv.Itoa(len(body)))
	n := max(len(body), size-fixed-len(strconv.Itoa(size)))
	for fixed+len(strconv.Itoa(n))+n < size {
		n++
	}
	for len(body) < n {
		body = append(body, ' ')
	}
	header := headerFor(version, body)
	return append(header, body...), nil
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
	if version != stateV1 && version != stateV2 && version != stateV3 {
		return nil, fmt.Errorf("%w: unsupported version %q (this xres reads %s to %s; written by a newer xres?)", errStateFormat, version, stateV1, stateV3)
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
	var sb stateBody
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&sb); err != nil {
		return nil, fmt.Errorf("%w: %v", errStateFormat, err)
	}
	seen := map[[2]string]bool{}
	for i, e := range sb.Entries {
		if e.Resource == "" || e.Key == "" || e.PID <= 0 {
			return nil, fmt.Errorf("%w: entry %d incomplete", errStateFormat, i)
		}
		if e.Parent != "" && version == stateV1 {
			return nil, fmt.Errorf("%w: entry %d has a parent, which a %s file cannot have", errStateFormat, i, stateV1)
		}
		if (e.Group != nil || e.Index != "") && version != stateV3 || e.Group != nil && e.Group.PGID <= 0 {
			return nil, fmt.Errorf("%w: entry %d has a bad group or one a %s file cannot have", errStateFormat, i, version)
		}
		if e.Parent == e.Key {
			return nil, fmt.Errorf("%w: entry %d names %s as its own parent", errStateFormat, i, e.Key)
		}
		k := [2]string{e.Resource, e.Key}
		if seen[k] {
			return nil, fmt.Errorf("%w: device %s/%s recorded twice", errStateFormat, e.Resource, e.Key)
		}
		seen[k] = true
	}
	return sb.Entries, nil
}
