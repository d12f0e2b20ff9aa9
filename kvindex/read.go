package kvindex

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sort"

	"github.com/floe-io/floe/record"
)

// outcome is what a read found at an offset.
type outcome int8

const (
	found     outcome = iota // the record carries the key and a value
	tombstone                // the record carries the key and a null value
	stale                    // no record at the offset, or one with another key
)

// errStop ends record iteration once the wanted offset is reached.
var errStop = errors.New("kvindex: stop")

// holds checks that the batch with header h based at ref.BaseOffset holds offset; an
// error means the Service handed over the wrong bytes or corrupt ones.
func holds(h *record.Header, ref *BatchRef, offset int64) (delta int32, err error) {
	d, err := offsetDelta(ref.BaseOffset, h.LastOffsetDelta, offset)
	return int32(d), err
}

// offsetDelta is offset's delta in the batch based at base whose last delta is
// lastDelta, or an error when the batch does not hold it.
func offsetDelta(base int64, lastDelta int32, offset int64) (int64, error) {
	d := offset - base
	if d < 0 || d > int64(lastDelta) {
		return 0, fmt.Errorf("batch %d..%d does not hold offset %d", base, base+int64(lastDelta), offset)
	}
	return d, nil
}

// batchTimestamp returns the timestamp every record of the batch has, when it has one:
// its log append time, from the coordinates or from a patched header.
func batchTimestamp(h *record.Header, ref *BatchRef) (int64, bool) {
	switch {
	case ref.LogAppendTime > 0:
		return ref.LogAppendTime, true
	case h.LogAppendTime():
		return h.MaxTimestamp, true
	}
	return 0, false
}

// readRecord finds the record at offset in data, the whole batch ref locates, and
// checks that it carries key. On found it returns the record's value and timestamp in
// milliseconds. The value aliases data for uncompressed batches and is a copy otherwise
// (the decompressed records go back to a pool). Records are decoded only up to the
// wanted one. An error means data is not a batch that holds offset.
func readRecord(data []byte, ref *BatchRef, offset int64, key []byte) (value []byte, ts int64, out outcome, err error) {
	h, err := record.ParseHeader(data)
	if err != nil {
		return nil, 0, stale, fmt.Errorf("batch at %d: %w", ref.BaseOffset, err)
	}
	want, err := holds(&h, ref, offset)
	if err != nil {
		return nil, 0, stale, err
	}
	if h.Control() { // transaction markers: never a user's record
		return nil, 0, stale, nil
	}
	if size := h.Size(); size < len(data) {
		data = data[:size]
	}
	compressed := h.Codec() != record.CodecNone
	out = stale
	visit := func(r *record.Record) error {
		if r.OffsetDelta < want {
			return nil
		}
		if r.OffsetDelta == want && r.Key != nil && bytes.Equal(r.Key, key) {
			switch {
			case r.Value == nil:
				out = tombstone
			case compressed:
				value = bytes.Clone(r.Value)
				out = found
			default:
				value = r.Value
				out = found
			}
			ts = h.BaseTimestamp + r.TimestampDelta
		}
		return errStop
	}
	if h.NumRecords == h.LastOffsetDelta+1 {
		// No gaps (every batch as producers send it): record i has delta
		// i, so seek to it instead of decoding the ones before.
		err = record.RecordAt(data, want, visit)
	} else {
		// A compacted batch with gaps: scan.
		err = record.Records(data, visit)
	}
	if err != nil && err != errStop {
		return nil, 0, stale, fmt.Errorf("batch at %d: %w", ref.BaseOffset, err)
	}
	if t, ok := batchTimestamp(&h, ref); ok {
		ts = t
	}
	return value, ts, out, nil
}

// decodedBatch is a batch decoded once for every lookup of its records (the batch
// cache holds them). A compressed batch has each record's key and value copied into
// one buffer, with their positions; an uncompressed one (raw) only where each record
// starts in the stored bytes, which lookups then read one record of. It is never
// modified once built, so lookups share it without a lock.
type decodedBatch struct {
	ref       BatchRef
	lastDelta int32
	control   bool
	dense     bool // record i has offset delta i: no gaps
	raw       bool // uncompressed: starts (and deltas) are set, not recs and data
	baseTS    int64
	fixedTS   int64 // every record's timestamp, when hasFixed
	hasFixed  bool

	recs []recPos
	data []byte // keys and values, back to back

	// Of a raw batch: record i spans bytes [starts[i], starts[i+1]) of the stored
	// batch, and has offset delta deltas[i] (i when dense: deltas is nil).
	starts []int32
	deltas []int32
}

// recPos is one record of a compressed decodedBatch: its key at data[off:off+keyLen],
// then its value (lengths -1 for null).
type recPos struct {
	tsDelta        int64
	off            int32
	keyLen, valLen int32
	delta          int32
}

// Fixed costs of a decodedBatch beyond its buffers, for the cache's accounting.
const (
	decodedOverhead = 256
	recPosSize      = 24
)

// size is the memory d holds, as the batch cache counts it.
func (d *decodedBatch) size() int64 {
	return decodedOverhead + int64(len(d.ref.Object)) + int64(cap(d.recs))*recPosSize + int64(cap(d.data)) +
		4*int64(cap(d.starts)+cap(d.deltas))
}

// decodeBatch decodes data, the whole batch ref locates, decompressing it once, and
// checks every record (record.Records).
func decodeBatch(data []byte, ref BatchRef) (*decodedBatch, error) {
	h, err := record.ParseHeader(data)
	if err != nil {
		return nil, fmt.Errorf("batch at %d: %w", ref.BaseOffset, err)
	}
	d := &decodedBatch{ref: ref, lastDelta: h.LastOffsetDelta, control: h.Control(),
		dense: h.NumRecords == h.LastOffsetDelta+1, raw: h.Codec() == record.CodecNone, baseTS: h.BaseTimestamp}
	d.fixedTS, d.hasFixed = batchTimestamp(&h, &ref)
	if d.control {
		return d, nil
	}
	if size := h.Size(); size < len(data) {
		data = data[:size]
	}
	if d.raw {
		return d, d.index(&h, data)
	}
	// The header's count is not checked yet (Records does): bound what it can make
	// this allocate. Compressed data usually grows two to four times.
	d.recs = make([]recPos, 0, min(max(int(h.NumRecords), 0), 1<<16))
	d.data = make([]byte, 0, 2*len(data))
	err = record.Records(data, func(r *record.Record) error {
		p := recPos{tsDelta: r.TimestampDelta, off: int32(len(d.data)), keyLen: -1, valLen: -1, delta: r.OffsetDelta}
		if r.Key != nil {
			p.keyLen = int32(len(r.Key))
			d.data = append(d.data, r.Key...)
		}
		if r.Value != nil {
			p.valLen = int32(len(r.Value))
			d.data = append(d.data, r.Value...)
		}
		d.recs = append(d.recs, p)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("batch at %d: %w", ref.BaseOffset, err)
	}
	if cap(d.data) > len(d.data)+len(d.data)/4+4096 {
		d.data = slices.Clip(bytes.Clone(d.data))
	}
	if cap(d.recs) > len(d.recs)+len(d.recs)/4+64 {
		d.recs = slices.Clip(slices.Clone(d.recs))
	}
	return d, nil
}

// index fills the record starts (and deltas) of a raw batch after checking its
// records: each record is a zigzag varint length and that many bytes.
func (d *decodedBatch) index(h *record.Header, data []byte) error {
	var deltas []int32
	err := record.Records(data, func(r *record.Record) error {
		if !d.dense {
			deltas = append(deltas, r.OffsetDelta)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("batch at %d: %w", d.ref.BaseOffset, err)
	}
	d.deltas = slices.Clip(deltas)
	n := int(h.NumRecords) // checked by Records
	d.starts = make([]int32, n+1)
	pos := record.HeaderSize
	for i := range n {
		d.starts[i] = int32(pos)
		length, w := binary.Varint(data[pos:])
		pos += w + int(length) // Records checked every length
	}
	d.starts[n] = int32(pos)
	return nil
}

// find returns the index of the record with offset delta delta, or -1.
func (d *decodedBatch) find(delta int64) int {
	n := len(d.recs)
	if d.raw {
		n = len(d.starts) - 1
	}
	i := int(delta)
	if !d.dense {
		i = sort.Search(n, func(i int) bool { return int64(d.deltaOf(i)) >= delta })
	}
	if i >= n || int64(d.deltaOf(i)) != delta {
		return -1
	}
	return i
}

// deltaOf returns the offset delta of record i.
func (d *decodedBatch) deltaOf(i int) int32 {
	switch {
	case !d.raw:
		return d.recs[i].delta
	case d.dense:
		return int32(i)
	}
	return d.deltas[i]
}

// check returns the offset delta of offset in d, or an error when d does not hold it.
func (d *decodedBatch) check(offset int64) (int64, error) {
	return offsetDelta(d.ref.BaseOffset, d.lastDelta, offset)
}

// record is readRecord over a compressed d: the value aliases d, which never changes.
func (d *decodedBatch) record(offset int64, key []byte) (value []byte, ts int64, out outcome, err error) {
	delta, err := d.check(offset)
	if err != nil || d.control {
		return nil, 0, stale, err
	}
	i := d.find(delta)
	if i < 0 {
		return nil, 0, stale, nil
	}
	r := &d.recs[i]
	if r.keyLen < 0 || !bytes.Equal(d.data[r.off:r.off+r.keyLen], key) {
		return nil, 0, stale, nil
	}
	if r.valLen < 0 {
		return nil, d.timestamp(r.tsDelta), tombstone, nil
	}
	v := r.off + r.keyLen
	return d.data[v : v+r.valLen : v+r.valLen], d.timestamp(r.tsDelta), found, nil
}

// timestamp is the timestamp of a record of d with tsDelta.
func (d *decodedBatch) timestamp(tsDelta int64) int64 {
	if d.hasFixed {
		return d.fixedTS
	}
	return d.baseTS + tsDelta
}

// locate returns where the record at offset lies in a raw d's stored batch: bytes
// [from, from+length). ok is false when no record has that offset.
func (d *decodedBatch) locate(offset int64) (from, length int32, ok bool, err error) {
	delta, err := d.check(offset)
	if err != nil || d.control {
		return 0, 0, false, err
	}
	i := d.find(delta)
	if i < 0 {
		return 0, 0, false, nil
	}
	return d.starts[i], d.starts[i+1] - d.starts[i], true, nil
}

// readOne reads the record at offset of a raw d from b, its bytes as located, and
// checks that it carries key. The value aliases b.
func (d *decodedBatch) readOne(b []byte, offset int64, key []byte) (value []byte, ts int64, out outcome, err error) {
	r, err := record.ParseRecord(b)
	if err != nil {
		return nil, 0, stale, fmt.Errorf("record at %d: %w", offset, err)
	}
	if int64(r.OffsetDelta) != offset-d.ref.BaseOffset {
		return nil, 0, stale, fmt.Errorf("record at %d has offset delta %d, batch at %d", offset, r.OffsetDelta, d.ref.BaseOffset)
	}
	if r.Key == nil || !bytes.Equal(r.Key, key) {
		return nil, 0, stale, nil
	}
	if r.Value == nil {
		return nil, d.timestamp(r.TimestampDelta), tombstone, nil
	}
	return r.Value, d.timestamp(r.TimestampDelta), found, nil
}
