package coord

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/xres/xres/driver"
	"github.com/xres/xres/resources"
)

// Fuzz targets for the parsers of host state another user or process may
// have written: Flink's coordination file, the device cache,
// /proc/<pid>/stat and /proc/locks lines. Each seed corpus replays in the
// unit tests; `go test -fuzz` explores from it.

// FuzzParseFlinkFile: any input is parsed or refused without a panic; what
// is accepted is lines of a decimal index and a positive pid, which write
// back (as rewrite does) to the same lines, and an error never quotes the
// file.
func FuzzParseFlinkFile(f *testing.F) {
	for _, s := range []string{"", "\n", "0 123\n1 456\n", "0 123", "  2   99  \n\n3 4\n", "a b\n", "0 -1\n", "0 0\n",
		"0 1 2\n", "xres-coordination v1 2 ab\n{}", "key: value\n", "0 99999999999999999999\n", "1234567890 1\n", "\x00\xff 1\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		lines, err := ParseFlinkFile("/f", b)
		if err != nil {
			for _, line := range strings.Split(string(b), "\n") {
				if l := strings.TrimSpace(line); len(l) > 8 && strings.Contains(err.Error(), l) {
					t.Fatalf("the error quotes the file: %v", err)
				}
			}
			return
		}
		var out bytes.Buffer
		for _, l := range lines {
			if !decimal(l.Index) || l.PID <= 0 {
				t.Fatalf("accepted %+v", l)
			}
			fmt.Fprintf(&out, "%s %d\n", l.Index, l.PID)
		}
		again, err := ParseFlinkFile("/f", out.Bytes())
		if err != nil || len(again) != len(lines) {
			t.Fatalf("rewritten lines do not parse back: %v", err)
		}
		for i := range lines {
			if again[i] != lines[i] {
				t.Fatalf("line %d: %+v became %+v", i, lines[i], again[i])
			}
		}
	})
}

// FuzzReadDeviceCache: any cache file is read or refused (a miss) without
// a panic; what is read writes back to a file that reads the same.
func FuzzReadDeviceCache(f *testing.F) {
	good := appendDeviceCache(nil, deviceCacheFile{Boot: "b", Time: time.Date(2026, 12, 6, 1, 2, 3, 4, time.UTC),
		Devices: []driver.Device{{Key: "GPU-a", Info: resources.Properties{"index": "0", "uuid": "GPU-a"}, Parent: "", Unhealthy: "xid 79"}}})
	for _, s := range []string{string(good), `{"boot":"b","time":"2026-12-06T01:02:03Z","devices":null}`, `{}`, `{"devices":[{}]}`,
		`{"boot":1}`, `{"Key":"x"}`, `[]`, ``, `{"devices":[{"Info":{"a":"b","a":"c"}}]}`, `{"boot":"\u0000"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		cf, err := readDeviceCache(b)
		if err != nil {
			return
		}
		once := appendDeviceCache(nil, cf)
		cf2, err := readDeviceCache(once)
		if err != nil {
			t.Fatalf("what was read does not read back: %v\n%s", err, once)
		}
		if twice := appendDeviceCache(nil, cf2); !bytes.Equal(once, twice) {
			t.Fatalf("not stable:\n%s\n%s", once, twice)
		}
	})
}

// FuzzParseStat: any /proc/<pid>/stat text is parsed or refused without a
// panic; what is parsed has a one-letter state and the fields found after
// the last ')' (a command name may hold spaces and parentheses).
func FuzzParseStat(f *testing.F) {
	for _, s := range []string{"19573 (cat) R 19570 19570 3409 0 -1 4194304 122 0 0 0 0 0 0 0 20 0 1 0 49563 3133440 406",
		"42 (a) b (c) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 777 0 0", "7 (x) Z 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5 0 0",
		"7 x R 1", "7 (x) R 1 2 3", ")", "() R -1 -2 -3 0 0 0 0 0 0 0 0 0 0 0 0 0 0 18446744073709551615"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := parseStat(b)
		if err != nil {
			return
		}
		rest := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		if len(rest) < 20 || len(rest[0]) != 1 || st.state != rest[0][0] {
			t.Fatalf("accepted %q as %+v", b, st)
		}
	})
}

// FuzzParseLocksLine: any /proc/locks line is read or skipped without a
// panic; a waiter ("->") is never taken for a holder.
func FuzzParseLocksLine(f *testing.F) {
	for _, s := range []string{"1: FLOCK  ADVISORY  WRITE 4711 08:01:1234 0 EOF", "1: -> FLOCK  ADVISORY  WRITE 4712 08:01:1234 0 EOF",
		"2: POSIX  ADVISORY  READ 99 00:1f:77 0 EOF", "", "1:", "x y z w v u"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		pid, id, ok := parseLocksLine(line)
		if !ok {
			return
		}
		fs := strings.Fields(line)
		if n, err := strconv.Atoi(fs[4]); fs[1] == "->" || fs[5] != id || err != nil || n != pid {
			t.Fatalf("accepted %q as %d %s", line, pid, id)
		}
	})
}
