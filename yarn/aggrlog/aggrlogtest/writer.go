// Package aggrlogtest writes aggregated log files (TFile) for tests: an
// encoder written from the format as drawn in package aggrlog (not from its
// reader), so the reader is tested against an independent encoder.
package aggrlogtest

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"sort"
	"strconv"
)

// magic opens and closes every BCFile.
var magic = [16]byte{0xd1, 0x11, 0xd3, 0x68, 0x91, 0xb5, 0xd7, 0xb6, 0x39, 0xdf, 0x41, 0x40, 0x92, 0xba, 0xe1, 0x50}

// Codec names.
const (
	CodecNone = "none"
	CodecGz   = "gz"
)

type region struct{ offset, compressed, raw int64 }

type metaEntry struct {
	codec string
	region
}

// Log is one log file of a container.
type Log struct {
	Name string
	Body string
}

// Container is one container's record.
type Container struct {
	ID   string
	Logs []Log
}

// File describes an aggregated log file to write.
type File struct {
	Codec       string // "none" or "gz"; anything else is named so, blocks left uncompressed
	Chunk       int    // value chunk size (0: one chunk per value)
	PerBlock    int    // records per data block (0: all in one)
	Owner       string
	ACLs        [][2]string
	Containers  []Container
	NoReserved  bool // leave out VERSION, owner and ACLs
	NoTFileMeta bool
}

// WriteVLong encodes n as TFile's Utils.writeVLong does (see readVLong).
func WriteVLong(w *bytes.Buffer, n int64) {
	switch {
	case n >= -32 && n < 128:
		w.WriteByte(byte(int8(n)))
	case n >= -20<<8 && n < 20<<8:
		w.WriteByte(byte(int8(n>>8) - 52))
		w.WriteByte(byte(n))
	case n >= -16<<16 && n < 16<<16:
		w.WriteByte(byte(int8(n>>16) - 88))
		w.WriteByte(byte(n >> 8))
		w.WriteByte(byte(n))
	case n >= -8<<24 && n < 8<<24:
		w.WriteByte(byte(int8(n>>24) - 112))
		w.WriteByte(byte(n >> 16))
		w.WriteByte(byte(n >> 8))
		w.WriteByte(byte(n))
	default:
		size := 4
		for size < 8 {
			lim := int64(1) << (8*size - 1)
			if n >= -lim && n < lim {
				break
			}
			size++
		}
		w.WriteByte(byte(int8(size - 129)))
		for i := size - 1; i >= 0; i-- {
			w.WriteByte(byte(n >> (8 * i)))
		}
	}
}

func writeString(w *bytes.Buffer, s string) {
	WriteVLong(w, int64(len(s)))
	w.WriteString(s)
}

func writeUTF(w *bytes.Buffer, s string) {
	var l [2]byte
	binary.BigEndian.PutUint16(l[:], uint16(len(s)))
	w.Write(l[:])
	w.WriteString(s)
}

func writeRegion(w *bytes.Buffer, r region) {
	WriteVLong(w, r.offset)
	WriteVLong(w, r.compressed)
	WriteVLong(w, r.raw)
}

// record appends one record: key (a writeUTF inside the TFile key) and a
// chunk-encoded value.
func (f File) record(w *bytes.Buffer, key string, value []byte) {
	var k bytes.Buffer
	writeUTF(&k, key)
	WriteVLong(w, int64(k.Len()))
	w.Write(k.Bytes())
	if f.Chunk > 0 {
		for len(value) > f.Chunk {
			WriteVLong(w, -int64(f.Chunk))
			w.Write(value[:f.Chunk])
			value = value[f.Chunk:]
		}
	}
	WriteVLong(w, int64(len(value)))
	w.Write(value)
}

func (f File) compress(raw []byte) []byte {
	if f.Codec != CodecGz {
		return raw
	}
	var b bytes.Buffer
	zw := zlib.NewWriter(&b)
	zw.Write(raw)
	zw.Close()
	return b.Bytes()
}

// Bytes encodes the file.
func (f File) Bytes() []byte {
	type rec struct {
		key   string
		value []byte
	}
	var recs []rec
	if !f.NoReserved {
		var v bytes.Buffer
		binary.Write(&v, binary.BigEndian, int32(1))
		recs = append(recs, rec{"VERSION", v.Bytes()})
		var o bytes.Buffer
		writeUTF(&o, f.Owner)
		recs = append(recs, rec{"APPLICATION_OWNER", o.Bytes()})
		var a bytes.Buffer
		for _, p := range f.ACLs {
			writeUTF(&a, p[0])
			writeUTF(&a, p[1])
		}
		recs = append(recs, rec{"APPLICATION_ACL", a.Bytes()})
	}
	for _, c := range f.Containers {
		var v bytes.Buffer
		for _, l := range c.Logs {
			writeUTF(&v, l.Name)
			writeUTF(&v, strconv.Itoa(len(l.Body)))
			v.WriteString(l.Body)
		}
		recs = append(recs, rec{c.ID, v.Bytes()})
	}
	var out bytes.Buffer
	out.Write(magic[:])
	var blocks []region
	type idxEntry struct {
		lastKey string
		n       int64
	}
	var index []idxEntry
	per := f.PerBlock
	if per <= 0 {
		per = len(recs) + 1
	}
	for i := 0; i < len(recs); i += per {
		var raw bytes.Buffer
		end := min(i+per, len(recs))
		for _, r := range recs[i:end] {
			f.record(&raw, r.key, r.value)
		}
		packed := f.compress(raw.Bytes())
		blocks = append(blocks, region{offset: int64(out.Len()), compressed: int64(len(packed)), raw: int64(raw.Len())})
		out.Write(packed)
		index = append(index, idxEntry{recs[end-1].key, int64(end - i)})
	}
	meta := map[string]metaEntry{}
	addMeta := func(name, codec string, raw []byte) {
		packed := raw
		if codec == CodecGz {
			packed = f.compress(raw)
		}
		meta[name] = metaEntry{codec: codec, region: region{offset: int64(out.Len()), compressed: int64(len(packed)), raw: int64(len(raw))}}
		out.Write(packed)
	}
	metaCodec := f.Codec
	if metaCodec != CodecGz {
		metaCodec = CodecNone
	}
	if !f.NoTFileMeta {
		var m bytes.Buffer
		binary.Write(&m, binary.BigEndian, [2]int16{1, 0})
		WriteVLong(&m, int64(len(recs)))
		writeString(&m, "")
		addMeta("TFile.meta", CodecNone, m.Bytes())
	}
	var ti bytes.Buffer
	if len(recs) == 0 {
		WriteVLong(&ti, 0)
	} else {
		var fk bytes.Buffer
		var k bytes.Buffer
		writeUTF(&k, recs[0].key)
		WriteVLong(&fk, int64(k.Len()))
		fk.Write(k.Bytes())
		WriteVLong(&ti, int64(fk.Len()))
		ti.Write(fk.Bytes())
		for _, e := range index {
			var eb, kb bytes.Buffer
			writeUTF(&kb, e.lastKey)
			WriteVLong(&eb, int64(kb.Len()))
			eb.Write(kb.Bytes())
			WriteVLong(&eb, e.n)
			WriteVLong(&ti, int64(eb.Len()))
			ti.Write(eb.Bytes())
		}
	}
	addMeta("TFile.index", metaCodec, ti.Bytes())
	var di bytes.Buffer
	writeString(&di, f.Codec)
	WriteVLong(&di, int64(len(blocks)))
	for _, b := range blocks {
		writeRegion(&di, b)
	}
	addMeta("BCFile.index", metaCodec, di.Bytes())
	metaOff := int64(out.Len())
	names := make([]string, 0, len(meta))
	for n := range meta {
		names = append(names, n)
	}
	sort.Strings(names)
	WriteVLong(&out, int64(len(names)))
	for _, n := range names {
		writeString(&out, "data:"+n)
		writeString(&out, meta[n].codec)
		writeRegion(&out, meta[n].region)
	}
	binary.Write(&out, binary.BigEndian, metaOff)
	binary.Write(&out, binary.BigEndian, [2]int16{1, 0})
	out.Write(magic[:])
	return out.Bytes()
}
