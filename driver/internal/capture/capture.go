// Package capture holds the bounded writers the drivers hand a child
// process (a discovery script, nvidia-smi, a device plugin) as its stdout
// and stderr: Head keeps the first bytes of what it is given, Tail the
// last, so a child that writes without end costs bounded memory and never
// blocks on a full pipe.
package capture

import "bytes"

// Head keeps the first Max bytes written and drops the rest, remembering
// that it did. Writes never fail. (It has no ReadFrom, unlike an embedded
// bytes.Buffer, so io.Copy cannot bypass the cap.)
type Head struct {
	Max      int
	buf      bytes.Buffer
	overflow bool
}

// Write implements io.Writer.
func (h *Head) Write(p []byte) (int, error) {
	room := h.Max - h.buf.Len()
	if len(p) > room {
		h.overflow = true
		if room > 0 {
			h.buf.Write(p[:room])
		}
		return len(p), nil
	}
	h.buf.Write(p)
	return len(p), nil
}

// Bytes returns what was kept.
func (h *Head) Bytes() []byte { return h.buf.Bytes() }

// Overflow reports whether more than Max bytes were written.
func (h *Head) Overflow() bool { return h.overflow }

// Tail keeps the last Max bytes written. Writes never fail.
type Tail struct {
	Max int
	buf []byte
}

// Write implements io.Writer. The buffer grows to at most twice Max before
// it is cut back, so a long stream of small writes copies little.
func (t *Tail) Write(p []byte) (int, error) {
	t.buf = append(t.buf, p...)
	if len(t.buf) > 2*t.Max {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.Max:]...)
	}
	return len(p), nil
}

// Bytes returns the last Max bytes written (fewer when less was written).
func (t *Tail) Bytes() []byte {
	if len(t.buf) > t.Max {
		return t.buf[len(t.buf)-t.Max:]
	}
	return t.buf
}
