package jsonfile

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestAppendStringAsEncodingJSON(t *testing.T) {
	for _, s := range []string{"", "plain", `a"b\c`, "<script>&</script>", "\x00\x01\x1f\x7f", "\b\f\n\r\t",
		"ü€😀", "\u2028\u2029", "\xff\xfe", "a\xc3", "\xed\xa0\x80", "GPU-00000000-0000-4000-8000-000000000000"} {
		want, err := json.Marshal(s)
		require.NoError(t, err)
		require.Equal(t, string(want), string(AppendString(nil, s)), "%q", s)
	}
}

func FuzzAppendString(f *testing.F) {
	f.Add("<a href=\"x\">\u2028\xff</a>")
	f.Fuzz(func(t *testing.T, s string) {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := AppendString([]byte("prefix"), s); string(got) != "prefix"+string(want) {
			t.Fatalf("%q: got %s, encoding/json %s", s, got[6:], want)
		}
	})
}

func TestAppendTimeAndMap(t *testing.T) {
	at := time.Date(2026, 12, 2, 17, 40, 1, 5000, time.FixedZone("", -7200))
	want, _ := json.Marshal(at)
	require.Equal(t, string(want), string(AppendTime(nil, at)))
	for _, m := range []map[string]string{nil, {}, {"b": "2", "a": "1", "<": ">"}} {
		want, _ := json.Marshal(m)
		require.Equal(t, string(want), string(AppendStringMap(nil, m)))
	}
}

func TestReader(t *testing.T) {
	doc := `{"s":"x\u00e9\n","n":-12,"u":18446744073709551615,"t":"2026-12-02T17:40:01Z","m":{"k":"v"},"a":[1,2],"z":null,"nm":null}`
	r := NewReader([]byte(doc))
	var got struct {
		s    string
		n    int
		u    uint64
		t    time.Time
		m    map[string]string
		a    []int
		z    int
		nm   map[string]string
		seen []string
	}
	err := r.Object(func(key string) (err error) {
		got.seen = append(got.seen, key)
		switch key {
		case "s":
			got.s, err = r.String()
		case "n":
			got.n, err = r.Int()
		case "u":
			got.u, err = r.Uint64()
		case "t":
			got.t, err = r.Time()
		case "m":
			got.m, err = r.StringMap()
		case "a":
			err = r.Array(func() error {
				v, err := r.Int()
				got.a = append(got.a, v)
				return err
			})
		case "z":
			got.z, err = r.Int()
		case "nm":
			got.nm, err = r.StringMap()
		default:
			err = Unknown(key)
		}
		return err
	})
	require.NoError(t, err)
	require.NoError(t, r.End())
	require.Equal(t, "xé\n", got.s)
	require.Equal(t, -12, got.n)
	require.Equal(t, uint64(18446744073709551615), got.u)
	require.True(t, got.t.Equal(time.Date(2026, 12, 2, 17, 40, 1, 0, time.UTC)))
	require.Equal(t, map[string]string{"k": "v"}, got.m)
	require.Equal(t, []int{1, 2}, got.a)
	require.Nil(t, got.nm)
	require.Equal(t, []string{"s", "n", "u", "t", "m", "a", "z", "nm"}, got.seen)
}

func TestReaderRefuses(t *testing.T) {
	for _, tc := range []struct {
		doc  string
		read func(r *Reader) error
	}{
		{`"x"`, func(r *Reader) error { return r.Object(func(string) error { return nil }) }},
		{`{"a":1}`, func(r *Reader) error { return r.Object(func(k string) error { return Unknown(k) }) }},
		{`1e3`, func(r *Reader) error { _, err := r.Int(); return err }},
		{`1.0`, func(r *Reader) error { _, err := r.Int(); return err }},
		{`99999999999999999999`, func(r *Reader) error { _, err := r.Int(); return err }},
		{`-1`, func(r *Reader) error { _, err := r.Uint64(); return err }},
		{`true`, func(r *Reader) error { _, err := r.String(); return err }},
		{`"2026-12-02 17:40"`, func(r *Reader) error { _, err := r.Time(); return err }},
		{`[1,]`, func(r *Reader) error { return r.Array(func() error { _, err := r.Int(); return err }) }},
		{`{"a" 1}`, func(r *Reader) error { return r.Object(func(string) error { _, err := r.Int(); return err }) }},
		{`"x" "y"`, func(r *Reader) error {
			if _, err := r.String(); err != nil {
				return err
			}
			return r.End()
		}},
		{``, func(r *Reader) error { _, err := r.String(); return err }},
	} {
		err := tc.read(NewReader([]byte(tc.doc)))
		require.Error(t, err, tc.doc)
		require.True(t, errors.Is(err, ErrSyntax), "%s: %v", tc.doc, err)
	}
}
