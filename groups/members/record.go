package members

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/floe-io/floe/internal/valenc"
)

// AppendOptString appends s as a presence byte (0 for nil) and, when
// present, the string (valenc.AppendString).
func AppendOptString(v []byte, s *string) []byte {
	if s == nil {
		return append(v, 0)
	}
	v = append(v, 1)
	return valenc.AppendString(v, *s)
}

// AppendStrings appends ss as a uvarint count and each string
// (valenc.AppendString), in the order given.
func AppendStrings(v []byte, ss []string) []byte {
	v = binary.AppendUvarint(v, uint64(len(ss)))
	for _, s := range ss {
		v = valenc.AppendString(v, s)
	}
	return v
}

// AppendPartitions appends ps: a uvarint count of topics, then each topic
// in id order (SortedIDs) as its 16-byte id, a uvarint count and its
// partitions as varints, as the list is kept (sorted).
func AppendPartitions(v []byte, ps Partitions) []byte {
	ids := ps.SortedIDs()
	v = binary.AppendUvarint(v, uint64(len(ids)))
	for _, id := range ids {
		v = append(v, id[:]...)
		v = binary.AppendUvarint(v, uint64(len(ps[id])))
		for _, p := range ps[id] {
			v = binary.AppendVarint(v, int64(p))
		}
	}
	return v
}

// Decoder reads a member record: the fields this package writes, and
// through the embedded valenc.Decoder the caller's own. A member record
// is read from disk, so a corrupt one must fail rather than panic or
// allocate without bound: every count is checked against the bytes left
// (each element takes at least one byte), and the first corruption found
// is kept for Done.
type Decoder struct {
	*valenc.Decoder
	what string
	bad  error
}

// NewDecoder starts decoding record b of kind what ("consumer member",
// "share member"), checking that its format byte is version: the caller
// owns the record's version, this package only its fields' layout.
func NewDecoder(what string, version byte, b []byte) *Decoder {
	return &Decoder{Decoder: valenc.NewVersion(what, version, b), what: what}
}

// Corrupt records err as the record's corruption (a field the caller found
// invalid), unless one was found before.
func (d *Decoder) Corrupt(err error) {
	if d.bad == nil {
		d.bad = err
	}
}

// Count reads a uvarint count of elements; a count larger than the bytes
// left is a corruption, and reads as 0.
func (d *Decoder) Count() uint64 {
	n := d.Uvarint()
	if d.Err() == nil && d.bad == nil && n > uint64(d.Len()) {
		d.bad = fmt.Errorf("count %d with %d bytes left", n, d.Len())
	}
	if d.bad != nil {
		return 0
	}
	return n
}

// OptString reads a string written by AppendOptString; a presence byte
// other than 0 or 1 is a corruption.
func (d *Decoder) OptString() *string {
	switch d.Byte() {
	case 0:
		return nil
	case 1:
		s := d.String()
		return &s
	default:
		if d.bad == nil && d.Err() == nil {
			d.bad = fmt.Errorf("bad presence byte")
		}
		return nil
	}
}

// Strings reads strings written by AppendStrings; none reads as nil.
func (d *Decoder) Strings() []string {
	var ss []string
	for n, i := d.Count(), uint64(0); i < n && d.Err() == nil; i++ {
		ss = append(ss, d.String())
	}
	return ss
}

// TopicID reads a 16-byte topic id.
func (d *Decoder) TopicID() TopicID {
	var id TopicID
	copy(id[:], d.Bytes(uint64(len(id))))
	return id
}

// Partitions reads partitions written by AppendPartitions. Each list comes
// back sorted and free of duplicates, whatever the bytes say, so that a
// record decoded is a valid set.
func (d *Decoder) Partitions() Partitions {
	ps := Partitions{}
	n := d.Count()
	for i := uint64(0); i < n && d.Err() == nil; i++ {
		id := d.TopicID()
		np := d.Count()
		l := make([]int32, 0, np)
		for j := uint64(0); j < np && d.Err() == nil; j++ {
			l = append(l, int32(d.Varint()))
		}
		l = append(l, ps[id]...)
		slices.Sort(l)
		ps[id] = slices.Compact(l)
	}
	return ps
}

// Done reports the record's corruption, else the embedded decoder's first
// error or trailing bytes, as "decode <what> value: ...".
func (d *Decoder) Done() error {
	if d.bad != nil {
		return fmt.Errorf("decode %s value: %w", d.what, d.bad)
	}
	return d.Decoder.Done(d.what)
}
