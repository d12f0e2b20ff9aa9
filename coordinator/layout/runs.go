package layout

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/internal/valenc"
)

// ValueRun is the format byte of a batch run (the package doc draws it).
const ValueRun = valenc.Version2

// ValueSegment is the format byte of a segment row.
const ValueSegment = valenc.Version3

// BatchFlagLogAppendTime is the flag of a run or segment row whose batches
// carry the append time (and of a format 1 batch value).
const BatchFlagLogAppendTime byte = 1

// RunHeader is a run's fields other than its batches and producers.
type RunHeader struct {
	Object        uint64
	LogAppendTime bool
	// MaxTimestamp, MaxTimestampOffset and MaxTimestampLast are the
	// partition's max timestamp state (Partition's fields of the same
	// names) once the run was appended.
	MaxTimestamp       int64
	MaxTimestampOffset int64
	MaxTimestampLast   int64
}

// AppendBatchRun appends the header and batches of a run value; the
// producer section must follow (AppendRunProducerCount and
// AppendRunProducer). batches must be consecutive (each BaseOffset the
// previous LastOffset + 1) and non-empty. Only the coordinates are
// encoded: ObjectKey, ObjectSize and LogAppendTime come from h.
func AppendBatchRun(b []byte, h *RunHeader, batches []coordapi.BatchCoord) []byte {
	b = append(b, ValueRun)
	var flags byte
	if h.LogAppendTime {
		flags |= BatchFlagLogAppendTime
	}
	b = append(b, flags)
	b = binary.AppendUvarint(b, h.Object)
	b = binary.AppendUvarint(b, uint64(len(batches)))
	b = binary.AppendUvarint(b, uint64(batches[0].BaseOffset))
	b = binary.AppendVarint(b, h.MaxTimestamp)
	b = binary.AppendVarint(b, h.MaxTimestampOffset)
	b = binary.AppendVarint(b, h.MaxTimestampLast)
	var end, ts int64
	for i := range batches {
		bc := &batches[i]
		b = binary.AppendVarint(b, bc.ByteOffset-end)
		b = binary.AppendUvarint(b, uint64(bc.ByteLength))
		b = binary.AppendUvarint(b, uint64(bc.LastOffset-bc.BaseOffset))
		b = binary.AppendVarint(b, bc.MaxTimestamp-ts)
		end, ts = bc.ByteOffset+int64(bc.ByteLength), bc.MaxTimestamp
	}
	return b
}

// AppendRunProducerCount starts a run's producer section of m states.
func AppendRunProducerCount(b []byte, m int) []byte { return binary.AppendUvarint(b, uint64(m)) }

// AppendRunProducer appends one producer state of a run's producer section.
func AppendRunProducer(b []byte, producerID int64, st *Producer) []byte {
	b = binary.AppendUvarint(b, uint64(producerID))
	return appendProducerFields(b, st)
}

// minRunBatchLen and minRunProducerLen are the fewest bytes one encoded
// batch and one producer state of a run take.
const (
	minRunBatchLen    = 4
	minRunProducerLen = 4
)

// decodeRunHeader decodes a run value's header, leaving d at its first
// batch; n is the batch count and base the first batch's base offset.
func decodeRunHeader(v []byte) (d *valenc.Decoder, h RunHeader, n int, base int64, err error) {
	d = valenc.NewVersion("batch run", ValueRun, v)
	flags := d.Byte()
	h.LogAppendTime = flags&BatchFlagLogAppendTime != 0
	h.Object = d.Uvarint()
	un := d.Uvarint()
	ubase := d.Uvarint()
	h.MaxTimestamp = d.Varint()
	h.MaxTimestampOffset = d.Varint()
	h.MaxTimestampLast = d.Varint()
	if err := d.Err(); err != nil {
		return d, h, 0, 0, fmt.Errorf("decode batch run value: %w", err)
	}
	switch {
	case flags&^BatchFlagLogAppendTime != 0:
		return d, h, 0, 0, fmt.Errorf("decode batch run value: unknown flags %#x", flags)
	case un == 0 || un > uint64(d.Len()/minRunBatchLen):
		return d, h, 0, 0, fmt.Errorf("decode batch run value: %d batches in %d bytes", un, d.Len())
	case ubase > math.MaxInt64:
		return d, h, 0, 0, fmt.Errorf("decode batch run value: base offset %d", ubase)
	}
	return d, h, int(un), int64(ubase), nil
}

// SegmentRow is a segment row's fields: the segment object, whether its
// batches carry the append time, its first base offset, batch count and
// data length, its largest batch max timestamp (-1: none), what
// ListOffsets(TimestampMax) answers for it (TSOffset) and the last offset
// of the batch holding it (TSLast).
type SegmentRow struct {
	Object        uint64
	LogAppendTime bool
	Base          int64
	Batches       int64
	DataLength    int64
	MaxTimestamp  int64
	TSOffset      int64
	TSLast        int64
}

// MaxSegmentData bounds a segment's data length: a BatchCoord's length is
// an int32, and segment.bytes is an int config.
const MaxSegmentData = math.MaxInt32

// AppendSegmentRow appends a segment row's value.
func AppendSegmentRow(b []byte, s *SegmentRow) []byte {
	b = append(b, ValueSegment)
	var flags byte
	if s.LogAppendTime {
		flags |= BatchFlagLogAppendTime
	}
	b = append(b, flags)
	b = binary.AppendUvarint(b, s.Object)
	b = binary.AppendUvarint(b, uint64(s.Base))
	b = binary.AppendUvarint(b, uint64(s.Batches))
	b = binary.AppendUvarint(b, uint64(s.DataLength))
	b = binary.AppendVarint(b, s.MaxTimestamp)
	b = binary.AppendVarint(b, s.TSOffset)
	b = binary.AppendVarint(b, s.TSLast)
	return b
}

// DecodeSegmentRow decodes the value of the segment row whose key holds
// last.
func DecodeSegmentRow(last int64, v []byte) (SegmentRow, error) {
	d := valenc.NewVersion("segment row", ValueSegment, v)
	flags := d.Byte()
	s := SegmentRow{LogAppendTime: flags&BatchFlagLogAppendTime != 0, Object: d.Uvarint()}
	base, n, length := d.Uvarint(), d.Uvarint(), d.Uvarint()
	s.MaxTimestamp, s.TSOffset, s.TSLast = d.Varint(), d.Varint(), d.Varint()
	if err := d.Done("segment row"); err != nil {
		return s, err
	}
	switch {
	case flags&^BatchFlagLogAppendTime != 0:
		return s, fmt.Errorf("decode segment row: unknown flags %#x", flags)
	case base > uint64(last) || last < 0:
		return s, fmt.Errorf("decode segment row: base offset %d above last offset %d", base, last)
	case n == 0 || n > uint64(last)-base+1:
		return s, fmt.Errorf("decode segment row: %d batches over offsets %d-%d", n, base, last)
	case length == 0 || length > MaxSegmentData:
		return s, fmt.Errorf("decode segment row: data length %d", length)
	}
	s.Base, s.Batches, s.DataLength = int64(base), int64(n), int64(length)
	return s, nil
}

// Coord returns the segment as FindBatches answers it (ObjectKey and
// ObjectSize left empty).
func (s *SegmentRow) Coord(last int64) coordapi.BatchCoord {
	return coordapi.BatchCoord{
		ByteLength: int32(s.DataLength), BaseOffset: s.Base, LastOffset: last,
		MaxTimestamp: s.MaxTimestamp, LogAppendTime: s.LogAppendTime, Segment: true,
	}
}

// IsSegmentRow reports whether a batch family value is a segment row.
func IsSegmentRow(v []byte) bool { return len(v) > 0 && v[0] == ValueSegment }

// RunReader decodes a row's batches one at a time, so that a reader
// wanting a few batches of a long run decodes no more than it needs. A
// segment row reads as one coordinate with Segment set.
type RunReader struct {
	d      *valenc.Decoder
	h      RunHeader
	n, i   int
	last   int64 // from the key
	base   int64 // of the next batch
	end, t int64 // the previous batch's end and max timestamp
	seg    *SegmentRow
}

// NewRunReader starts decoding the value of the row whose key holds last.
func NewRunReader(last int64, v []byte) (RunReader, error) {
	if IsSegmentRow(v) {
		s, err := DecodeSegmentRow(last, v)
		return RunReader{h: RunHeader{Object: s.Object, LogAppendTime: s.LogAppendTime}, n: 1, last: last, seg: &s}, err
	}
	d, h, n, base, err := decodeRunHeader(v)
	return RunReader{d: d, h: h, n: n, last: last, base: base}, err
}

// Object is the object number the row's batches are in.
func (r *RunReader) Object() uint64 { return r.h.Object }

// Segment reports whether the row is a segment row.
func (r *RunReader) Segment() bool { return r.seg != nil }

// Next returns the next batch (with LogAppendTime set; ObjectKey and
// ObjectSize are left empty); ok is false after the last one.
func (r *RunReader) Next() (bc coordapi.BatchCoord, ok bool, err error) {
	if r.i == r.n {
		return bc, false, nil
	}
	if r.seg != nil {
		r.i++
		return r.seg.Coord(r.last), true, nil
	}
	d := r.d
	off := r.end + d.Varint()
	length := d.Uvarint()
	delta := d.Uvarint()
	r.t += d.Varint()
	if err := d.Err(); err != nil {
		return bc, false, fmt.Errorf("decode batch run value: %w", err)
	}
	if off < 0 || length == 0 || length > math.MaxInt32 || delta > math.MaxInt32 || r.base > r.last-int64(delta) {
		return bc, false, fmt.Errorf("decode batch run value: bad batch %d (byte offset %d, length %d, last offset delta %d, base %d, run last %d)",
			r.i, off, length, delta, r.base, r.last)
	}
	bl := r.base + int64(delta)
	bc = coordapi.BatchCoord{
		ByteOffset: off, ByteLength: int32(length),
		BaseOffset: r.base, LastOffset: bl,
		MaxTimestamp: r.t, LogAppendTime: r.h.LogAppendTime,
	}
	r.end, r.base = off+int64(length), bl+1
	if r.i++; r.i == r.n && bl != r.last {
		return bc, false, fmt.Errorf("decode batch run value: batches end at %d, key says %d", bl, r.last)
	}
	return bc, true, nil
}

// producers returns the undecoded producer section (see
// DecodeRunProducers); every batch must have been read. A segment row has
// none (nil).
func (r *RunReader) producers() []byte {
	if r.seg != nil {
		return nil
	}
	return r.d.Bytes(uint64(r.d.Len()))
}

// DecodeBatchRun decodes the value of the run whose key holds last,
// appending its batches to dst (with LogAppendTime set; ObjectKey and
// ObjectSize are left empty). producers is the undecoded producer section
// (see DecodeRunProducers).
func DecodeBatchRun(last int64, v []byte, dst []coordapi.BatchCoord) (h RunHeader, batches []coordapi.BatchCoord, producers []byte, err error) {
	r, err := NewRunReader(last, v)
	if err != nil {
		return r.h, dst, nil, err
	}
	for {
		bc, ok, err := r.Next()
		if err != nil {
			return r.h, dst, nil, err
		}
		if !ok {
			return r.h, dst, r.producers(), nil
		}
		dst = append(dst, bc)
	}
}

// DecodeRunProducers calls fn for each producer state of a run's producer
// section, in order.
func DecodeRunProducers(section []byte, fn func(producerID int64, st Producer)) error {
	if section == nil {
		return nil // a segment row
	}
	d := valenc.Fields(section)
	m := d.Uvarint()
	if d.Err() == nil && m > uint64(d.Len()/minRunProducerLen) {
		return fmt.Errorf("decode batch run value: %d producers in %d bytes", m, d.Len())
	}
	for i := uint64(0); i < m && d.Err() == nil; i++ {
		id := d.Uvarint()
		st, err := decodeProducerFields(d)
		if err != nil {
			return fmt.Errorf("batch run producer %d: %w", i, err)
		}
		if id > math.MaxInt64 {
			return fmt.Errorf("decode batch run value: producer id %d", id)
		}
		fn(int64(id), st)
	}
	return d.Done("batch run producers")
}
