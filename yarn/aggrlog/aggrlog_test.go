package aggrlog

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/yarn/aggrlog/aggrlogtest"
)

// readAll walks a file: container -> log name -> body, in order.
func readAll(t testing.TB, b []byte) (*Reader, []string, map[string]string, error) {
	r, err := NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		return nil, nil, nil, err
	}
	var order []string
	bodies := map[string]string{}
	for {
		c, err := r.Next()
		if err == io.EOF {
			return r, order, bodies, nil
		}
		if err != nil {
			return r, order, bodies, err
		}
		order = append(order, c)
		for {
			lf, err := r.NextFile()
			if err == io.EOF {
				break
			}
			if err != nil {
				return r, order, bodies, err
			}
			body, err := io.ReadAll(lf.Body)
			if err != nil {
				return r, order, bodies, err
			}
			if int64(len(body)) != lf.Length {
				return r, order, bodies, fmt.Errorf("%s/%s: read %d bytes, length says %d", c, lf.Name, len(body), lf.Length)
			}
			bodies[c+"/"+lf.Name] = string(body)
		}
	}
}

func twoContainers() []aggrlogtest.Container {
	big := strings.Repeat("a line of a worker's stdout\n", 500)
	return []aggrlogtest.Container{
		{ID: "container_1700000000000_0001_01_000002", Logs: []aggrlogtest.Log{
			{Name: "stderr", Body: "marker-err-2\n"}, {Name: "stdout", Body: "marker-out-2\n" + big}}},
		{ID: "container_1700000000000_0001_01_000003", Logs: []aggrlogtest.Log{
			{Name: "stderr", Body: ""}, {Name: "stdout", Body: "marker-out-3\n"}, {Name: "syslog", Body: "ünïcödé\n"}}},
	}
}

func TestReader(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    aggrlogtest.File
	}{
		{"none, one block, one chunk", aggrlogtest.File{Codec: CodecNone}},
		{"gz, one block", aggrlogtest.File{Codec: CodecGz}},
		{"none, a block per record, small chunks", aggrlogtest.File{Codec: CodecNone, PerBlock: 1, Chunk: 7}},
		{"gz, two records a block, chunks of 4096", aggrlogtest.File{Codec: CodecGz, PerBlock: 2, Chunk: 4096}},
		{"no reserved keys, no TFile.meta", aggrlogtest.File{Codec: CodecNone, NoReserved: true, NoTFileMeta: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := tc.f
			f.Owner = "alice"
			f.ACLs = [][2]string{{"VIEW_APP", "alice "}, {"MODIFY_APP", "alice bob"}}
			f.Containers = twoContainers()
			r, order, bodies, err := readAll(t, f.Bytes())
			require.NoError(t, err)
			require.Equal(t, []string{f.Containers[0].ID, f.Containers[1].ID}, order)
			for _, c := range f.Containers {
				for _, l := range c.Logs {
					require.Equal(t, l.Body, bodies[c.ID+"/"+l.Name], "%s/%s", c.ID, l.Name)
				}
			}
			require.Len(t, bodies, 5)
			require.Equal(t, f.Codec, r.Codec())
			if f.NoReserved {
				require.Equal(t, "", r.Owner())
				require.Equal(t, 0, r.Version())
				return
			}
			require.Equal(t, "alice", r.Owner())
			require.Equal(t, 1, r.Version())
			require.Equal(t, map[string]string{"VIEW_APP": "alice ", "MODIFY_APP": "alice bob"}, r.ACLs())
		})
	}
}

// A reader that skips bodies, or reads them in part, still lands on the
// next file and container.
func TestReaderSkips(t *testing.T) {
	f := aggrlogtest.File{Codec: CodecGz, Chunk: 100, Owner: "alice", Containers: twoContainers()}
	b := f.Bytes()
	r, err := NewReader(bytes.NewReader(b), int64(len(b)))
	require.NoError(t, err)
	c, err := r.Next()
	require.NoError(t, err)
	require.Equal(t, f.Containers[0].ID, c)
	lf, err := r.NextFile()
	require.NoError(t, err)
	require.Equal(t, "stderr", lf.Name)
	lf, err = r.NextFile() // stderr's body never read
	require.NoError(t, err)
	require.Equal(t, "stdout", lf.Name)
	head := make([]byte, 5)
	_, err = io.ReadFull(lf.Body, head)
	require.NoError(t, err)
	c, err = r.Next() // the rest of stdout left
	require.NoError(t, err)
	require.Equal(t, f.Containers[1].ID, c)
	_, err = r.Next() // the second container's files skipped
	require.ErrorIs(t, err, io.EOF)
}

func TestReaderEmpty(t *testing.T) {
	_, order, _, err := readAll(t, aggrlogtest.File{Codec: CodecNone, NoReserved: true}.Bytes())
	require.NoError(t, err)
	require.Empty(t, order)
}

func TestReaderErrors(t *testing.T) {
	good := aggrlogtest.File{Codec: CodecNone, Owner: "alice", Containers: twoContainers()}.Bytes()
	t.Run("codec named", func(t *testing.T) {
		_, _, _, err := readAll(t, aggrlogtest.File{Codec: "lzo", Containers: twoContainers()}.Bytes())
		require.ErrorIs(t, err, ErrCodec)
		require.Contains(t, err.Error(), `"lzo"`)
	})
	t.Run("no magic (an IFile, or a partial upload)", func(t *testing.T) {
		b := append([]byte(nil), good...)
		b[len(b)-1] ^= 0xff
		_, _, _, err := readAll(t, b)
		require.ErrorIs(t, err, ErrNotTFile)
	})
	t.Run("too short", func(t *testing.T) {
		_, _, _, err := readAll(t, good[:20])
		require.ErrorIs(t, err, ErrNotTFile)
	})
	t.Run("meta index offset outside", func(t *testing.T) {
		b := append([]byte(nil), good...)
		copy(b[int64(len(b))-tailSize:], []byte{0x7f, 0, 0, 0, 0, 0, 0, 0})
		_, _, _, err := readAll(t, b)
		require.ErrorIs(t, err, ErrCorrupt)
	})
	t.Run("cut in the middle", func(t *testing.T) {
		// the first half of the data with a valid tail pointing past it
		f := aggrlogtest.File{Codec: CodecNone, Containers: twoContainers()}
		b := f.Bytes()
		cut := append([]byte(nil), b[:len(b)/2]...)
		cut = append(cut, b[int64(len(b))-tailSize:]...)
		_, _, _, err := readAll(t, cut)
		require.Error(t, err)
	})
}

func TestVLong(t *testing.T) {
	// Vectors from the encoding's description in Hadoop's Utils.writeVLong.
	for _, tc := range []struct {
		n    int64
		want []byte
	}{
		{0, []byte{0}},
		{127, []byte{0x7f}},
		{-32, []byte{0xe0}},
		{-33, []byte{0xcb, 0xdf}},                 // -1-52 = -53
		{128, []byte{0xcc, 0x80}},                 // 0-52 = -52
		{5119, []byte{0xdf, 0xff}},                // 19-52
		{5120, []byte{0xa8, 0x14, 0x00}},          // 0-88 = -88
		{1 << 20, []byte{0x90, 0x10, 0x00, 0x00}}, // 0-112 = -112
		{math.MaxInt32, []byte{0x83, 0x7f, 0xff, 0xff, 0xff}},
		{math.MinInt64, []byte{0x87, 0x80, 0, 0, 0, 0, 0, 0, 0}},
	} {
		var b bytes.Buffer
		aggrlogtest.WriteVLong(&b, tc.n)
		if len(tc.want) > 0 {
			require.Equal(t, tc.want, b.Bytes(), "encode %d", tc.n)
		}
		got, err := readVLong(bytes.NewReader(b.Bytes()))
		require.NoError(t, err)
		require.Equal(t, tc.n, got)
	}
	for _, base := range []int64{1 << 7, 20 << 8, 16 << 16, 8 << 24, 1 << 31, 1 << 39, 1 << 47, 1 << 55} {
		for _, n := range []int64{base - 1, base, base + 1, -base - 1, -base, -base + 1} {
			var b bytes.Buffer
			aggrlogtest.WriteVLong(&b, n)
			got, err := readVLong(bytes.NewReader(b.Bytes()))
			require.NoError(t, err, "%d", n)
			require.Equal(t, n, got, "round trip of %d (% x)", n, b.Bytes())
		}
	}
	_, err := readVLong(bytes.NewReader([]byte{0x80}))
	require.ErrorIs(t, err, ErrCorrupt)
	_, err = readVLong(bytes.NewReader([]byte{0xcb}))
	require.ErrorIs(t, err, io.ErrUnexpectedEOF)
}

func TestModifiedUTF8(t *testing.T) {
	require.Equal(t, "a\x00b", decodeModifiedUTF8([]byte{'a', 0xc0, 0x80, 'b'}))
	require.Equal(t, "é", decodeModifiedUTF8([]byte{0xc3, 0xa9}))
	// U+1F600 as two 3-byte surrogates
	require.Equal(t, "\U0001F600", decodeModifiedUTF8([]byte{0xed, 0xa0, 0xbd, 0xed, 0xb8, 0x80}))
	require.Equal(t, "\uFFFD", decodeModifiedUTF8([]byte{0xff}))
}

// Seeds stay small: the fuzzer minimizes every new input, slowly for big ones.
func FuzzReader(f *testing.F) {
	small := []aggrlogtest.Container{
		{ID: "container_1_0001_01_000002", Logs: []aggrlogtest.Log{{Name: "stdout", Body: "out\n"}, {Name: "stderr", Body: ""}}},
		{ID: "container_1_0001_01_000003", Logs: []aggrlogtest.Log{{Name: "stdout", Body: "more out\n"}}},
	}
	f.Add(aggrlogtest.File{Codec: CodecNone, Owner: "u", ACLs: [][2]string{{"VIEW_APP", "u"}}, Containers: small}.Bytes())
	f.Add(aggrlogtest.File{Codec: CodecGz, Chunk: 3, PerBlock: 1, Owner: "u", Containers: small}.Bytes())
	f.Fuzz(func(t *testing.T, b []byte) {
		// Any error will do; what the fuzzer looks for is a panic or a hang.
		readAll(t, b)
	})
}
