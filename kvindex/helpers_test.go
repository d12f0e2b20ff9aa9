package kvindex

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/cockroachdb/pebble"

	"github.com/floe-io/floe/record"
)

// openDB opens a Pebble database in a temporary directory, closed at cleanup.
func openDB(t testing.TB, dir string) *pebble.DB {
	t.Helper()
	db, err := pebble.Open(dir, &pebble.Options{Logger: quietPebble{}})
	if err != nil {
		t.Fatalf("pebble.Open: %v", err)
	}
	return db
}

// quietPebble keeps Pebble's informational logs out of test output.
type quietPebble struct{}

func (quietPebble) Infof(string, ...any) {}

func (quietPebble) Errorf(format string, args ...any) { slog.Error(fmt.Sprintf(format, args...)) }

func (quietPebble) Fatalf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }

// commit commits fn's writes in one synced batch.
func commit(t testing.TB, db *pebble.DB, fn func(b *pebble.Batch)) {
	t.Helper()
	b := db.NewBatch()
	defer b.Close()
	fn(b)
	if err := b.Commit(pebble.Sync); err != nil {
		t.Fatalf("commit: %v", err)
	}
}

// kv is a record to build: a nil value is a tombstone.
type kv struct {
	key, value []byte
	tsDelta    int64
}

func rec(key, value string) kv { return kv{key: []byte(key), value: []byte(value)} }

func tomb(key string) kv { return kv{key: []byte(key)} }

// build encodes recs as one batch with opts.
func build(t testing.TB, opts record.BuildOptions, recs ...kv) []byte {
	t.Helper()
	rs := make([]record.Record, len(recs))
	for i, r := range recs {
		rs[i] = record.Record{Key: r.key, Value: r.value, TimestampDelta: r.tsDelta}
	}
	b, err := record.Build(opts, rs)
	if err != nil {
		t.Fatalf("record.Build: %v", err)
	}
	return b
}

// gapBatch encodes a batch of codec whose records carry the given offset deltas, as
// compaction leaves them: lastDelta may exceed the last record's.
func gapBatch(t testing.TB, codec record.Codec, baseTS int64, lastDelta int32, deltas []int32, recs ...kv) []byte {
	t.Helper()
	rs := make([]record.Record, len(recs))
	for i, r := range recs {
		rs[i] = record.Record{Key: r.key, Value: r.value, TimestampDelta: r.tsDelta, OffsetDelta: deltas[i]}
	}
	b, err := record.Build(record.BuildOptions{Codec: codec, BaseTimestamp: baseTS, ProducerID: -1, ProducerEpoch: -1,
		BaseSequence: -1, PartitionLeaderEpoch: -1, KeepOffsetDeltas: true, LastOffsetDelta: lastDelta}, rs)
	if err != nil {
		t.Fatalf("record.Build: %v", err)
	}
	return b
}

// fakeBatch is one batch of a fakeLog partition.
type fakeBatch struct {
	data          []byte
	base, last    int64
	remote        bool
	segment       bool // in a tiered segment: Lookup answers the segment
	logAppendTime int64
	object        string // where it is "stored": at byte offset 0 of its own object
}

// fakeKey addresses an index entry of a fakeLog.
type fakeKey struct {
	topic     [16]byte
	partition int32
	key       string
}

// fakeLog is an in-memory log and index: a Service for the handler and a LogSource for
// Rebuild. Appending a batch indexes it as the coordinator does.
type fakeLog struct {
	mu       sync.Mutex
	topics   map[string]TopicInfo
	batches  map[fakeKey][]fakeBatch // key field empty: the partition's batches
	hwm      map[fakeKey]int64       // overrides of the high watermark
	logStart map[fakeKey]int64       // log start offsets (0 when absent)
	entries  map[fakeKey]int64
	objects  map[string][]byte // every batch by its object key
	notReady map[[16]byte]bool // topics whose index is being built
	dropped  map[[16]byte]bool // topics whose index was turned off since Topic answered

	// Failures to inject, per method.
	topicErr, lookupErr, readErr, resolveErr error
	// readGate, when set, holds every whole-batch read until it is closed.
	readGate chan struct{}
	// resolvePast makes ResolveSegment answer the batch after the one holding the
	// offset, as for an offset compaction removed from the segment.
	resolvePast bool
	// baseShift is added to the base offsets Lookup returns, to hand over a batch
	// that does not hold the offset asked for.
	baseShift int64
	// noBatch makes Lookup leave out the batch, as a broken Service would.
	noBatch bool
	// lookups counts Lookup calls; reads and recordReads the ReadBatch calls that
	// read a whole batch and one record.
	lookups, reads, recordReads int
	// resolves counts ResolveSegment calls.
	resolves int
}

func newFakeLog() *fakeLog {
	return &fakeLog{
		topics:   map[string]TopicInfo{},
		batches:  map[fakeKey][]fakeBatch{},
		hwm:      map[fakeKey]int64{},
		logStart: map[fakeKey]int64{},
		entries:  map[fakeKey]int64{},
		objects:  map[string][]byte{},
		notReady: map[[16]byte]bool{},
		dropped:  map[[16]byte]bool{},
	}
}

func (f *fakeLog) addTopic(name string, info TopicInfo) TopicInfo {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.topics[name] = info
	return info
}

// append appends a batch to a partition, indexes its keys, and returns its base offset.
func (f *fakeLog) append(t testing.TB, id [16]byte, p int32, data []byte) int64 {
	return f.appendBatch(t, id, p, fakeBatch{data: data})
}

func (f *fakeLog) appendBatch(t testing.TB, id [16]byte, p int32, fb fakeBatch) int64 {
	t.Helper()
	h, err := record.ParseHeader(fb.data)
	if err != nil {
		t.Fatalf("ParseHeader: %v", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	pk := fakeKey{topic: id, partition: p}
	bs := f.batches[pk]
	if n := len(bs); n > 0 {
		fb.base = bs[n-1].last + 1
	}
	fb.last = fb.base + int64(h.LastOffsetDelta)
	fb.object = fmt.Sprintf("%x/%d/%d", id, p, fb.base)
	f.objects[fb.object] = fb.data
	f.batches[pk] = append(bs, fb)
	err = record.Records(fb.data, func(r *record.Record) error {
		if r.Key == nil {
			return nil
		}
		k := fakeKey{id, p, string(r.Key)}
		if r.Value == nil {
			delete(f.entries, k)
		} else {
			f.entries[k] = fb.base + int64(r.OffsetDelta)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("Records: %v", err)
	}
	return fb.base
}

func (f *fakeLog) setEntry(id [16]byte, p int32, key string, offset int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.entries[fakeKey{id, p, key}] = offset
}

func (f *fakeLog) highWatermark(id [16]byte, p int32) int64 {
	pk := fakeKey{topic: id, partition: p}
	if h, ok := f.hwm[pk]; ok {
		return h
	}
	bs := f.batches[pk]
	if len(bs) == 0 {
		return 0
	}
	return bs[len(bs)-1].last + 1
}

func (f *fakeLog) Topic(_ context.Context, name string) (TopicInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.topicErr != nil {
		return TopicInfo{}, f.topicErr
	}
	t, ok := f.topics[name]
	if !ok {
		return TopicInfo{}, ErrUnknownTopic
	}
	return t, nil
}

// Lookup answers as the coordinator's KvGet does.
func (f *fakeLog) Lookup(_ context.Context, id [16]byte, p int32, key []byte) (LookupResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lookups++
	if f.lookupErr != nil {
		return LookupResult{}, f.lookupErr
	}
	if f.dropped[id] {
		return LookupResult{}, nil
	}
	if f.notReady[id] {
		return LookupResult{Indexed: true}, nil
	}
	offset, found := f.entries[fakeKey{id, p, string(key)}]
	return f.answerLocked(id, p, offset, found), nil
}

// answerLocked is Lookup's answer for an index entry at offset (found). f.mu must be
// held.
func (f *fakeLog) answerLocked(id [16]byte, p int32, offset int64, found bool) LookupResult {
	pk := fakeKey{topic: id, partition: p}
	r := LookupResult{Indexed: true, Ready: true, Found: found, Offset: offset,
		HighWatermark: f.highWatermark(id, p), LogStartOffset: f.logStart[pk]}
	if !r.Found || r.Offset < r.LogStartOffset || r.Offset >= r.HighWatermark || f.noBatch {
		return r
	}
	bs := f.batches[pk]
	i := sort.Search(len(bs), func(i int) bool { return bs[i].last >= r.Offset })
	if i == len(bs) || bs[i].base > r.Offset {
		return r
	}
	fb := bs[i]
	if fb.segment {
		r.Batch = BatchRef{Object: "segment/" + fb.object, ObjectSize: 1 << 20, ByteLength: 1 << 19, BaseOffset: bs[0].base,
			Remote: true, Segment: true}
		return r
	}
	r.Batch = batchRef(fb, f.baseShift)
	return r
}

// batchRef is the ref of fb.
func batchRef(fb fakeBatch, baseShift int64) BatchRef {
	return BatchRef{Object: fb.object, ObjectSize: int64(len(fb.data)), ByteLength: int32(len(fb.data)),
		BaseOffset: fb.base + baseShift, LogAppendTime: fb.logAppendTime, Remote: fb.remote || fb.segment}
}

// ResolveSegment finds the batch holding offset among the partition's batches, which
// the segment's object key names.
func (f *fakeLog) ResolveSegment(_ context.Context, seg BatchRef, offset int64) (BatchRef, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.resolves++
	if f.resolveErr != nil {
		return BatchRef{}, f.resolveErr
	}
	if !seg.Segment || !strings.HasPrefix(seg.Object, "segment/") {
		return BatchRef{}, fmt.Errorf("not a segment: %+v", seg)
	}
	for _, bs := range f.batches {
		for i, fb := range bs {
			if fb.object != strings.TrimPrefix(seg.Object, "segment/") {
				continue
			}
			if fb.base > offset || fb.last < offset {
				return BatchRef{}, fmt.Errorf("segment %s does not hold offset %d", seg.Object, offset)
			}
			if f.resolvePast {
				if i+1 == len(bs) {
					return BatchRef{}, errors.New("no batch after the offset")
				}
				fb = bs[i+1]
			}
			return batchRef(fb, f.baseShift), nil
		}
	}
	return BatchRef{}, fmt.Errorf("no segment %s", seg.Object)
}

// HighWatermark serves Rebuild (LogSource).
func (f *fakeLog) HighWatermark(_ context.Context, id [16]byte, p int32) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.highWatermark(id, p), nil
}

func (f *fakeLog) ReadBatch(_ context.Context, ref BatchRef, from, length int32) ([]byte, error) {
	if f.readGate != nil && from == 0 && length == ref.ByteLength {
		<-f.readGate
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.readErr != nil {
		return nil, f.readErr
	}
	data, ok := f.objects[ref.Object]
	if !ok || ref.ByteOffset != 0 || int(ref.ByteLength) != len(data) {
		return nil, fmt.Errorf("no batch at %s:%d", ref.Object, ref.ByteOffset)
	}
	if from < 0 || length < 0 || int(from)+int(length) > len(data) {
		return nil, fmt.Errorf("bytes [%d, +%d) outside the batch of %d at %s", from, length, len(data), ref.Object)
	}
	if from == 0 && length == ref.ByteLength {
		f.reads++
	} else {
		f.recordReads++
	}
	return data[from : from+length], nil
}

func (f *fakeLog) Batches(_ context.Context, id [16]byte, p int32, from int64) iter.Seq2[LogBatch, error] {
	return func(yield func(LogBatch, error) bool) {
		f.mu.Lock()
		bs := f.batches[fakeKey{topic: id, partition: p}]
		f.mu.Unlock()
		for _, b := range bs {
			if b.last < from {
				continue
			}
			if !yield(LogBatch{Data: b.data, BaseOffset: b.base}, nil) {
				return
			}
		}
	}
}

var _ Service = (*fakeLog)(nil)
var _ LogSource = (*fakeLog)(nil)
