package layout

import (
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
	"sort"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/internal/valenc"
)

// Value encodings. Every value starts with a format byte so that a later
// version can change a layout without a rewrite; the rest is
// encoding/binary varints (see the package doc for each layout).

// ValueV1 is the format byte of every value's first layout.
const ValueV1 = valenc.Version1

// Topic is a topic's value: name, partition count, creation time and its
// explicitly set configs (encoded sorted by name).
type Topic struct {
	Name       string
	Partitions int
	CreatedMs  int64
	Configs    map[string]string
}

// EncodeTopic encodes a topic's value.
func EncodeTopic(t *Topic) []byte {
	b := []byte{ValueV1}
	b = valenc.AppendString(b, t.Name)
	b = binary.AppendUvarint(b, uint64(t.Partitions))
	b = binary.AppendVarint(b, t.CreatedMs)
	names := make([]string, 0, len(t.Configs))
	for k := range t.Configs {
		names = append(names, k)
	}
	sort.Strings(names)
	b = binary.AppendUvarint(b, uint64(len(names)))
	for _, k := range names {
		b = valenc.AppendString(b, k)
		b = valenc.AppendString(b, t.Configs[k])
	}
	return b
}

// DecodeTopic decodes a topic's value; Configs is never nil.
func DecodeTopic(v []byte) (Topic, error) {
	d := valenc.New("topic", v)
	t := Topic{Configs: map[string]string{}}
	t.Name = d.String()
	t.Partitions = int(d.Uvarint())
	t.CreatedMs = d.Varint()
	n := d.Uvarint()
	for i := uint64(0); i < n && d.Err() == nil; i++ {
		k := d.String()
		t.Configs[k] = d.String()
	}
	return t, d.Done("topic")
}

// Partition is a partition's checkpoint: its offsets, the max timestamp
// state (the largest batch max timestamp, the offset ListOffsets answers
// for it and the last offset of its batch), the tier boundary (WAL start),
// its rows' bytes and the cleaner's state.
type Partition struct {
	LogStart, HWM                                      int64
	MaxTimestamp, MaxTimestampOffset, MaxTimestampLast int64
	WALStart, Bytes, SegBytes, Segments, MetaBytes     int64
	CleanOffset, HorizonMs, CleanedMs                  int64
}

// EncodePartition encodes a partition's checkpoint (format 3): log
// start, high watermark, the max timestamp state, WAL start, bytes,
// segment bytes, segment count, the rows' encoded bytes, then the
// cleaner's state: the clean offset, the pending tombstone horizon and
// the time of the last cleaning. Format 2 ended after the rows' bytes,
// format 1 after the max timestamp state.
func EncodePartition(p *Partition) []byte {
	b := make([]byte, 0, 1+13*binary.MaxVarintLen64)
	b = append(b, valenc.Version3)
	b = binary.AppendVarint(b, p.LogStart)
	b = binary.AppendVarint(b, p.HWM)
	b = binary.AppendVarint(b, p.MaxTimestamp)
	b = binary.AppendVarint(b, p.MaxTimestampOffset)
	b = binary.AppendVarint(b, p.MaxTimestampLast)
	b = binary.AppendVarint(b, p.WALStart)
	b = binary.AppendVarint(b, p.Bytes)
	b = binary.AppendVarint(b, p.SegBytes)
	b = binary.AppendVarint(b, p.Segments)
	b = binary.AppendVarint(b, p.MetaBytes)
	b = binary.AppendVarint(b, p.CleanOffset)
	b = binary.AppendVarint(b, p.HorizonMs)
	b = binary.AppendVarint(b, p.CleanedMs)
	return b
}

// DecodePartition decodes a partition checkpoint of any format; v1
// reports a format 1 one, whose tier fields (WAL start: the log start; no
// segments) and bytes (0) the caller completes. A format 1 or 2 one has
// never been cleaned: clean offset 0, no horizon (-1), never cleaned (-1).
func DecodePartition(v []byte) (p Partition, v1 bool, err error) {
	if len(v) > 0 && v[0] == ValueV1 {
		d := valenc.New("partition", v)
		p = Partition{
			LogStart:           d.Varint(),
			HWM:                d.Varint(),
			MaxTimestamp:       d.Varint(),
			MaxTimestampOffset: d.Varint(),
			MaxTimestampLast:   d.Varint(),
		}
		p.WALStart = p.LogStart
		p.HorizonMs, p.CleanedMs = -1, -1
		return p, true, d.Done("partition")
	}
	version := valenc.Version3
	if len(v) > 0 && v[0] == valenc.Version2 {
		version = valenc.Version2
	}
	d := valenc.NewVersion("partition", version, v)
	p = Partition{
		LogStart:           d.Varint(),
		HWM:                d.Varint(),
		MaxTimestamp:       d.Varint(),
		MaxTimestampOffset: d.Varint(),
		MaxTimestampLast:   d.Varint(),
		WALStart:           d.Varint(),
		Bytes:              d.Varint(),
		SegBytes:           d.Varint(),
		Segments:           d.Varint(),
		MetaBytes:          d.Varint(),
		HorizonMs:          -1,
		CleanedMs:          -1,
	}
	if version == valenc.Version3 {
		p.CleanOffset, p.HorizonMs, p.CleanedMs = d.Varint(), d.Varint(), d.Varint()
	}
	return p, false, d.Done("partition")
}

// Object is an object's value: its life-cycle state (the coordinator's
// ObjectState), size, live bytes, creation and garbage times, the broker
// that committed it and its key in the object store.
type Object struct {
	State          uint8
	Size, Live     int64
	CreatedMs      int64
	GarbageSinceMs int64
	BrokerID       int32
	Key            string
}

// EncodeObject encodes an object's value.
func EncodeObject(o *Object) []byte {
	b := make([]byte, 0, 1+6*binary.MaxVarintLen64+len(o.Key))
	b = append(b, ValueV1)
	b = append(b, o.State)
	b = binary.AppendVarint(b, o.Size)
	b = binary.AppendVarint(b, o.Live)
	b = binary.AppendVarint(b, o.CreatedMs)
	b = binary.AppendVarint(b, o.GarbageSinceMs)
	b = binary.AppendVarint(b, int64(o.BrokerID))
	b = valenc.AppendString(b, o.Key)
	return b
}

// DecodeObject decodes an object's value.
func DecodeObject(v []byte) (Object, error) {
	d := valenc.New("object", v)
	o := Object{
		State:          d.Byte(),
		Size:           d.Varint(),
		Live:           d.Varint(),
		CreatedMs:      d.Varint(),
		GarbageSinceMs: d.Varint(),
		BrokerID:       int32(d.Varint()),
	}
	o.Key = d.String()
	return o, d.Done("object")
}

// MaxProducerBatches is how many batches per producer and partition are
// remembered for duplicate detection (Kafka's
// max.in.flight.requests.per.connection limit for idempotence).
const MaxProducerBatches = 5

// Producer is one producer's idempotence state on one partition: its
// epoch, when it last changed, and Batches[:N], its latest batches, oldest
// first.
type Producer struct {
	Epoch        int16
	LastUpdateMs int64
	Batches      [MaxProducerBatches]SeqBatch
	N            int
}

// SeqBatch is one remembered batch: its sequence range and what it was
// answered.
type SeqBatch struct {
	BaseSeq    int32
	LastSeq    int32
	BaseOffset int64
	Timestamp  int64 // stored max timestamp (the append time on LogAppendTime topics)
}

// AppendProducer appends a producer's value (its checkpoint).
func AppendProducer(b []byte, p *Producer) []byte {
	return appendProducerFields(append(b, ValueV1), p)
}

// EncodeProducer encodes a producer's value.
func EncodeProducer(p *Producer) []byte {
	return AppendProducer(make([]byte, 0, 1+3+binary.MaxVarintLen64+p.N*4*binary.MaxVarintLen64), p)
}

// appendProducerFields appends a producer state without format byte: the
// producer value's fields, also found in batch runs.
func appendProducerFields(b []byte, p *Producer) []byte {
	b = binary.AppendVarint(b, int64(p.Epoch))
	b = binary.AppendVarint(b, p.LastUpdateMs)
	b = append(b, byte(p.N))
	for _, sb := range p.Batches[:p.N] {
		b = binary.AppendVarint(b, int64(sb.BaseSeq))
		b = binary.AppendVarint(b, int64(sb.LastSeq))
		b = binary.AppendVarint(b, sb.BaseOffset)
		b = binary.AppendVarint(b, sb.Timestamp)
	}
	return b
}

// DecodeProducer decodes a producer's value.
func DecodeProducer(v []byte) (Producer, error) {
	d := valenc.New("producer", v)
	p, err := decodeProducerFields(d)
	if err != nil {
		return p, err
	}
	return p, d.Done("producer")
}

// decodeProducerFields reads what appendProducerFields wrote.
func decodeProducerFields(d *valenc.Decoder) (Producer, error) {
	p := Producer{
		Epoch:        int16(d.Varint()),
		LastUpdateMs: d.Varint(),
	}
	n := int(d.Byte())
	if n > MaxProducerBatches {
		return p, fmt.Errorf("decode producer value: %d batches", n)
	}
	for i := 0; i < n && d.Err() == nil; i++ {
		p.Batches[i] = SeqBatch{
			BaseSeq:    int32(d.Varint()),
			LastSeq:    int32(d.Varint()),
			BaseOffset: d.Varint(),
			Timestamp:  d.Varint(),
		}
	}
	p.N = n
	if err := d.Err(); err != nil {
		return p, fmt.Errorf("decode producer value: %w", err)
	}
	return p, nil
}

// ProducerID is what InitProducerID remembers about a producer id to bump
// its epoch (KIP-360): the current epoch and the one it was bumped from,
// so that a retried bump gets the same answer.
type ProducerID struct {
	Epoch     int16
	LastEpoch int16
}

// EncodeProducerID encodes a producer id's value.
func EncodeProducerID(v ProducerID) []byte {
	b := []byte{ValueV1}
	b = binary.AppendVarint(b, int64(v.Epoch))
	return binary.AppendVarint(b, int64(v.LastEpoch))
}

// DecodeProducerID decodes a producer id's value.
func DecodeProducerID(v []byte) (ProducerID, error) {
	d := valenc.New("producer id", v)
	p := ProducerID{Epoch: int16(d.Varint()), LastEpoch: int16(d.Varint())}
	return p, d.Done("producer id")
}

// EncodeUint64 encodes a meta counter: 8 bytes, big-endian.
func EncodeUint64(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }

// DecodeUint64 decodes a meta counter; what names it in the error.
func DecodeUint64(what string, v []byte) (uint64, error) {
	if len(v) != 8 {
		return 0, fmt.Errorf("coordinator: bad %s value %x", what, v)
	}
	return binary.BigEndian.Uint64(v), nil
}

// EncodeOffset encodes an offset value: format 1, a varint (the
// transaction families' open and aborted rows).
func EncodeOffset(o int64) []byte {
	return binary.AppendVarint([]byte{ValueV1}, o)
}

// DecodeOffset decodes an offset value; what names it in the error.
func DecodeOffset(what string, v []byte) (int64, error) {
	d := valenc.New(what, v)
	o := d.Varint()
	return o, d.Done(what)
}

// EncodeView encodes a view's value: its base topic id (16 bytes) and
// its key.
func EncodeView(base coordapi.TopicID, key []byte) []byte {
	b := append([]byte{ValueV1}, base[:]...)
	return valenc.AppendString(b, string(key))
}

// DecodeView decodes a view's value.
func DecodeView(v []byte) (base coordapi.TopicID, key []byte, err error) {
	d := valenc.New("view", v)
	copy(base[:], d.Bytes(16))
	key = []byte(d.String())
	return base, key, d.Done("view")
}

// EncodeTableCovered encodes a table topic's covered offsets: n, then n ×
// (partition, next offset), by partition.
func EncodeTableCovered(covered map[int32]int64) []byte {
	parts := slices.Sorted(maps.Keys(covered))
	v := binary.AppendUvarint([]byte{ValueV1}, uint64(len(parts)))
	for _, p := range parts {
		v = binary.AppendVarint(v, int64(p))
		v = binary.AppendVarint(v, covered[p])
	}
	return v
}

// DecodeTableCovered adds the covered offsets of value v to covered.
func DecodeTableCovered(v []byte, covered map[int32]int64) error {
	d := valenc.New("table covered", v)
	n := d.Uvarint()
	for i := uint64(0); i < n && d.Err() == nil; i++ {
		p := d.Varint()
		covered[int32(p)] = d.Varint()
	}
	return d.Done("table covered")
}

// EncodeTxnKeys encodes the keys a transactional batch holds until its
// marker: n, then n × (key str, offset delta, tombstone(1)).
func EncodeTxnKeys(keys []coordapi.KeyEntry) []byte {
	b := binary.AppendUvarint([]byte{ValueV1}, uint64(len(keys)))
	for _, k := range keys {
		b = valenc.AppendString(b, string(k.Key))
		b = binary.AppendVarint(b, int64(k.OffsetDelta))
		if k.Tombstone {
			b = append(b, 1)
		} else {
			b = append(b, 0)
		}
	}
	return b
}

// DecodeTxnKeys decodes what EncodeTxnKeys wrote.
func DecodeTxnKeys(v []byte) ([]coordapi.KeyEntry, error) {
	d := valenc.New("transaction keys", v)
	n := d.Uvarint()
	var out []coordapi.KeyEntry
	for i := uint64(0); i < n && d.Err() == nil; i++ {
		k := coordapi.KeyEntry{Key: []byte(d.String()), OffsetDelta: int32(d.Varint())}
		k.Tombstone = d.Byte() == 1
		out = append(out, k)
	}
	return out, d.Done("transaction keys")
}

// BatchV1 is a format 1 batch value, which keyed each batch alone; the
// coordinator migrates it to a run at open.
type BatchV1 struct {
	Object          uint64
	ByteOffset      int64
	ByteLength      int32
	LastOffsetDelta int32
	MaxTimestamp    int64
	LogAppendTime   bool
}

// DecodeBatchV1 decodes a format 1 batch value: flags(1: LogAppendTime),
// object number, byte offset, byte length, last offset delta, max
// timestamp.
func DecodeBatchV1(v []byte) (BatchV1, error) {
	d := valenc.New("batch", v)
	flags := d.Byte()
	bv := BatchV1{
		Object:          d.Uvarint(),
		ByteOffset:      int64(d.Uvarint()),
		ByteLength:      int32(d.Uvarint()),
		LastOffsetDelta: int32(d.Uvarint()),
		MaxTimestamp:    d.Varint(),
		LogAppendTime:   flags&BatchFlagLogAppendTime != 0,
	}
	return bv, d.Done("batch")
}
