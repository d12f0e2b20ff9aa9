package coordinator

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
	"sort"

	"github.com/cockroachdb/pebble"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/internal/valenc"
)

// Value encodings. Every value starts with a format byte (valueV1) so that a
// later version can change a layout without a rewrite; the rest is
// encoding/binary varints (see the package doc for each layout).

const valueV1 = valenc.Version1

// decoder reads a value; see internal/valenc.
type decoder = valenc.Decoder

func newDecoder(what string, b []byte) *decoder { return valenc.New(what, b) }

func appendString(b []byte, s string) []byte { return valenc.AppendString(b, s) }

// topicValue encodes a topic: name, partition count, creation time and its
// explicitly set configs, sorted by name.
func encodeTopic(t *topicState) []byte {
	b := []byte{valueV1}
	b = appendString(b, t.name)
	b = binary.AppendUvarint(b, uint64(len(t.parts)))
	b = binary.AppendVarint(b, t.createdMs)
	names := make([]string, 0, len(t.configs))
	for k := range t.configs {
		names = append(names, k)
	}
	sort.Strings(names)
	b = binary.AppendUvarint(b, uint64(len(names)))
	for _, k := range names {
		b = appendString(b, k)
		b = appendString(b, t.configs[k])
	}
	return b
}

// decodeTopic decodes a topic value; partitions are loaded separately.
func decodeTopic(id coordapi.TopicID, v []byte) (t *topicState, partitions int, err error) {
	d := newDecoder("topic", v)
	t = &topicState{id: id, configs: map[string]string{}}
	t.name = d.String()
	partitions = int(d.Uvarint())
	t.createdMs = d.Varint()
	n := d.Uvarint()
	for i := uint64(0); i < n && d.Err() == nil; i++ {
		k := d.String()
		t.configs[k] = d.String()
	}
	return t, partitions, d.Done("topic")
}

// encodePartition encodes a partition's checkpoint (format 3): log
// start, high watermark, the max timestamp state, WAL start, bytes,
// segment bytes, segment count, the rows' encoded bytes, then the
// cleaner's state: the clean offset, the pending tombstone horizon and
// the time of the last cleaning. Format 2 ended after the rows' bytes,
// format 1 after the max timestamp state.
func encodePartition(p *partState) []byte {
	b := make([]byte, 0, 1+13*binary.MaxVarintLen64)
	b = append(b, valenc.Version3)
	b = binary.AppendVarint(b, p.logStart)
	b = binary.AppendVarint(b, p.hwm)
	b = binary.AppendVarint(b, p.maxTimestamp)
	b = binary.AppendVarint(b, p.maxTimestampOffset)
	b = binary.AppendVarint(b, p.maxTimestampLast)
	b = binary.AppendVarint(b, p.walStart)
	b = binary.AppendVarint(b, p.bytes)
	b = binary.AppendVarint(b, p.segBytes)
	b = binary.AppendVarint(b, p.segments)
	b = binary.AppendVarint(b, p.metaBytes)
	b = binary.AppendVarint(b, p.cleanOffset)
	b = binary.AppendVarint(b, p.horizonMs)
	b = binary.AppendVarint(b, p.cleanedMs)
	return b
}

// decodePartition decodes a partition checkpoint of any format; v1
// reports a format 1 one, whose tier fields (WAL start: the log start; no
// segments) and bytes (0) the caller completes. A format 1 or 2 one has
// never been cleaned: clean offset 0, no horizon.
func decodePartition(v []byte) (p partState, v1 bool, err error) {
	if len(v) > 0 && v[0] == valueV1 {
		d := newDecoder("partition", v)
		p = partState{
			logStart:           d.Varint(),
			hwm:                d.Varint(),
			maxTimestamp:       d.Varint(),
			maxTimestampOffset: d.Varint(),
			maxTimestampLast:   d.Varint(),
		}
		p.walStart = p.logStart
		p.horizonMs, p.cleanedMs = -1, -1
		return p, true, d.Done("partition")
	}
	version := valenc.Version3
	if len(v) > 0 && v[0] == valenc.Version2 {
		version = valenc.Version2
	}
	d := valenc.NewVersion("partition", version, v)
	p = partState{
		logStart:           d.Varint(),
		hwm:                d.Varint(),
		maxTimestamp:       d.Varint(),
		maxTimestampOffset: d.Varint(),
		maxTimestampLast:   d.Varint(),
		walStart:           d.Varint(),
		bytes:              d.Varint(),
		segBytes:           d.Varint(),
		segments:           d.Varint(),
		metaBytes:          d.Varint(),
		horizonMs:          -1,
		cleanedMs:          -1,
	}
	if version == valenc.Version3 {
		p.cleanOffset, p.horizonMs, p.cleanedMs = d.Varint(), d.Varint(), d.Varint()
	}
	return p, false, d.Done("partition")
}

func encodeObject(o *objectState) []byte {
	b := make([]byte, 0, 1+6*binary.MaxVarintLen64+len(o.key))
	b = append(b, valueV1)
	b = append(b, byte(o.state))
	b = binary.AppendVarint(b, o.size)
	b = binary.AppendVarint(b, o.live)
	b = binary.AppendVarint(b, o.createdMs)
	b = binary.AppendVarint(b, o.garbageSinceMs)
	b = binary.AppendVarint(b, int64(o.brokerID))
	b = appendString(b, o.key)
	return b
}

func decodeObject(v []byte) (objectState, error) {
	d := newDecoder("object", v)
	o := objectState{
		state:          ObjectState(d.Byte()),
		size:           d.Varint(),
		live:           d.Varint(),
		createdMs:      d.Varint(),
		garbageSinceMs: d.Varint(),
		brokerID:       int32(d.Varint()),
	}
	o.key = d.String()
	return o, d.Done("object")
}

func encodeProducer(p *producerState) []byte {
	return appendProducer(make([]byte, 0, 1+3+binary.MaxVarintLen64+p.n*4*binary.MaxVarintLen64), p)
}

func appendProducer(b []byte, p *producerState) []byte {
	return appendProducerFields(append(b, valueV1), p)
}

// appendProducerFields appends a producer state without format byte: the
// producer value's fields, also found in batch runs.
func appendProducerFields(b []byte, p *producerState) []byte {
	b = binary.AppendVarint(b, int64(p.epoch))
	b = binary.AppendVarint(b, p.lastUpdateMs)
	b = append(b, byte(p.n))
	for _, sb := range p.batches[:p.n] {
		b = binary.AppendVarint(b, int64(sb.baseSeq))
		b = binary.AppendVarint(b, int64(sb.lastSeq))
		b = binary.AppendVarint(b, sb.baseOffset)
		b = binary.AppendVarint(b, sb.timestamp)
	}
	return b
}

func decodeProducer(v []byte) (producerState, error) {
	d := newDecoder("producer", v)
	p, err := decodeProducerFields(d)
	if err != nil {
		return p, err
	}
	return p, d.Done("producer")
}

// decodeProducerFields reads what appendProducerFields wrote.
func decodeProducerFields(d *decoder) (producerState, error) {
	p := producerState{
		epoch:        int16(d.Varint()),
		lastUpdateMs: d.Varint(),
	}
	n := int(d.Byte())
	if n > maxProducerBatches {
		return p, fmt.Errorf("decode producer value: %d batches", n)
	}
	for i := 0; i < n && d.Err() == nil; i++ {
		p.batches[i] = seqBatch{
			baseSeq:    int32(d.Varint()),
			lastSeq:    int32(d.Varint()),
			baseOffset: d.Varint(),
			timestamp:  d.Varint(),
		}
	}
	p.n = n
	if err := d.Err(); err != nil {
		return p, fmt.Errorf("decode producer value: %w", err)
	}
	return p, nil
}

// producerIDValue is what InitProducerID remembers about a producer id to
// bump its epoch (KIP-360): the current epoch and the one it was bumped from,
// so that a retried bump gets the same answer.
type producerIDValue struct {
	epoch     int16
	lastEpoch int16
}

func encodeProducerID(v producerIDValue) []byte {
	b := []byte{valueV1}
	b = binary.AppendVarint(b, int64(v.epoch))
	return binary.AppendVarint(b, int64(v.lastEpoch))
}

func decodeProducerID(v []byte) (producerIDValue, error) {
	d := newDecoder("producer id", v)
	p := producerIDValue{epoch: int16(d.Varint()), lastEpoch: int16(d.Varint())}
	return p, d.Done("producer id")
}

func encodeUint64(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }

func decodeUint64(what string, v []byte) (uint64, error) {
	if len(v) != 8 {
		return 0, fmt.Errorf("coordinator: bad %s value %x", what, v)
	}
	return binary.BigEndian.Uint64(v), nil
}

// sortedWrites collects a commit's writes and adds them to a Pebble batch
// in key order: Pebble's memtable skiplist inserts keys that follow each
// other much faster (it reuses the previous insert's position), and one
// object's batches are otherwise interleaved across partitions.
//
// A write is either set, or appended in place: append its key to arena and
// call endKey, then append its value and call endValue.
type sortedWrites struct {
	arena []byte
	kvs   []kvRef
	// start and mid are where the write being appended starts and where
	// its value starts.
	start, mid int
}

// kvRef locates one key and value in the arena: key [start, mid), value
// [mid, end).
type kvRef struct{ start, mid, end int }

func (w *sortedWrites) set(k, v []byte) {
	w.arena = append(w.arena, k...)
	w.endKey()
	w.arena = append(w.arena, v...)
	w.endValue()
}

func (w *sortedWrites) endKey() { w.mid = len(w.arena) }

func (w *sortedWrites) endValue() {
	w.kvs = append(w.kvs, kvRef{w.start, w.mid, len(w.arena)})
	w.start = len(w.arena)
}

func (w *sortedWrites) key(r kvRef) []byte { return w.arena[r.start:r.mid] }

// apply sets every collected write in b, in key order. Keys must be unique.
func (w *sortedWrites) apply(b *pebble.Batch) {
	slices.SortFunc(w.kvs, func(x, y kvRef) int { return bytes.Compare(w.key(x), w.key(y)) })
	for _, r := range w.kvs {
		_ = b.Set(w.arena[r.start:r.mid], w.arena[r.mid:r.end], nil)
	}
}
