package coordinator

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/internal/valenc"
)

// A batch run is the consecutive batches one commit appended to one
// partition: they live in the same object and their offsets follow each
// other. A run is one key of the batch family, keyed by the last offset of
// its last batch, so the run holding offset o is still the first key >=
// (topic, partition, o). Its value starts with format byte 2 (valueRun):
//
//	field           encoding   meaning
//	--------------  ---------  ------------------------------------------------
//	format          byte       2
//	flags           byte       1: LogAppendTime (every batch of the run)
//	object          uvarint    object number of every batch
//	n               uvarint    batch count, >= 1
//	base offset     uvarint    base offset of the first batch
//	max timestamp   varint     the partition's partState.maxTimestamp,
//	ts offset       varint       maxTimestampOffset and maxTimestampLast
//	ts last         varint       once the run was appended
//	n × batch:
//	  byte offset   varint     minus the end of the previous batch (0 first)
//	  byte length   uvarint
//	  offset delta  uvarint    last offset - base offset
//	  max timestamp varint     minus the previous batch's (0 first)
//	m               uvarint    producer states the run changed
//	m × producer:
//	  producer id   uvarint
//	  state         (fields)   the producer value's fields, no format byte:
//	                           its state on this partition after the run
//
// A batch's base offset is the previous batch's last offset + 1; the last
// batch's last offset must equal the key's. See checkpoint.go for how the
// runs after a partition's record rebuild its state at Open.

const valueRun = valenc.Version2

const batchFlagLogAppendTime byte = 1

// runHeader is a run's fields other than its batches and producers.
type runHeader struct {
	object        uint64
	logAppendTime bool
	// maxTimestamp, maxTimestampOffset and maxTimestampLast are the
	// partition's partState fields of the same names once the run was
	// appended.
	maxTimestamp       int64
	maxTimestampOffset int64
	maxTimestampLast   int64
}

// appendBatchRun appends the header and batches of a run value; the
// producer section must follow (appendRunProducerCount and
// appendRunProducer). batches must be consecutive (each BaseOffset the
// previous LastOffset + 1) and non-empty. Only the coordinates are
// encoded: ObjectKey, ObjectSize and LogAppendTime come from h.
func appendBatchRun(b []byte, h *runHeader, batches []coordapi.BatchCoord) []byte {
	b = append(b, valueRun)
	var flags byte
	if h.logAppendTime {
		flags |= batchFlagLogAppendTime
	}
	b = append(b, flags)
	b = binary.AppendUvarint(b, h.object)
	b = binary.AppendUvarint(b, uint64(len(batches)))
	b = binary.AppendUvarint(b, uint64(batches[0].BaseOffset))
	b = binary.AppendVarint(b, h.maxTimestamp)
	b = binary.AppendVarint(b, h.maxTimestampOffset)
	b = binary.AppendVarint(b, h.maxTimestampLast)
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

// appendRunProducerCount starts a run's producer section of m states.
func appendRunProducerCount(b []byte, m int) []byte { return binary.AppendUvarint(b, uint64(m)) }

// appendRunProducer appends one producer state of a run's producer section.
func appendRunProducer(b []byte, producerID int64, st *producerState) []byte {
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
func decodeRunHeader(v []byte) (d *decoder, h runHeader, n int, base int64, err error) {
	d = valenc.NewVersion("batch run", valueRun, v)
	flags := d.Byte()
	h.logAppendTime = flags&batchFlagLogAppendTime != 0
	h.object = d.Uvarint()
	un := d.Uvarint()
	ubase := d.Uvarint()
	h.maxTimestamp = d.Varint()
	h.maxTimestampOffset = d.Varint()
	h.maxTimestampLast = d.Varint()
	if err := d.Err(); err != nil {
		return d, h, 0, 0, fmt.Errorf("decode batch run value: %w", err)
	}
	switch {
	case flags&^batchFlagLogAppendTime != 0:
		return d, h, 0, 0, fmt.Errorf("decode batch run value: unknown flags %#x", flags)
	case un == 0 || un > uint64(d.Len()/minRunBatchLen):
		return d, h, 0, 0, fmt.Errorf("decode batch run value: %d batches in %d bytes", un, d.Len())
	case ubase > math.MaxInt64:
		return d, h, 0, 0, fmt.Errorf("decode batch run value: base offset %d", ubase)
	}
	return d, h, int(un), int64(ubase), nil
}

// A segment row is the other value of the batch family: one segment
// object (tiered/doc.go) that consolidation wrote from the partition's
// runs, keyed like a run by its last offset, so that the row holding
// offset o is still the first key >= (topic, partition, o) whichever tier
// it is in. Its value starts with format byte 3 (valueSegment):
//
//	field           encoding   meaning
//	--------------  ---------  ------------------------------------------------
//	format          byte       3
//	flags           byte       1: LogAppendTime (its batches carry the time)
//	object          uvarint    object number of the segment object
//	base offset     uvarint    the first batch's base offset
//	batches         uvarint    batch count, >= 1
//	data length     uvarint    the segment's data part: its batches' bytes
//	max timestamp   varint     the largest batch max timestamp (-1: none)
//	ts offset       varint     what ListOffsets(TimestampMax) answers for it,
//	ts last           and the last offset of the batch holding it (as
//	                           partState.noteBatch keeps them)
//
// A segment row carries no producer states: consolidation writes the
// partition's checkpoint in the same batch, so no replay reaches it.
const valueSegment = valenc.Version3

// segmentRow is a segment row's fields.
type segmentRow struct {
	object        uint64
	logAppendTime bool
	base          int64
	batches       int64
	dataLength    int64
	maxTimestamp  int64
	tsOffset      int64
	tsLast        int64
}

// maxSegmentData bounds a segment's data length: a BatchCoord's length is
// an int32, and segment.bytes is an int config.
const maxSegmentData = math.MaxInt32

func appendSegmentRow(b []byte, s *segmentRow) []byte {
	b = append(b, valueSegment)
	var flags byte
	if s.logAppendTime {
		flags |= batchFlagLogAppendTime
	}
	b = append(b, flags)
	b = binary.AppendUvarint(b, s.object)
	b = binary.AppendUvarint(b, uint64(s.base))
	b = binary.AppendUvarint(b, uint64(s.batches))
	b = binary.AppendUvarint(b, uint64(s.dataLength))
	b = binary.AppendVarint(b, s.maxTimestamp)
	b = binary.AppendVarint(b, s.tsOffset)
	b = binary.AppendVarint(b, s.tsLast)
	return b
}

// decodeSegmentRow decodes the value of the segment row whose key holds
// last.
func decodeSegmentRow(last int64, v []byte) (segmentRow, error) {
	d := valenc.NewVersion("segment row", valueSegment, v)
	flags := d.Byte()
	s := segmentRow{logAppendTime: flags&batchFlagLogAppendTime != 0, object: d.Uvarint()}
	base, n, length := d.Uvarint(), d.Uvarint(), d.Uvarint()
	s.maxTimestamp, s.tsOffset, s.tsLast = d.Varint(), d.Varint(), d.Varint()
	if err := d.Done("segment row"); err != nil {
		return s, err
	}
	switch {
	case flags&^batchFlagLogAppendTime != 0:
		return s, fmt.Errorf("decode segment row: unknown flags %#x", flags)
	case base > uint64(last) || last < 0:
		return s, fmt.Errorf("decode segment row: base offset %d above last offset %d", base, last)
	case n == 0 || n > uint64(last)-base+1:
		return s, fmt.Errorf("decode segment row: %d batches over offsets %d-%d", n, base, last)
	case length == 0 || length > maxSegmentData:
		return s, fmt.Errorf("decode segment row: data length %d", length)
	}
	s.base, s.batches, s.dataLength = int64(base), int64(n), int64(length)
	return s, nil
}

// coord returns the segment as FindBatches answers it (ObjectKey and
// ObjectSize left empty).
func (s *segmentRow) coord(last int64) coordapi.BatchCoord {
	return coordapi.BatchCoord{
		ByteLength: int32(s.dataLength), BaseOffset: s.base, LastOffset: last,
		MaxTimestamp: s.maxTimestamp, LogAppendTime: s.logAppendTime, Segment: true,
	}
}

// isSegmentRow reports whether a batch family value is a segment row.
func isSegmentRow(v []byte) bool { return len(v) > 0 && v[0] == valueSegment }

// runReader decodes a row's batches one at a time, so that a reader
// wanting a few batches of a long run decodes no more than it needs. A
// segment row reads as one coordinate with Segment set (seg is then its
// row).
type runReader struct {
	d      *decoder
	h      runHeader
	n, i   int
	last   int64 // from the key
	base   int64 // of the next batch
	end, t int64 // the previous batch's end and max timestamp
	seg    *segmentRow
}

// newRunReader starts decoding the value of the row whose key holds last.
func newRunReader(last int64, v []byte) (runReader, error) {
	if isSegmentRow(v) {
		s, err := decodeSegmentRow(last, v)
		return runReader{h: runHeader{object: s.object, logAppendTime: s.logAppendTime}, n: 1, last: last, seg: &s}, err
	}
	d, h, n, base, err := decodeRunHeader(v)
	return runReader{d: d, h: h, n: n, last: last, base: base}, err
}

// next returns the next batch (with LogAppendTime set; ObjectKey and
// ObjectSize are left empty); ok is false after the last one.
func (r *runReader) next() (bc coordapi.BatchCoord, ok bool, err error) {
	if r.i == r.n {
		return bc, false, nil
	}
	if r.seg != nil {
		r.i++
		return r.seg.coord(r.last), true, nil
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
		MaxTimestamp: r.t, LogAppendTime: r.h.logAppendTime,
	}
	r.end, r.base = off+int64(length), bl+1
	if r.i++; r.i == r.n && bl != r.last {
		return bc, false, fmt.Errorf("decode batch run value: batches end at %d, key says %d", bl, r.last)
	}
	return bc, true, nil
}

// scanRows calls fn for every batch of the rows keyed in [lower, upper),
// in offset order, with the object its row names (a segment row: one
// coordinate with Segment set). fn returning errStopScan ends the scan
// without error; k and v are only valid during the call.
func (c *Coordinator) scanRows(lower, upper []byte, fn func(k, v []byte, object uint64, bc coordapi.BatchCoord) error) error {
	err := c.scanRange(lower, upper, func(k, v []byte) error {
		last, err := decodeBatchKey(k)
		if err != nil {
			return err
		}
		r, err := newRunReader(last, v)
		for err == nil {
			var (
				bc coordapi.BatchCoord
				ok bool
			)
			if bc, ok, err = r.next(); !ok || err != nil {
				break
			}
			err = fn(k, v, r.h.object, bc)
		}
		return err
	})
	if errors.Is(err, errStopScan) {
		return nil
	}
	return err
}

// producers returns the undecoded producer section (see
// decodeRunProducers); every batch must have been read. A segment row has
// none (nil).
func (r *runReader) producers() []byte {
	if r.seg != nil {
		return nil
	}
	return r.d.Bytes(uint64(r.d.Len()))
}

// decodeBatchRun decodes the value of the run whose key holds last,
// appending its batches to dst (with LogAppendTime set; ObjectKey and
// ObjectSize are left empty). producers is the undecoded producer section
// (see decodeRunProducers).
func decodeBatchRun(last int64, v []byte, dst []coordapi.BatchCoord) (h runHeader, batches []coordapi.BatchCoord, producers []byte, err error) {
	r, err := newRunReader(last, v)
	if err != nil {
		return r.h, dst, nil, err
	}
	for {
		bc, ok, err := r.next()
		if err != nil {
			return r.h, dst, nil, err
		}
		if !ok {
			return r.h, dst, r.producers(), nil
		}
		dst = append(dst, bc)
	}
}

// decodeRunProducers calls fn for each producer state of a run's producer
// section, in order.
func decodeRunProducers(section []byte, fn func(producerID int64, st producerState)) error {
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
