package jsonfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
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

// A member given twice is refused, in objects of a few members and of
// many, and in a string map; the same name in two objects is not.
func TestReaderRefusesMemberGivenTwice(t *testing.T) {
	many := `{"m0":""`
	for i := 1; i < 40; i++ {
		many += fmt.Sprintf(`,"m%d":""`, i)
	}
	for _, doc := range []string{`{"a":"x","a":"y"}`, `{"a":"x","b":"","a":"y"}`, many + `,"m3":""}`, many + `,"m39":""}`} {
		_, err := NewReader([]byte(doc)).StringMap()
		require.ErrorIs(t, err, ErrSyntax, doc)
		require.ErrorContains(t, err, `member "`, doc)
		require.ErrorContains(t, err, `" given twice`, doc)
	}
	m, err := NewReader([]byte(many + `}`)).StringMap()
	require.NoError(t, err)
	require.Len(t, m, 40)
	n := 0
	r := NewReader([]byte(`[{"a":""},{"a":""}]`))
	require.NoError(t, r.Array(func() error { _, err := r.StringMap(); n++; return err }))
	require.Equal(t, 2, n)
}

// walk reads any JSON value with the Reader, recording its tokens as
// tokensOf does encoding/json's.
func walk(r *Reader, out *[]string) error {
	switch c := r.skip(); {
	case c == '{':
		*out = append(*out, "{")
		if err := r.Object(func(key string) error {
			*out = append(*out, "s:"+key)
			return walk(r, out)
		}); err != nil {
			return err
		}
		*out = append(*out, "}")
	case c == '[':
		*out = append(*out, "[")
		if err := r.Array(func() error { return walk(r, out) }); err != nil {
			return err
		}
		*out = append(*out, "]")
	case c == '"':
		s, err := r.String()
		if err != nil {
			return err
		}
		*out = append(*out, "s:"+s)
	case r.literal("null"):
		*out = append(*out, "null")
	case r.literal("true"):
		*out = append(*out, "b:true")
	case r.literal("false"):
		*out = append(*out, "b:false")
	default:
		n, err := r.number()
		if err != nil {
			return err
		}
		*out = append(*out, "n:"+n)
	}
	return nil
}

// tokensOf is encoding/json's reading of doc as one value and nothing
// after it: its tokens, or an error. An object that names a member twice
// is an error too: encoding/json accepts it, the Reader refuses it (see
// Object).
func tokensOf(doc []byte) ([]string, error) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var out []string
	// open: the containers open, innermost last; an object's frame holds
	// its member names so far and whether a name comes next.
	type frame struct {
		names   map[string]bool // nil for an array
		nameNow bool
	}
	var open []*frame
	// valueDone: a value ended; in an object, a name comes next.
	valueDone := func() {
		if len(open) > 0 && open[len(open)-1].names != nil {
			open[len(open)-1].nameNow = true
		}
	}
	for {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		switch v := t.(type) {
		case json.Delim:
			out = append(out, v.String())
			switch v {
			case '{':
				open = append(open, &frame{names: map[string]bool{}, nameNow: true})
			case '[':
				open = append(open, &frame{})
			default:
				open = open[:len(open)-1]
				valueDone()
			}
		case string:
			out = append(out, "s:"+v)
			if f := len(open) - 1; f >= 0 && open[f].nameNow {
				if open[f].names[v] {
					return nil, fmt.Errorf("member %q given twice", v)
				}
				open[f].names[v] = true
				open[f].nameNow = false
			} else {
				valueDone()
			}
		case json.Number:
			out = append(out, "n:"+string(v))
			valueDone()
		case bool:
			out = append(out, "b:"+strconv.FormatBool(v))
			valueDone()
		case nil:
			out = append(out, "null")
			valueDone()
		}
		if len(open) == 0 {
			if _, err := dec.Token(); err != io.EOF {
				return nil, errors.New("data after the value")
			}
			return out, nil
		}
	}
}

// FuzzReaderAsEncodingJSON: the Reader accepts exactly the documents
// encoding/json's tokenizer accepts (one value), with the same tokens:
// strings unescaped alike (surrogate pairs, a lone surrogate and invalid
// UTF-8 as U+FFFD), numbers as written.
func FuzzReaderAsEncodingJSON(f *testing.F) {
	for _, s := range []string{`{"a":[1,-2.5e+3,0,"x\u00e9\ud83d\ude00\ud800\u0041"],"b":{},"c":null,"d":true,"e":false}`,
		`[]`, `{}`, ` "s" `, `01`, `-`, `1.`, `1e`, `.5`, "\"\x01\"", "\"a\tb\"", "\"\xff\xfe\"", `"\/\b\f\n\r\t\"\\"`, `"\u12"`, `"\uZZZZ"`,
		`[1,]`, `{"a" 1}`, `{"a":1,}`, `{,}`, `[,1]`, `nul`, `truex`, `"a" "b"`, `{"a":1}}`, "\ufeff{}", `"\ud83d\u0041"`, `1 `, ``, ` `,
		`{"k":"v","k":"w"}`, `{"a":{"k":1},"k":{"k":2}}`, `[{"k":1},{"k":1}]`, `{"a":{"b":[1,{"b":2}],"b":3}}`, `{"a":{"b":1,"b":2}}`,
		`{"1":0,"2":0,"3":0,"4":0,"5":0,"6":0,"7":0,"8":0,"9":0,"10":0,"11":0,"12":0,"13":0,"14":0,"2":0}`, `[[[[]]]]`, `-0`, `-01`, `1E-0`, `"` + "\x7f" + `"`, `[1 2]`, `{"a":}`, `{"a"}`, `["a":1]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		if len(doc) > 4096 {
			return // encoding/json's nesting limit (10000) is out of reach
		}
		want, werr := tokensOf(doc)
		r := NewReader(doc)
		var got []string
		err := walk(r, &got)
		if err == nil {
			err = r.End()
		}
		if (err == nil) != (werr == nil) {
			t.Fatalf("%q: Reader err %v, encoding/json err %v", doc, err, werr)
		}
		if err != nil {
			require.ErrorIs(t, err, ErrSyntax)
			return
		}
		require.Equal(t, want, got, "%q", doc)
	})
}
