package record

import "encoding/binary"

// Kafka's varints are zig-zag encoded LEB128: at most 5 bytes for an int32 (varint),
// 10 for an int64 (varlong).

// reader is a cursor over record bytes. The first failure sticks: later reads return
// zero values, and bad is checked once at the end of a record.
type reader struct {
	b   []byte
	off int
	bad bool
}

// uvarintSlow reads a varint of at most maxBytes bytes.
func (r *reader) uvarintSlow(maxBytes int) uint64 {
	v, n := binary.Uvarint(r.b[r.off:])
	if n <= 0 || n > maxBytes {
		r.bad = true
		r.off = len(r.b)
		return 0
	}
	r.off += n
	return v
}

// varint reads a zig-zag int32. The one-byte case is inlined.
func (r *reader) varint() int32 {
	if i := r.off; i < len(r.b) {
		if c := r.b[i]; c < 0x80 {
			r.off = i + 1
			return int32(c>>1) ^ -int32(c&1)
		}
	}
	return r.varintSlow()
}

// varintSlow reads a varint of more than one byte; two bytes, the length of most
// values and records (64 bytes to 8 KiB), without a loop.
func (r *reader) varintSlow() int32 {
	if i := r.off; i+1 < len(r.b) && r.b[i] >= 0x80 && r.b[i+1] < 0x80 {
		r.off = i + 2
		x := uint32(r.b[i]&0x7f) | uint32(r.b[i+1])<<7
		return int32(x>>1) ^ -int32(x&1)
	}
	u := r.uvarintSlow(5)
	if u > 0xffffffff {
		r.bad = true
		r.off = len(r.b)
		return 0
	}
	x := uint32(u)
	return int32(x>>1) ^ -int32(x&1)
}

// varlong reads a zig-zag int64.
func (r *reader) varlong() int64 {
	if i := r.off; i < len(r.b) {
		if c := r.b[i]; c < 0x80 {
			r.off = i + 1
			return int64(c>>1) ^ -int64(c&1)
		}
	}
	u := r.uvarintSlow(binary.MaxVarintLen64)
	return int64(u>>1) ^ -int64(u&1)
}

func (r *reader) int8() int8 {
	if r.off >= len(r.b) {
		r.bad = true
		return 0
	}
	v := int8(r.b[r.off])
	r.off++
	return v
}

// bytes reads a varint length and that many bytes; -1 means null (nil). The result's
// capacity ends with it, so appending to it cannot overwrite what follows.
func (r *reader) bytes() []byte {
	n := r.varint()
	switch {
	case n == -1:
		return nil
	case n < 0 || int(n) > len(r.b)-r.off:
		r.bad = true
		r.off = len(r.b)
		return nil
	}
	end := r.off + int(n)
	v := r.b[r.off:end:end]
	r.off = end
	return v
}

func appendUvarint(dst []byte, v uint64) []byte { return binary.AppendUvarint(dst, v) }

func appendVarint(dst []byte, v int32) []byte {
	return appendUvarint(dst, uint64(uint32(v<<1)^uint32(v>>31)))
}

func appendVarlong(dst []byte, v int64) []byte {
	return appendUvarint(dst, uint64(v<<1)^uint64(v>>63))
}

// appendVarbytes appends a varint length and b, with -1 for nil.
func appendVarbytes(dst, b []byte) []byte {
	if b == nil {
		return appendVarint(dst, -1)
	}
	return append(appendVarint(dst, int32(len(b))), b...)
}
