package coord

import (
	"bytes"
	"crypto/sha256"
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
	Owner
	Since time.Time `json:"since"`
}

type stateBody struct {
	Entries []Entry `json:"entries"`
}

const stateMagic = "xres-coordination"
const stateVersion = "v1"

// The state file: a header line that pins the length and SHA-256 of the
// JSON body, so a truncated, garbled or foreign file is detected rather than
// read as "nothing is held".
//
//	┌────────────────────────────────────────────────────────────────┐
//	│ xres-coordination v1 <body length> <sha256 of body, hex>\n     │
//	├────────────────────────────────────────────────────────────────┤
//	│ {"entries":[{"resource":"gpu","key":"GPU-8b6f…","pid":4711,    │
//	│   "start":8812345,"boot":"…","pidns":"pid:[4026531836]",       │
//	│   "since":"2026-11-29T13:40:00Z"}, …]}            (<len> bytes) │
//	└────────────────────────────────────────────────────────────────┘
func encodeState(entries []Entry) ([]byte, error) {
	if entries == nil {
		entries = []Entry{}
	}
	body, err := json.Marshal(stateBody{Entries: entries})
	if err != nil {
		return nil, fmt.Errorf("encode coordination state: %w", err)
	}
	return append(headerFor(body), body...), nil
}

// headerFor returns the header line that pins body.
func headerFor(body []byte) []byte {
	sum := sha256.Sum256(body)
	return fmt.Appendf(nil, "%s %s %d %s\n", stateMagic, stateVersion, len(body), hex.EncodeToString(sum[:]))
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
	if f[1] != stateVersion {
		return nil, fmt.Errorf("%w: unsupported version %q", errStateFormat, f[1])
	}
	n, err := strconv.Atoi(f[2])
	if err != nil || n < 0 {
		return nil, fmt.Errorf("%w: bad body length %q", errStateFormat, f[2])
	}
	body := b[nl+1:]
	if len(body) != n {
		return nil, fmt.Errorf("%w: body is %d bytes, header says %d (truncated or appended to)", errStateFormat, len(body), n)
	}
	sum := sha256.Sum256(body)
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
		k := [2]string{e.Resource, e.Key}
		if seen[k] {
			return nil, fmt.Errorf("%w: device %s/%s recorded twice", errStateFormat, e.Resource, e.Key)
		}
		seen[k] = true
	}
	return sb.Entries, nil
}
