package coord

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/driver"
	"github.com/xres/xres/resources"
)

// The state file and the device cache are written and read by hand
// (jsonfile); encoding/json with the structs' tags is the oracle they are
// held to: the same bytes out, the same entries in.

// jsonStateBody is how the state body was read with encoding/json.
func jsonStateBody(body []byte) ([]Entry, error) {
	var sb stateBody
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	err := dec.Decode(&sb)
	return sb.Entries, err
}

func randomEntries(rng *rand.Rand) []Entry {
	strs := []string{"", "gpu", "GPU-3f1c<&>", "MIG-7a0e\u2028x", "a\"b\\c", "\x01\t\n", "ü€", "pid:[4026531836]", "\xff"}
	pick := func() string { return strs[rng.IntN(len(strs))] }
	entries := make([]Entry, rng.IntN(4))
	for i := range entries {
		e := Entry{Resource: pick(), Key: pick(), Parent: pick(), Index: pick(),
			Owner: Owner{PID: rng.IntN(1 << 22), Start: rng.Uint64(), Boot: pick(), PIDNS: pick()},
			Since: time.Unix(rng.Int64N(4e9), 0).UTC()}
		if rng.IntN(2) == 0 {
			e.Group = &Group{PGID: rng.IntN(1 << 22), Start: rng.Uint64()}
		}
		if rng.IntN(3) == 0 {
			e.Quarantine = &Quarantine{Reason: pick(), Event: pick(), XID: rng.Uint64N(200), Last: time.Unix(rng.Int64N(4e9), 0).UTC(), Return: pick()}
		}
		entries[i] = e
	}
	return entries
}

func TestStateBodyAsEncodingJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 500; i++ {
		entries := randomEntries(rng)
		want, err := json.Marshal(stateBody{Entries: append([]Entry{}, entries...)})
		require.NoError(t, err)
		got := appendStateBody(nil, entries)
		require.Equal(t, string(want), string(got))
		back, err := readStateBody(got)
		require.NoError(t, err)
		oracle, err := jsonStateBody(got)
		require.NoError(t, err)
		require.Equal(t, len(oracle), len(back))
		for j := range back {
			require.Equal(t, oracle[j], back[j])
		}
	}
}

// FuzzStateBody: whatever the hand-written reader accepts, encoding/json
// accepts too, with the same entries (the reader may refuse more: member
// names in another case, a member given twice, data after the document).
func FuzzStateBody(f *testing.F) {
	rng := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 8; i++ {
		f.Add(appendStateBody(nil, randomEntries(rng)))
	}
	f.Add([]byte(`{"entries":[{"resource":"gpu","key":"a","pid":1,"start":1,"group":null,"since":null}]}`))
	f.Add([]byte(`{"entries":null}`))
	f.Add([]byte(`{"entries":[{"resource":"gpu","key":"a","pid":1,"start":1,"since":"2026-12-07T01:00:00Z","quarantine":{"reason":"Xid 79","event":"xid","xid":79,"last":"2026-12-07T01:00:00Z","return":"seen"}}]}`))
	f.Add([]byte(`null`))
	// CI found this one: encoding/json merges the second quarantine into
	// the first; the reader refuses a member given twice.
	f.Add([]byte(`{"entries":[{"index":"0000000","quarantine":{"return":"000000"},"index":"0000000","quarantine":{}}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		got, err := readStateBody(body)
		if err != nil {
			return
		}
		want, werr := jsonStateBody(body)
		if werr != nil {
			t.Fatalf("read %q as %+v; encoding/json refuses it: %v", body, got, werr)
		}
		if len(got) != len(want) {
			t.Fatalf("read %q: %d entries, encoding/json %d", body, len(got), len(want))
		}
		for i := range got {
			if g, w := got[i], want[i]; g.Resource != w.Resource || g.Key != w.Key || g.Parent != w.Parent ||
				g.Owner != w.Owner || g.Index != w.Index || !g.Since.Equal(w.Since) ||
				(g.Group == nil) != (w.Group == nil) || g.Group != nil && *g.Group != *w.Group ||
				(g.Quarantine == nil) != (w.Quarantine == nil) || g.Quarantine != nil && *g.Quarantine != *w.Quarantine {
				t.Fatalf("read %q: entry %d is %+v, encoding/json %+v", body, i, g, w)
			}
		}
	})
}

func TestDeviceCacheAsEncodingJSON(t *testing.T) {
	at := time.Date(2026, 12, 2, 17, 40, 1, 123456789, time.FixedZone("x", 3600))
	for _, devs := range [][]driver.Device{
		nil,
		{},
		{{Key: "GPU-0<&>", Info: resources.Properties{"index": "0", "uuid": "GPU-0", "name": "NVIDIA \"A100\""}}},
		{{Key: "MIG-1", Parent: "GPU-1", Info: resources.Properties{}}, {Key: "2", Unhealthy: "retired pages pending\n"}},
	} {
		cf := deviceCacheFile{Boot: "daa9efca-f518", Time: at, Devices: devs}
		want, err := json.Marshal(cf)
		require.NoError(t, err)
		got := appendDeviceCache(nil, cf)
		require.Equal(t, string(want), string(got))
		back, err := readDeviceCache(got)
		require.NoError(t, err)
		require.Equal(t, cf.Boot, back.Boot)
		require.True(t, cf.Time.Equal(back.Time))
		require.Equal(t, len(cf.Devices), len(back.Devices))
		for i := range back.Devices {
			require.Equal(t, cf.Devices[i], back.Devices[i])
		}
	}
	for _, bad := range []string{"", "{", `{"boot":1}`, `{"devices":[{"Key":"a","Extra":1}]}`, `{"boot":"b"} x`, `{"time":"soon"}`} {
		_, err := readDeviceCache([]byte(bad))
		require.Error(t, err, bad)
		require.True(t, strings.HasPrefix(err.Error(), "json"), err.Error())
	}
}
