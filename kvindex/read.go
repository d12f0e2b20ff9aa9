package kvindex

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/floe-io/floe/record"
)

// outcome is what readRecord found at an offset.
type outcome int8

const (
	found     outcome = iota // the record carries the key and a value
	tombstone                // the record carries the key and a null value
	stale                    // no record at the offset, or one with another key
)

// errStop ends record iteration once the wanted offset is reached.
var errStop = errors.New("kvindex: stop")

// readRecord finds the record at offset in b and checks that it carries key. On found it
// returns the record's value and timestamp in milliseconds. The value aliases b.Data for
// uncompressed batches and is a copy otherwise (the decompressed records go back to a
// pool). Records are decoded only up to the wanted one. An error means b is not a batch
// that holds offset: the Service handed over the wrong bytes or corrupt ones.
func readRecord(b Batch, offset int64, key []byte) (value []byte, ts int64, out outcome, err error) {
	h, err := record.ParseHeader(b.Data)
	if err != nil {
		return nil, 0, stale, fmt.Errorf("batch at %d: %w", b.BaseOffset, err)
	}
	delta := offset - b.BaseOffset
	if delta < 0 || delta > int64(h.LastOffsetDelta) {
		return nil, 0, stale, fmt.Errorf("batch %d..%d does not hold offset %d", b.BaseOffset, b.BaseOffset+int64(h.LastOffsetDelta), offset)
	}
	if h.Control() { // transaction markers: never a user's record
		return nil, 0, stale, nil
	}
	data := b.Data
	if size := h.Size(); size < len(data) {
		data = data[:size]
	}
	want := int32(delta)
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
		return nil, 0, stale, fmt.Errorf("batch at %d: %w", b.BaseOffset, err)
	}
	switch {
	case b.LogAppendTime > 0:
		ts = b.LogAppendTime
	case h.LogAppendTime():
		ts = h.MaxTimestamp
	}
	return value, ts, out, nil
}
