package broker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/broker/fetchread"
	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/coordinator"
	"github.com/floe-io/floe/internal/testkit"
	"github.com/floe-io/floe/objectstore"
	"github.com/floe-io/floe/record"
)

// countingCoord wraps a coordinator: it counts the lookups Fetch makes,
// can play a coordinator that predates FindBatchesMulti (old) or fails it
// (multiErr), and hears no commit notices unless notices is set, so that
// the broker's tail cache stays cold and every lookup goes to it.
type countingCoord struct {
	coordapi.Coordinator
	old      bool
	multiErr error
	notices  bool
	multi    atomic.Int64 // FindBatchesMulti calls
	single   atomic.Int64 // FindBatches calls
	asked    atomic.Int64 // partitions asked in FindBatchesMulti calls
	mu       sync.Mutex
	last     []coordapi.FindBatchesRequest // of the last FindBatchesMulti
}

func (c *countingCoord) FindBatches(ctx context.Context, req coordapi.FindBatchesRequest) (coordapi.FindBatchesResponse, error) {
	c.single.Add(1)
	return c.Coordinator.FindBatches(ctx, req)
}

func (c *countingCoord) FindBatchesMulti(ctx context.Context, reqs []coordapi.FindBatchesRequest) ([]coordapi.FindBatchesResult, error) {
	c.multi.Add(1)
	c.asked.Add(int64(len(reqs)))
	c.mu.Lock()
	c.last = append(c.last[:0], reqs...)
	c.mu.Unlock()
	switch {
	case c.old:
		return nil, fmt.Errorf("coordinator find_batches_multi: no responders: %w", errors.ErrUnsupported)
	case c.multiErr != nil:
		return nil, c.multiErr
	}
	return c.Coordinator.FindBatchesMulti(ctx, reqs)
}

func (c *countingCoord) Subscribe(fn func([]coordapi.CommitNotice)) func() {
	if c.notices {
		return c.Coordinator.Subscribe(fn)
	}
	return func() {}
}

// newFetchBroker is newTestBroker with its logs in the test log.
func newFetchBroker(t *testing.T, deps Deps, mods ...func(*Options)) *Broker {
	t.Helper()
	return newTestBroker(t, deps, append([]func(*Options){func(o *Options) { o.Logger = testkit.Logger() }}, mods...)...)
}

// fetchFixture is a coordinator and a store holding topic "t" (6
// partitions) and "lat" (LogAppendTime, 1 partition), laid out so that a
// multi-partition fetch meets every case of the budget and of reading:
//
//	t/0, t/1  3 objects, each with 2 batches of each, interleaved
//	          (p0 p1 p0 p1: ranges not back to back), ≈ 1 KiB each
//	t/2       one 5 KiB batch, then 3 small ones
//	t/3       empty
//	t/4       20 batches of ≈ 100 bytes back to back in 2 objects (read
//	          as 2 ranges)
//	t/5       4 batches of ≈ 2 KiB in 4 objects shared with nobody
//	lat/0     2 batches: patched to LogAppendTime on the wire
type fetchFixture struct {
	c      *coordinator.Coordinator
	store  objectstore.Store
	t, lat coordapi.Topic
	// objects are the keys committed, in order.
	objects []string
}

func newFetchFixture(t *testing.T) *fetchFixture {
	t.Helper()
	f := &fetchFixture{c: newTestCoordinator(t), store: objectstore.NewMemory()}
	f.t = createTopic(t, f.c, "t", 6, nil)
	f.lat = createTopic(t, f.c, "lat", 1, map[string]string{"message.timestamp.type": "LogAppendTime"})
	type b struct {
		id        coordapi.TopicID
		partition int32
		records   int
		valueLen  int
	}
	t0, t1, t2, t4, t5 := b{f.t.ID, 0, 4, 250}, b{f.t.ID, 1, 2, 500}, b{f.t.ID, 2, 5, 1000}, b{f.t.ID, 4, 3, 25}, b{f.t.ID, 5, 2, 1000}
	small2 := b{f.t.ID, 2, 2, 100}
	objects := [][]b{
		{t0, t1, t0, t1, {f.lat.ID, 0, 3, 50}},
		{t0, t1, t2, t0, t1, t5},
		{t0, t1, t0, t1, small2, small2, small2, {f.lat.ID, 0, 1, 50}},
		{t4, t4, t4, t4, t4, t4, t4, t4, t4, t4, t5},
		{t4, t4, t4, t4, t4, t4, t4, t4, t4, t4, t5},
		{t5},
	}
	for oi, batches := range objects {
		key := fmt.Sprintf("wal/fixture-%d", oi)
		req := &coordapi.CommitRequest{ObjectKey: key, BrokerID: 1}
		var data []byte
		for bi, bb := range batches {
			recs := make([]record.Record, bb.records)
			for i := range recs {
				recs[i] = record.Record{OffsetDelta: int32(i), TimestampDelta: int64(i),
					Value: bytes.Repeat([]byte{byte('a' + (oi+bi+i)%26)}, bb.valueLen)}
			}
			batch, err := record.Build(record.BuildOptions{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1,
				BaseTimestamp: 1_700_000_000_000 + int64(oi*100+bi)}, recs)
			if err != nil {
				t.Fatal(err)
			}
			h, _ := record.ParseHeader(batch)
			req.Batches = append(req.Batches, coordapi.CommitBatch{TopicID: bb.id, Partition: bb.partition,
				ByteOffset: int64(len(data)), ByteLength: int32(len(batch)), LastOffsetDelta: h.LastOffsetDelta,
				MaxTimestamp: h.MaxTimestamp, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1})
			data = append(data, batch...)
		}
		req.ObjectSize = int64(len(data))
		if err := f.store.Put(t.Context(), key, data); err != nil {
			t.Fatal(err)
		}
		resp, err := f.c.CommitObject(t.Context(), req)
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range resp.Results {
			if r.ErrorCode != 0 {
				t.Fatalf("commit %s batch %d: %+v", key, i, r)
			}
		}
		f.objects = append(f.objects, key)
	}
	return f
}

// fetchPart is one partition a test fetches.
type fetchPart struct {
	topic     coordapi.Topic
	partition int32
	offset    int64
	maxBytes  int32
}

// partAnswer is what a Fetch answered for one partition.
type partAnswer struct {
	code                        int16
	hwm, lastStable, logStart   int64
	records                     []byte
	nullRecords                 bool
	batches                     int
	firstOffset, lastOffsetNext int64
}

func (a partAnswer) String() string {
	return fmt.Sprintf("code %d hwm %d lso %d log start %d, %d batches (%d bytes) [%d, %d)",
		a.code, a.hwm, a.lastStable, a.logStart, a.batches, len(a.records), a.firstOffset, a.lastOffsetNext)
}

// answerOf summarizes a response partition, counting its batches.
func answerOf(t *testing.T, sp *kmsg.FetchResponseTopicPartition) partAnswer {
	t.Helper()
	a := partAnswer{code: sp.ErrorCode, hwm: sp.HighWatermark, lastStable: sp.LastStableOffset, logStart: sp.LogStartOffset,
		records: sp.RecordBatches, nullRecords: sp.RecordBatches == nil, firstOffset: -1, lastOffsetNext: -1}
	for rest := sp.RecordBatches; len(rest) > 0; {
		h, err := record.ParseHeader(rest)
		if err != nil {
			t.Fatalf("partition %d: records do not parse: %v", sp.Partition, err)
		}
		if a.batches == 0 {
			a.firstOffset = h.BaseOffset
		}
		a.batches++
		a.lastOffsetNext = h.BaseOffset + int64(h.LastOffsetDelta) + 1
		rest = rest[12+int(h.BatchLength):]
	}
	return a
}

// fetchRequest builds a Fetch for parts at version v, budget bytes.
func fetchRequest(v int16, budget int32, parts []fetchPart) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.Version = v
	req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = -1, 0, 1, budget
	for _, p := range parts {
		if n := len(req.Topics); n == 0 || req.Topics[n-1].Topic != p.topic.Name {
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic, rt.TopicID = p.topic.Name, p.topic.ID
			req.Topics = append(req.Topics, rt)
		}
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = p.partition, p.offset, p.maxBytes, -1
		rt := &req.Topics[len(req.Topics)-1]
		rt.Partitions = append(rt.Partitions, rp)
	}
	return req
}

// brokerFetch answers parts through b.fetchOnce, in request order.
func brokerFetch(t *testing.T, b *Broker, budget int32, rotate int, parts []fetchPart) ([]partAnswer, bool) {
	t.Helper()
	resp, n, _, stop := b.fetchOnce(t.Context(), &request{key: int16(kmsg.Fetch)}, fetchRequest(13, budget, parts), rotate, false)
	var out []partAnswer
	total := 0
	for ti := range resp.Topics {
		for pi := range resp.Topics[ti].Partitions {
			a := answerOf(t, &resp.Topics[ti].Partitions[pi])
			total += len(a.records)
			out = append(out, a)
		}
	}
	if n != total {
		t.Fatalf("fetchOnce counts %d bytes, the records hold %d", n, total)
	}
	if len(out) != len(parts) {
		t.Fatalf("%d partitions answered, %d asked", len(out), len(parts))
	}
	return out, stop
}

// sequentialFetch is the oracle: Fetch as floe answered it before reads
// went concurrent, one partition after another in fill order, each asked
// for what the budget has left and read whole before the next.
func sequentialFetch(t *testing.T, c coordapi.Coordinator, store objectstore.Store, budget int32, rotate int, parts []fetchPart) []partAnswer {
	t.Helper()
	ctx := t.Context()
	out := make([]partAnswer, len(parts))
	total := 0
	for i := range parts {
		k := (i + rotate) % len(parts)
		p := parts[k]
		sp := kmsg.NewFetchResponseTopicPartition()
		sp.Partition = p.partition
		sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = -1, -1, -1
		sp.RecordBatches = []byte{}
		setState := func(st coordapi.PartitionState) {
			sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = st.HighWatermark, st.HighWatermark, st.LogStartOffset
		}
		limit := min(int(p.maxBytes), int(budget)-total)
		if total == 0 {
			limit = max(limit, 1)
		}
		if limit <= 0 {
			st, err := c.PartitionState(ctx, p.topic.ID, p.partition)
			if err != nil {
				t.Fatal(err)
			}
			setState(st)
			out[k] = answerOf(t, &sp)
			continue
		}
		found, err := c.FindBatches(ctx, coordapi.FindBatchesRequest{TopicID: p.topic.ID, Partition: p.partition, Offset: p.offset, MaxBytes: int32(limit)})
		if err != nil {
			sp.ErrorCode = coordapi.ErrorCode(err)
			if errors.Is(err, kerr.OffsetOutOfRange) {
				st, _ := c.PartitionState(ctx, p.topic.ID, p.partition)
				setState(st)
			}
			out[k] = answerOf(t, &sp)
			continue
		}
		setState(found.PartitionState)
		for _, bc := range found.Batches {
			data, err := store.GetRange(ctx, bc.ObjectKey, bc.ByteOffset, int64(bc.ByteLength))
			if err != nil {
				t.Fatal(err)
			}
			batch := append([]byte(nil), data...)
			record.SetBaseOffset(batch, bc.BaseOffset)
			record.SetPartitionLeaderEpoch(batch, leaderEpoch)
			if bc.LogAppendTime {
				record.SetLogAppendTime(batch, bc.MaxTimestamp)
			}
			sp.RecordBatches = append(sp.RecordBatches, batch...)
		}
		total += len(sp.RecordBatches)
		out[k] = answerOf(t, &sp)
	}
	return out
}

// fetchModes are the ways a broker may gather a Fetch's coordinates and
// bytes; all must answer alike.
var fetchModes = []struct {
	name        string
	coord       func(c coordapi.Coordinator) *countingCoord
	concurrency int
}{
	{"batched lookup, concurrent reads", func(c coordapi.Coordinator) *countingCoord { return &countingCoord{Coordinator: c} }, 0},
	{"batched lookup, one read at a time", func(c coordapi.Coordinator) *countingCoord { return &countingCoord{Coordinator: c} }, 1},
	{"old coordinator", func(c coordapi.Coordinator) *countingCoord { return &countingCoord{Coordinator: c, old: true} }, 0},
	{"tail cache", func(c coordapi.Coordinator) *countingCoord { return &countingCoord{Coordinator: c, notices: true} }, 0},
}

// fixtureParts is a fetch of every partition of the fixture but the empty
// one's neighbours in order: mid-batch offsets, an empty partition, two
// topics.
func (f *fetchFixture) parts(maxBytes int32) []fetchPart {
	return []fetchPart{
		{f.t, 0, 0, maxBytes},
		{f.t, 1, 3, maxBytes}, // inside the second batch
		{f.t, 2, 0, maxBytes},
		{f.t, 3, 0, maxBytes}, // empty
		{f.t, 4, 7, maxBytes},
		{f.lat, 0, 0, maxBytes},
		{f.t, 5, 2, maxBytes},
	}
}

// TestFetchMatchesSequential: over budgets, partition max bytes and fill
// rotations, a multi-partition Fetch answers exactly what the sequential
// fill answers (the same batches, bytes, offsets), however it gathers the
// coordinates and reads the bytes.
func TestFetchMatchesSequential(t *testing.T) {
	f := newFetchFixture(t)
	for _, mode := range fetchModes {
		t.Run(mode.name, func(t *testing.T) {
			coord := mode.coord(f.c)
			b := newFetchBroker(t, Deps{Coordinator: coord, Reader: storeReader{f.store}},
				func(o *Options) { o.FetchConcurrency = mode.concurrency })
			if coord.notices {
				// Fill the tail cache: the fixture committed before the
				// broker subscribed.
				f.replayNotices(t, b)
			}
			for _, budget := range []int32{1, 600, 3000, 9000, 1 << 20} {
				for _, maxBytes := range []int32{1, 1500, 1 << 20} {
					for _, rotate := range []int{0, 1, 3, 6} {
						parts := f.parts(maxBytes)
						want := sequentialFetch(t, f.c, f.store, budget, rotate, parts)
						got, stop := brokerFetch(t, b, budget, rotate, parts)
						if stop {
							t.Errorf("budget %d max bytes %d rotate %d: stop without an error", budget, maxBytes, rotate)
						}
						for i := range parts {
							if got[i].String() != want[i].String() || !bytes.Equal(got[i].records, want[i].records) || got[i].nullRecords {
								t.Errorf("budget %d max bytes %d rotate %d, partition %s/%d:\n got %s\nwant %s",
									budget, maxBytes, rotate, parts[i].topic.Name, parts[i].partition, got[i], want[i])
							}
						}
					}
				}
			}
			switch {
			case coord.notices:
				// Only the empty partition may miss (its high watermark
				// unverified): never a batched lookup.
				if n := coord.multi.Load(); n != 0 {
					t.Errorf("%d batched lookups with the partitions in the tail cache", n)
				}
			case coord.old:
				if coord.multi.Load() != 1 {
					t.Errorf("%d batched lookups tried against an old coordinator, want 1 (then per partition)", coord.multi.Load())
				}
			default:
				if coord.single.Load() != 0 {
					t.Errorf("%d single lookups, want only batched ones", coord.single.Load())
				}
			}
		})
	}
}

// replayNotices feeds b's tail cache what the fixture's commits notified
// before b subscribed, as a broker running all along would have heard.
func (f *fetchFixture) replayNotices(t *testing.T, b *Broker) {
	t.Helper()
	for _, tp := range []struct {
		topic      coordapi.Topic
		partitions int32
	}{{f.t, 6}, {f.lat, 1}} {
		for p := range tp.partitions {
			found, err := f.c.FindBatches(t.Context(), coordapi.FindBatchesRequest{TopicID: tp.topic.ID, Partition: p, MaxBytes: 1 << 30})
			if err != nil {
				t.Fatal(err)
			}
			b.reads.Notify([]coordapi.CommitNotice{{TopicID: tp.topic.ID, Partition: p, HighWatermark: found.HighWatermark,
				LogStartOffset: found.LogStartOffset, LastStableOffset: found.LastStableOffset, Batches: found.Batches}})
		}
	}
}

// TestFetchBudget: how the response's and each partition's byte limits
// share out the batches, in fill order: the first partition with data
// gets its first batch whole whatever the limits, later ones what the
// budget has left (their first batch whole while some is left), none once
// it is spent; the answer keeps request order.
func TestFetchBudget(t *testing.T) {
	f := newFetchFixture(t)
	b := newFetchBroker(t, Deps{Coordinator: &countingCoord{Coordinator: f.c}, Reader: storeReader{f.store}})
	// Batch sizes of the fixture, to set limits by.
	size := func(p int32, i int) int32 {
		found, err := f.c.FindBatches(t.Context(), coordapi.FindBatchesRequest{TopicID: f.t.ID, Partition: p, MaxBytes: 1 << 30})
		if err != nil {
			t.Fatal(err)
		}
		return found.Batches[i].ByteLength
	}
	p0, p1, p2 := size(0, 0), size(1, 0), size(2, 0)
	parts := func(maxBytes int32) []fetchPart {
		return []fetchPart{{f.t, 3, 0, maxBytes}, {f.t, 0, 0, maxBytes}, {f.t, 1, 0, maxBytes}, {f.t, 2, 0, maxBytes}}
	}
	tests := []struct {
		name     string
		budget   int32
		maxBytes int32
		rotate   int
		batches  []int // per partition, request order: t/3 (empty), t/0, t/1, t/2
	}{
		{"one byte: the first partition with data, one batch", 1, 1 << 20, 0, []int{0, 1, 0, 0}},
		{"one byte, rotated past t/0", 1, 1 << 20, 2, []int{0, 0, 1, 0}},
		{"rotated to the last: it is first", 1, 1 << 20, 3, []int{0, 0, 0, 1}},
		{"partition max below every batch", 1 << 20, 1, 0, []int{0, 1, 1, 1}},
		{"two of t/0 then one of t/1", 2*p0 + 1, 1 << 20, 0, []int{0, 2, 1, 0}},
		{"t/0 whole, t/1 one batch, then spent", 6*p0 + 1, 1 << 20, 0, []int{0, 6, 1, 0}},
		{"exactly t/0 and t/1: nothing for t/2", 6*p0 + 6*p1, 1 << 20, 0, []int{0, 6, 6, 0}},
		{"t/2's big batch past the budget left", 6*p0 + 6*p1 + 1, 1 << 20, 0, []int{0, 6, 6, 1}},
		{"per-partition limit of two batches", 1 << 20, 2 * p0, 0, []int{0, 2, 2, 1}},
		{"everything", 1 << 20, 1 << 20, 0, []int{0, 6, 6, 4}},
		{"t/2 first: its big batch, one of the next, then spent", p2 + 1, 1 << 20, 3, []int{0, 1, 0, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _ := brokerFetch(t, b, tt.budget, tt.rotate, parts(tt.maxBytes))
			want := sequentialFetch(t, f.c, f.store, tt.budget, tt.rotate, parts(tt.maxBytes))
			for i, a := range got {
				if a.batches != tt.batches[i] {
					t.Errorf("partition %d: %d batches, want %d", i, a.batches, tt.batches[i])
				}
				if a.String() != want[i].String() {
					t.Errorf("partition %d: got %s, the sequential fill %s", i, a, want[i])
				}
			}
		})
	}
}

// failingReader fails reads of the keys in fail.
type failingReader struct {
	RangeReader
	fail map[string]bool
}

func (r failingReader) GetRange(ctx context.Context, key string, size, offset, length int64) ([]byte, error) {
	if r.fail[key] {
		return nil, fmt.Errorf("injected failure reading %s", key)
	}
	return r.RangeReader.GetRange(ctx, key, size, offset, length)
}

// TestFetchErrorsPerPartition: a partition's failure is its own error
// code; the others are answered; and the fetch answers at once.
func TestFetchErrorsPerPartition(t *testing.T) {
	f := newFetchFixture(t)
	reader := failingReader{RangeReader: storeReader{f.store}, fail: map[string]bool{f.objects[3]: true}}
	parts := []fetchPart{
		{f.t, 0, 0, 1 << 20},
		{f.t, 1, 99, 1 << 20}, // past the log end
		{f.t, 4, 0, 1 << 20},  // its first object fails to read
		{f.t, 5, 0, 1 << 20},  // its second object fails: the first batch is answered
		{f.t, 9, 0, 1 << 20},  // no such partition
		{f.t, 2, 0, 1 << 20},
	}
	type want struct {
		code    int16
		hwm     int64
		batches int
	}
	wants := []want{{0, 24, 6}, {kerr.OffsetOutOfRange.Code, 12, 0},
		{kerr.KafkaStorageError.Code, 60, 0}, // offsets are known, the bytes are not
		{0, 8, 1}, {kerr.UnknownTopicOrPartition.Code, -1, 0}, {0, 11, 4}}
	check := func(t *testing.T, b *Broker, budget int32, wants []want) {
		t.Helper()
		got, stop := brokerFetch(t, b, budget, 0, parts)
		if !stop {
			t.Error("no stop with errors in the response")
		}
		for i, w := range wants {
			if got[i].code != w.code || got[i].hwm != w.hwm || got[i].batches != w.batches || got[i].nullRecords {
				t.Errorf("partition %d: %s (null %v), want code %d hwm %d, %d batches", i, got[i], got[i].nullRecords, w.code, w.hwm, w.batches)
			}
		}
	}
	t.Run("read failures", func(t *testing.T) {
		b := newFetchBroker(t, Deps{Coordinator: &countingCoord{Coordinator: f.c}, Reader: reader})
		check(t, b, 1<<20, wants)
	})
	t.Run("out of range past the budget", func(t *testing.T) {
		// Kafka checks every partition's offset, the budget spent or not.
		b := newFetchBroker(t, Deps{Coordinator: &countingCoord{Coordinator: f.c}, Reader: reader})
		got, stop := brokerFetch(t, b, 1, 0, parts[:2])
		if !stop || got[0].batches != 1 || got[1].code != kerr.OffsetOutOfRange.Code || got[1].hwm != 12 || got[1].logStart != 0 {
			t.Errorf("stop %v, answers %v", stop, got)
		}
	})
	t.Run("lookup fails", func(t *testing.T) {
		coord := &countingCoord{Coordinator: f.c, multiErr: fmt.Errorf("coordinator find_batches_multi: %w", kerr.KafkaStorageError)}
		b := newFetchBroker(t, Deps{Coordinator: coord, Reader: reader})
		failed := make([]want, len(wants))
		for i := range failed {
			failed[i] = want{kerr.KafkaStorageError.Code, -1, 0}
		}
		failed[4] = wants[4] // resolved before any lookup
		check(t, b, 1<<20, failed)
		// A single partition is asked with FindBatches.
		got, _ := brokerFetch(t, b, 1<<20, 0, parts[:1])
		if got[0].code != 0 || got[0].batches != 6 {
			t.Errorf("one partition: %s", got[0])
		}
	})
}

// TestFetchOldCoordinator: against a coordinator that predates
// FindBatchesMulti, Fetch asks per partition and answers the same; it
// does not try the batched call again for a while, then does (the
// coordinator may have been upgraded).
func TestFetchOldCoordinator(t *testing.T) {
	f := newFetchFixture(t)
	coord := &countingCoord{Coordinator: f.c, old: true}
	b := newFetchBroker(t, Deps{Coordinator: coord, Reader: storeReader{f.store}})
	now := time.Now()
	b.reads = fetchread.New(coord, storeReader{f.store}, &b.bufs, fetchread.Options{
		Concurrency: b.opts.FetchConcurrency, Logger: b.log, Now: func() time.Time { return now }})
	parts := f.parts(1 << 20)
	want := sequentialFetch(t, f.c, f.store, 1<<20, 0, parts)
	for range 3 {
		got, _ := brokerFetch(t, b, 1<<20, 0, parts)
		for i := range parts {
			if got[i].String() != want[i].String() || !bytes.Equal(got[i].records, want[i].records) {
				t.Errorf("partition %d: got %s, want %s", i, got[i], want[i])
			}
		}
	}
	if m, s := coord.multi.Load(), coord.single.Load(); m != 1 || s != 3*int64(len(parts)) {
		t.Errorf("%d batched and %d single lookups, want 1 and %d", m, s, 3*len(parts))
	}
	// The coordinator is upgraded; past the retry delay the batched call
	// is tried again, and used.
	coord.old = false
	now = now.Add(time.Minute)
	brokerFetch(t, b, 1<<20, 0, parts)
	brokerFetch(t, b, 1<<20, 0, parts)
	if m, s := coord.multi.Load(), coord.single.Load(); m != 3 || s != 3*int64(len(parts)) {
		t.Errorf("after the upgrade: %d batched and %d single lookups, want 3 and %d", m, s, 3*len(parts))
	}
}

// gatedReader holds every read until want reads are in flight at once (or
// a deadline passes, failing the test), recording the most seen.
type gatedReader struct {
	RangeReader
	want     int
	mu       sync.Mutex
	inflight int
	most     int
	opened   bool
	all      chan struct{}
}

func (r *gatedReader) GetRange(ctx context.Context, key string, size, offset, length int64) ([]byte, error) {
	r.mu.Lock()
	r.inflight++
	r.most = max(r.most, r.inflight)
	if r.inflight == r.want && !r.opened {
		r.opened = true
		close(r.all)
	}
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.inflight--
		r.mu.Unlock()
	}()
	select {
	case <-r.all:
	case <-time.After(10 * time.Second):
		return nil, errors.New("gated reader: the reads never ran concurrently")
	}
	return r.RangeReader.GetRange(ctx, key, size, offset, length)
}

// TestFetchReadsConcurrently: a cold fetch of many partitions asks the
// coordinator once and has its byte ranges in flight together, no more
// than FetchConcurrency at once.
func TestFetchReadsConcurrently(t *testing.T) {
	f := newFetchFixture(t)
	coord := &countingCoord{Coordinator: f.c}
	reader := &gatedReader{RangeReader: storeReader{f.store}, want: 4, all: make(chan struct{})}
	b := newFetchBroker(t, Deps{Coordinator: coord, Reader: reader}, func(o *Options) { o.FetchConcurrency = 4 })
	parts := f.parts(1 << 20)
	got, stop := brokerFetch(t, b, 1<<20, 0, parts)
	if stop {
		t.Fatalf("stop: %v", got)
	}
	if m, s, asked := coord.multi.Load(), coord.single.Load(), coord.asked.Load(); m != 1 || s != 0 || asked != int64(len(parts)) {
		t.Errorf("%d batched lookups of %d partitions and %d single ones, want one of %d", m, asked, s, len(parts))
	}
	if reader.most != 4 {
		t.Errorf("at most %d reads in flight, want FetchConcurrency (4)", reader.most)
	}
	want := sequentialFetch(t, f.c, f.store, 1<<20, 0, parts)
	for i := range parts {
		if !bytes.Equal(got[i].records, want[i].records) {
			t.Errorf("partition %d: got %s, want %s", i, got[i], want[i])
		}
	}
}

// TestFetchAsksFairly: a fetch asks the coordinator for each partition's
// coordinates up to what the budget could give it, but for partitions
// other than the first in fill order no more than fairAsk, so that large
// partition limits over many partitions do not list many budgets' worth of
// batches.
func TestFetchAsksFairly(t *testing.T) {
	f := newFetchFixture(t)
	coord := &countingCoord{Coordinator: f.c}
	b := newFetchBroker(t, Deps{Coordinator: coord, Reader: storeReader{f.store}})
	tests := []struct {
		budget, maxBytes int32
		rotate           int
	}{
		{budget: 4 << 20, maxBytes: 4 << 20, rotate: 0},  // fair share 8/7 MiB
		{budget: 4 << 20, maxBytes: 4 << 20, rotate: 2},  // the first is another
		{budget: 50 << 20, maxBytes: 1 << 20, rotate: 0}, // Kafka's defaults: no cap
		{budget: 600, maxBytes: 1 << 20, rotate: 1},      // the budget bounds every ask
		{budget: 1 << 30, maxBytes: 1 << 30, rotate: 0},  // a fair share above the floor
	}
	for _, tt := range tests {
		parts := f.parts(tt.maxBytes)
		brokerFetch(t, b, tt.budget, tt.rotate, parts)
		coord.mu.Lock()
		asked := slices.Clone(coord.last)
		coord.mu.Unlock()
		if len(asked) != len(parts) {
			t.Fatalf("budget %d: %d partitions asked, want %d", tt.budget, len(asked), len(parts))
		}
		fair := max(2*int(tt.budget)/len(parts), 1<<20) // at least 1 MiB
		for i, r := range asked {
			want := min(int(tt.maxBytes), int(tt.budget))
			if i > 0 {
				want = min(want, fair)
			}
			first := parts[tt.rotate]
			if i == 0 && (r.TopicID != first.topic.ID || r.Partition != first.partition) {
				t.Errorf("budget %d rotate %d: asked %s/%d first, want %s/%d", tt.budget, tt.rotate, r.TopicID, r.Partition, first.topic.Name, first.partition)
			}
			if int(r.MaxBytes) != want {
				t.Errorf("budget %d max bytes %d, ask %d: %d bytes, want %d", tt.budget, tt.maxBytes, i, r.MaxBytes, want)
			}
		}
	}
}
