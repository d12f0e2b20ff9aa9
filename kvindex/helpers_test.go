package kvindex

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"iter"
	"log/slog"
	"sort"
	"sync"
	"testing"

	"github.com/cockroachdb/pebble"
	"github.com/twmb/franz-go/pkg/kmsg"

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

// gapBatch encodes, with kmsg, an uncompressed batch whose records carry the given
// offset deltas, as compaction leaves them: lastDelta may exceed len(recs)-1.
func gapBatch(baseTS int64, lastDelta int32, deltas []int32, recs ...kv) []byte {
	var raw []byte
	for i, r := range recs {
		kr := kmsg.Record{TimestampDelta64: r.tsDelta, OffsetDelta: deltas[i], Key: r.key, Value: r.value}
		n := len(kr.AppendTo(nil)) - 1 // encoded with Length 0, a one-byte varint
		kr.Length = int32(n)
		raw = kr.AppendTo(raw)
	}
	kb := kmsg.RecordBatch{
		Length:               int32(record.HeaderSize - 12 + len(raw)),
		PartitionLeaderEpoch: -1,
		Magic:                2,
		LastOffsetDelta:      lastDelta,
		FirstTimestamp:       baseTS,
		MaxTimestamp:         baseTS,
		ProducerID:           -1,
		ProducerEpoch:        -1,
		FirstSequence:        -1,
		NumRecords:           int32(len(recs)),
		Records:              raw,
	}
	b := kb.AppendTo(nil)
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

// fakeBatch is one batch of a fakeLog partition.
type fakeBatch struct {
	data          []byte
	base, last    int64
	remote        bool
	logAppendTime int64
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
	mu      sync.Mutex
	topics  map[string]TopicInfo
	batches map[fakeKey][]fakeBatch // key field empty: the partition's batches
	hwm     map[fakeKey]int64       // overrides of the high watermark
	entries map[fakeKey]int64

	// Failures to inject, per method.
	topicErr, lookupErr, hwmErr, readErr error
	// baseShift is added to the base offsets ReadBatch returns, to hand over a batch
	// that does not hold the offset asked for.
	baseShift int64
	// reads counts ReadBatch calls that read data.
	reads int
}

func newFakeLog() *fakeLog {
	return &fakeLog{
		topics:  map[string]TopicInfo{},
		batches: map[fakeKey][]fakeBatch{},
		hwm:     map[fakeKey]int64{},
		entries: map[fakeKey]int64{},
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

func (f *fakeLog) Lookup(_ context.Context, id [16]byte, p int32, key []byte) (int64, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.lookupErr != nil {
		return 0, false, f.lookupErr
	}
	o, ok := f.entries[fakeKey{id, p, string(key)}]
	return o, ok, nil
}

func (f *fakeLog) HighWatermark(_ context.Context, id [16]byte, p int32) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.hwmErr != nil {
		return 0, f.hwmErr
	}
	return f.highWatermark(id, p), nil
}

func (f *fakeLog) ReadBatch(_ context.Context, id [16]byte, p int32, offset int64, allowRemote bool) (Batch, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.readErr != nil {
		return Batch{}, f.readErr
	}
	bs := f.batches[fakeKey{topic: id, partition: p}]
	i := sort.Search(len(bs), func(i int) bool { return bs[i].last >= offset })
	if i == len(bs) || bs[i].base > offset {
		return Batch{}, ErrOffsetOutOfRange
	}
	fb := bs[i]
	if fb.remote && !allowRemote {
		return Batch{Remote: true}, nil
	}
	f.reads++
	return Batch{Data: fb.data, BaseOffset: fb.base + f.baseShift, LogAppendTime: fb.logAppendTime, Remote: fb.remote}, nil
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
