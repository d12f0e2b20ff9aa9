package rpc

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/floe-io/floe/coordapi"
)

// errMalformed marks a message that does not decode.
var errMalformed = errors.New("rpc: malformed message")

// encoder appends the format's primitives to b.
type encoder struct {
	b []byte
	// settled, set by a handler, says its reply depends only on what the
	// coordinator's log has: ServerOptions.SettledGate is asked before it
	// instead of Gate.
	settled bool
}

func (e *encoder) byte(v byte) { e.b = append(e.b, v) }

func (e *encoder) bool(v bool) {
	if v {
		e.b = append(e.b, 1)
	} else {
		e.b = append(e.b, 0)
	}
}

func (e *encoder) uvarint(v uint64) { e.b = binary.AppendUvarint(e.b, v) }

// varint writes a zigzag varint; every signed number (int16, int32,
// int64) uses it.
func (e *encoder) varint(v int64) { e.b = binary.AppendVarint(e.b, v) }

func (e *encoder) str(s string) {
	e.uvarint(uint64(len(s)))
	e.b = append(e.b, s...)
}

func (e *encoder) bytes(p []byte) {
	e.uvarint(uint64(len(p)))
	e.b = append(e.b, p...)
}

// optStr writes a presence byte, then the string when present.
func (e *encoder) optStr(s *string) {
	e.bool(s != nil)
	if s != nil {
		e.str(*s)
	}
}

func (e *encoder) id(id coordapi.TopicID) { e.b = append(e.b, id[:]...) }

// strMap writes a map sorted by key, so that equal maps encode equally.
func (e *encoder) strMap(m map[string]string) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	e.uvarint(uint64(len(keys)))
	for _, k := range keys {
		e.str(k)
		e.str(m[k])
	}
}

// decoder reads the format's primitives from b, from off on. The first
// failure sticks: later reads return zero values and err keeps the first
// error, so that decoding functions check it once at the end. (An offset
// rather than reslicing b keeps pointer writes, and their GC write
// barriers, out of the decoding loop.)
type decoder struct {
	b   []byte
	off int
	err error
}

// left returns the number of bytes not yet read.
func (d *decoder) left() int { return len(d.b) - d.off }

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: %s", errMalformed, fmt.Sprintf(format, args...))
	}
	d.off = len(d.b)
}

func (d *decoder) byte() byte {
	if d.off >= len(d.b) {
		d.fail("truncated")
		return 0
	}
	v := d.b[d.off]
	d.off++
	return v
}

func (d *decoder) bool() bool {
	switch v := d.byte(); v {
	case 0:
		return false
	case 1:
		return true
	default:
		d.fail("bool byte %d", v)
		return false
	}
}

func (d *decoder) uvarint() uint64 {
	// The one-byte case inline: most counts, lengths and indexes.
	if d.off < len(d.b) && d.b[d.off] < 0x80 {
		v := d.b[d.off]
		d.off++
		return uint64(v)
	}
	v, n := binary.Uvarint(d.b[d.off:])
	if n <= 0 {
		d.fail("bad uvarint")
		return 0
	}
	d.off += n
	return v
}

func (d *decoder) varint() int64 {
	ux := d.uvarint()
	x := int64(ux >> 1)
	if ux&1 != 0 {
		x = ^x
	}
	return x
}

func (d *decoder) int32() int32 {
	v := d.varint()
	if v < math.MinInt32 || v > math.MaxInt32 {
		d.fail("int32 out of range: %d", v)
		return 0
	}
	return int32(v)
}

func (d *decoder) int16() int16 {
	v := d.varint()
	if v < math.MinInt16 || v > math.MaxInt16 {
		d.fail("int16 out of range: %d", v)
		return 0
	}
	return int16(v)
}

// length reads a uvarint length that must fit in what is left.
func (d *decoder) length() int {
	n := d.uvarint()
	if n > uint64(d.left()) {
		d.fail("length %d exceeds the %d bytes left", n, d.left())
		return 0
	}
	return int(n)
}

// count reads an element count; each element takes at least minSize bytes,
// so that a forged count cannot make the reader allocate more than the
// message could hold.
func (d *decoder) count(minSize int) int {
	n := d.uvarint()
	if n > uint64(d.left()/minSize) {
		d.fail("count %d exceeds what %d bytes can hold", n, d.left())
		return 0
	}
	return int(n)
}

func (d *decoder) str() string {
	n := d.length()
	s := string(d.b[d.off : d.off+n])
	d.off += n
	return s
}

// bytes returns a slice of the message (not a copy).
func (d *decoder) bytes() []byte {
	n := d.length()
	p := d.b[d.off : d.off+n : d.off+n]
	d.off += n
	return p
}

func (d *decoder) optStr() *string {
	if !d.bool() {
		return nil
	}
	s := d.str()
	return &s
}

func (d *decoder) id() coordapi.TopicID {
	var id coordapi.TopicID
	if d.left() < len(id) {
		d.fail("truncated topic id")
		return id
	}
	copy(id[:], d.b[d.off:])
	d.off += len(id)
	return id
}

// strMap reads a map; an empty one decodes as nil.
func (d *decoder) strMap() map[string]string {
	n := d.count(2)
	if n == 0 {
		return nil
	}
	m := make(map[string]string, n)
	for range n {
		k := d.str()
		m[k] = d.str()
	}
	return m
}
