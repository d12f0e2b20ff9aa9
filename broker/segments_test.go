package broker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/coordinator"
	"github.com/floe-io/floe/internal/testkit"
	"github.com/floe-io/floe/kvindex"
	"github.com/floe-io/floe/objectstore"
	"github.com/floe-io/floe/record"
	"github.com/floe-io/floe/tiered"
)

// tieringCoord plays a coordinator that has consolidated the start of some
// partitions into tiered segments, as the real one will once it writes
// them: below a partition's boundary (its segment's last offset + 1),
// FindBatches, FindBatchesMulti and KvGet answer one segment coordinate
// alone, and ListOffset by timestamp answers the segment's base offset (or
// the log start) with its max timestamp. Everything else, and every error,
// is the real coordinator's.
type tieringCoord struct {
	coordapi.Coordinator
	mu   sync.Mutex
	segs map[topicPartition]coordapi.BatchCoord
}

// segment returns the segment holding offset of the partition, if any.
func (c *tieringCoord) segment(id coordapi.TopicID, partition int32, offset int64) (coordapi.BatchCoord, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	seg, ok := c.segs[topicPartition{id, partition}]
	return seg, ok && offset <= seg.LastOffset
}

func (c *tieringCoord) FindBatches(ctx context.Context, req coordapi.FindBatchesRequest) (coordapi.FindBatchesResponse, error) {
	found, err := c.Coordinator.FindBatches(ctx, req)
	if seg, ok := c.segment(req.TopicID, req.Partition, req.Offset); ok && err == nil {
		found.Batches = []coordapi.BatchCoord{seg}
	}
	return found, err
}

func (c *tieringCoord) FindBatchesMulti(ctx context.Context, reqs []coordapi.FindBatchesRequest) ([]coordapi.FindBatchesResult, error) {
	results, err := c.Coordinator.FindBatchesMulti(ctx, reqs)
	if err != nil {
		return nil, err
	}
	for i, req := range reqs {
		if seg, ok := c.segment(req.TopicID, req.Partition, req.Offset); ok && results[i].ErrorCode == 0 {
			results[i].Batches = []coordapi.BatchCoord{seg}
		}
	}
	return results, nil
}

func (c *tieringCoord) KvGet(ctx context.Context, req coordapi.KvGetRequest) (coordapi.KvGetResult, error) {
	r, err := c.Coordinator.KvGet(ctx, req)
	if seg, ok := c.segment(req.TopicID, req.Partition, r.Offset); ok && err == nil && r.HasBatch() {
		r.Batch = seg
	}
	return r, err
}

// ListOffset answers a timestamp search as the coordinator does over a
// segment row: the segment, when it holds an offset at or after the log
// start and its max timestamp reaches the target (even if only a batch
// below the log start does), else the rows after it.
func (c *tieringCoord) ListOffset(ctx context.Context, id coordapi.TopicID, partition int32, timestamp int64) (int64, int64, error) {
	offset, ts, err := c.Coordinator.ListOffset(ctx, id, partition, timestamp)
	if err != nil || timestamp < 0 {
		return offset, ts, err
	}
	st, err := c.Coordinator.PartitionState(ctx, id, partition)
	if err != nil {
		return 0, 0, err
	}
	c.mu.Lock()
	seg, ok := c.segs[topicPartition{id, partition}]
	c.mu.Unlock()
	if ok && seg.LastOffset >= st.LogStartOffset && seg.MaxTimestamp >= timestamp {
		return max(seg.BaseOffset, st.LogStartOffset), seg.MaxTimestamp, nil
	}
	return offset, ts, nil
}

// tier writes the partition's batches below boundary (from its log start)
// into one segment object in store, with tiered.Writer, and makes c answer
// it for offsets below boundary. boundary must be a batch boundary.
func (c *tieringCoord) tier(t *testing.T, store objectstore.Store, id coordapi.TopicID, partition int32, boundary int64) coordapi.BatchCoord {
	t.Helper()
	ctx := t.Context()
	st, err := c.Coordinator.PartitionState(ctx, id, partition)
	if err != nil {
		t.Fatal(err)
	}
	found, err := c.Coordinator.FindBatches(ctx, coordapi.FindBatchesRequest{TopicID: id, Partition: partition, Offset: st.LogStartOffset, MaxBytes: math.MaxInt32})
	if err != nil {
		t.Fatal(err)
	}
	var w *tiered.Writer
	for _, bc := range found.Batches {
		if bc.LastOffset >= boundary {
			if bc.BaseOffset < boundary {
				t.Fatalf("boundary %d inside batch %d-%d", boundary, bc.BaseOffset, bc.LastOffset)
			}
			break
		}
		data, err := store.GetRange(ctx, bc.ObjectKey, bc.ByteOffset, int64(bc.ByteLength))
		if err != nil {
			t.Fatal(err)
		}
		batch := bytes.Clone(data)
		if bc.LogAppendTime {
			record.SetLogAppendTime(batch, bc.MaxTimestamp) // as consolidation stamps it
		}
		if w == nil {
			// A small index interval, so that lookups start mid-segment.
			if w, err = tiered.NewWriter(bc.BaseOffset, tiered.Options{IndexIntervalBytes: 700}); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Append(batch, bc.BaseOffset, leaderEpoch); err != nil {
			t.Fatal(err)
		}
	}
	obj, info, err := w.Finish()
	if err != nil {
		t.Fatal(err)
	}
	key := coordapi.SegmentKey("", id, partition, info.BaseOffset, "test")
	if err := store.Put(ctx, key, obj); err != nil {
		t.Fatal(err)
	}
	seg := coordapi.BatchCoord{ObjectKey: key, ObjectSize: info.Size, ByteLength: int32(info.DataLength),
		BaseOffset: info.BaseOffset, LastOffset: info.LastOffset, MaxTimestamp: info.MaxTimestamp, Segment: true}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.segs == nil {
		c.segs = make(map[topicPartition]coordapi.BatchCoord)
	}
	c.segs[topicPartition{id, partition}] = seg
	return seg
}

// readLog is a RangeReader over a store that records every read.
type readLog struct {
	s     objectstore.Store
	mu    sync.Mutex
	reads []rangeRecord
}

type rangeRecord struct {
	key            string
	offset, length int64
}

func (r *readLog) GetRange(ctx context.Context, key string, _, offset, length int64) ([]byte, error) {
	r.mu.Lock()
	r.reads = append(r.reads, rangeRecord{key, offset, length})
	r.mu.Unlock()
	return r.s.GetRange(ctx, key, offset, length)
}

// take returns the reads since the last take.
func (r *readLog) take() []rangeRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.reads
	r.reads = nil
	return out
}

// keys returns the distinct keys of reads.
func keys(reads []rangeRecord) map[string]int {
	out := make(map[string]int)
	for _, r := range reads {
		out[r.key]++
	}
	return out
}

// indexLoads counts the reads of segment seg's indexes among reads.
func indexLoads(reads []rangeRecord, seg coordapi.BatchCoord) int {
	n := 0
	for _, r := range reads {
		if r.key == seg.ObjectKey && r.offset+r.length > int64(seg.ByteLength) {
			n++
		}
	}
	return n
}

// cutRecords returns the batches of records (whole, back to back) that
// start below boundary.
func cutRecords(t *testing.T, records []byte, boundary int64) []byte {
	t.Helper()
	at := 0
	for at < len(records) {
		h, err := record.ParseHeader(records[at:])
		if err != nil {
			t.Fatal(err)
		}
		if h.BaseOffset >= boundary {
			break
		}
		at += h.Size()
	}
	return records[:at]
}

// tierFixture tiers the fetch fixture's partitions that have data, each at
// about its middle batch (the whole of a partition of one batch).
func tierFixture(t *testing.T, f *fetchFixture, c *tieringCoord) map[topicPartition]coordapi.BatchCoord {
	t.Helper()
	segs := make(map[topicPartition]coordapi.BatchCoord)
	for _, tp := range []struct {
		topic     coordapi.Topic
		partition int32
	}{{f.t, 0}, {f.t, 1}, {f.t, 2}, {f.t, 4}, {f.t, 5}, {f.lat, 0}} {
		found, err := f.c.FindBatches(t.Context(), coordapi.FindBatchesRequest{TopicID: tp.topic.ID, Partition: tp.partition, MaxBytes: math.MaxInt32})
		if err != nil {
			t.Fatal(err)
		}
		boundary := found.HighWatermark
		if n := len(found.Batches); n > 1 {
			boundary = found.Batches[n/2].BaseOffset
		}
		segs[topicPartition{tp.topic.ID, tp.partition}] = c.tier(t, f.store, tp.topic.ID, tp.partition, boundary)
	}
	return segs
}

// TestFetchSegments: a Fetch at any offset of a partition's tiered part
// answers the batches of the segment, byte for byte those of the WAL
// (offsets, leader epoch and LogAppendTime stamped), up to the segment's
// end; past it, the WAL's. A fetch of many partitions reads the segments'
// batches only, each segment's index once, however the broker gathers
// coordinates.
func TestFetchSegments(t *testing.T) {
	f := newFetchFixture(t)
	tc := &tieringCoord{Coordinator: f.c}
	segs := tierFixture(t, f, tc)
	for _, mode := range fetchModes {
		if mode.name == "tail cache" {
			continue // the tail cache answers WAL batches, never segments
		}
		t.Run(mode.name, func(t *testing.T) {
			coord := mode.coord(tc)
			reads := &readLog{s: f.store}
			b := newFetchBroker(t, Deps{Coordinator: coord, Reader: reads},
				func(o *Options) { o.FetchConcurrency = mode.concurrency })
			const budget = 1 << 20
			for _, p := range f.parts(0) {
				seg := segs[topicPartition{p.topic.ID, p.partition}]
				st, err := f.c.PartitionState(t.Context(), p.topic.ID, p.partition)
				if err != nil {
					t.Fatal(err)
				}
				for off := int64(0); off < st.HighWatermark; off++ {
					for _, maxBytes := range []int32{1, 1500, 1 << 20} {
						parts := []fetchPart{{p.topic, p.partition, off, maxBytes}}
						want := sequentialFetch(t, f.c, f.store, budget, 0, parts)[0]
						if seg.Segment && off <= seg.LastOffset {
							// A segment is answered alone: up to its end.
							sp := kmsg.NewFetchResponseTopicPartition()
							sp.Partition, sp.ErrorCode, sp.RecordBatches = p.partition, want.code, cutRecords(t, want.records, seg.LastOffset+1)
							sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = want.hwm, want.lastStable, want.logStart
							want = answerOf(t, &sp)
						}
						reads.take()
						got, stop := brokerFetch(t, b, budget, 0, parts)
						if stop || got[0].String() != want.String() || !bytes.Equal(got[0].records, want.records) {
							t.Fatalf("%s/%d at %d, max bytes %d (segment to %d):\n got %s\nwant %s",
								p.topic.Name, p.partition, off, maxBytes, seg.LastOffset, got[0], want)
						}
						if seg.Segment && off <= seg.LastOffset {
							if ks := keys(reads.take()); len(ks) != 1 || ks[seg.ObjectKey] == 0 {
								t.Fatalf("%s/%d at %d: read %v, want the segment %s only", p.topic.Name, p.partition, off, ks, seg.ObjectKey)
							}
						}
					}
				}
			}

			// Every partition at once, all in their segments: a fresh broker
			// loads each segment's index once.
			reads = &readLog{s: f.store}
			b = newFetchBroker(t, Deps{Coordinator: coord, Reader: reads},
				func(o *Options) { o.FetchConcurrency = mode.concurrency })
			parts := f.parts(1 << 20)
			for i := range parts {
				parts[i].offset = 0
			}
			for round := range 2 {
				got, stop := brokerFetch(t, b, 10<<20, 0, parts)
				if stop {
					t.Fatal("stop without an error")
				}
				for i, p := range parts {
					seg, ok := segs[topicPartition{p.topic.ID, p.partition}]
					want := sequentialFetch(t, f.c, f.store, 10<<20, 0, parts[i:i+1])[0]
					if ok {
						want.records = cutRecords(t, want.records, seg.LastOffset+1)
					}
					if !bytes.Equal(got[i].records, want.records) || got[i].code != 0 || got[i].hwm != want.hwm {
						t.Errorf("round %d, %s/%d: got %s, want %d bytes of records", round, p.topic.Name, p.partition, got[i], len(want.records))
					}
				}
				all := reads.take()
				for key := range keys(all) {
					if !strings.HasPrefix(key, coordapi.TieredPrefix("")) {
						t.Errorf("round %d read %s, not a segment", round, key)
					}
				}
				for _, seg := range segs {
					if n, want := indexLoads(all, seg), 1-round; n != want {
						t.Errorf("round %d: segment %s's index read %d times, want %d", round, seg.ObjectKey, n, want)
					}
				}
			}
		})
	}
}

// TestFetchSegmentFailures: a segment that cannot be read (gone from the
// store, corrupt, not readable) fails its partition with
// KAFKA_STORAGE_ERROR; the other partitions are answered.
func TestFetchSegmentFailures(t *testing.T) {
	f := newFetchFixture(t)
	tc := &tieringCoord{Coordinator: f.c}
	segs := tierFixture(t, f, tc)
	ctx := t.Context()
	gone, corrupt, failing := segs[topicPartition{f.t.ID, 0}], segs[topicPartition{f.t.ID, 1}], segs[topicPartition{f.t.ID, 2}]
	if err := f.store.Delete(ctx, gone.ObjectKey); err != nil {
		t.Fatal(err)
	}
	obj, err := f.store.GetRange(ctx, corrupt.ObjectKey, 0, corrupt.ObjectSize)
	if err != nil {
		t.Fatal(err)
	}
	obj = bytes.Clone(obj)
	obj[16] = 1 // the first batch's magic
	if err := f.store.Put(ctx, corrupt.ObjectKey, obj); err != nil {
		t.Fatal(err)
	}
	reader := failingReader{RangeReader: storeReader{f.store}, fail: map[string]bool{failing.ObjectKey: true}}
	b := newFetchBroker(t, Deps{Coordinator: &countingCoord{Coordinator: tc}, Reader: reader})
	parts := []fetchPart{{f.t, 0, 0, 1 << 20}, {f.t, 1, 1, 1 << 20}, {f.t, 2, 0, 1 << 20}, {f.t, 4, 0, 1 << 20}}
	got, stop := brokerFetch(t, b, 10<<20, 0, parts)
	if !stop {
		t.Error("failed partitions, and no stop")
	}
	for i, want := range []int16{kerr.KafkaStorageError.Code, kerr.KafkaStorageError.Code, kerr.KafkaStorageError.Code, 0} {
		if got[i].code != want || (want != 0) != (got[i].batches == 0) {
			t.Errorf("partition %d: %s, want code %d", parts[i].partition, got[i], want)
		}
	}
	// Past the segments, the WAL answers.
	got, _ = brokerFetch(t, b, 10<<20, 0, []fetchPart{{f.t, 0, gone.LastOffset + 1, 1 << 20}})
	if got[0].code != 0 || got[0].firstOffset != gone.LastOffset+1 {
		t.Errorf("past the segment: %s", got[0])
	}
}

// TestListOffsetsInSegment: ListOffsets by timestamp, and of the max
// timestamp, answer the exact record inside a tiered segment, as they do
// over the WAL: the same answers as a broker reading the WAL, before and
// after the log start moves into the segment, for CreateTime and
// LogAppendTime topics. A lookup answered in the segment reads the segment
// only.
func TestListOffsetsInSegment(t *testing.T) {
	// A clock a second further on every reading: every commit of the
	// LogAppendTime topic gets its own append time.
	var clock atomic.Int64
	c := newTestCoordinator(t, func(o *coordinator.Options) {
		o.Now = func() time.Time { return time.UnixMilli(1_700_000_000_000 + 1000*clock.Add(1)) }
	})
	store := objectstore.NewMemory()
	ct := createTopic(t, c, "t", 1, nil)
	lat := createTopic(t, c, "lat", 1, map[string]string{"message.timestamp.type": "LogAppendTime"})
	// Offsets 0-2, 3-4, 5-9, 10-12 (the max timestamp mid-batch), 13 in
	// the segment; 14-15 in the WAL.
	commitBatches(t, c, store, ct.ID, 0, timestamps(3, 100), timestamps(2, 300), []int64{110, 120, 150, 180, 200})
	commitBatches(t, c, store, ct.ID, 0, []int64{90, 600, 250}, []int64{500})
	commitBatches(t, c, store, ct.ID, 0, []int64{450, 460})
	for range 3 {
		commitBatches(t, c, store, lat.ID, 0, []int64{1, 2}, []int64{3})
	}
	latBatches, err := c.FindBatches(t.Context(), coordapi.FindBatchesRequest{TopicID: lat.ID, MaxBytes: math.MaxInt32})
	if err != nil {
		t.Fatal(err)
	}
	latTSs := []int64{coordapi.TimestampMax, 0, 1, math.MaxInt64}
	for _, bc := range latBatches.Batches {
		latTSs = append(latTSs, bc.MaxTimestamp-1, bc.MaxTimestamp, bc.MaxTimestamp+1)
	}
	tc := &tieringCoord{Coordinator: c}
	seg := tc.tier(t, store, ct.ID, 0, 14)
	tc.tier(t, store, lat.ID, 0, 5) // offsets 0-1, 2, 3-4
	plain := newTestBroker(t, Deps{Coordinator: c, Reader: storeReader{store}})
	reads := &readLog{s: store}
	b := newTestBroker(t, Deps{Coordinator: tc, Reader: reads})
	ctx := t.Context()

	type answer struct{ offset, ts int64 }
	list := func(b *Broker, id coordapi.TopicID, ts int64) answer {
		t.Helper()
		o, got, _, _, err := b.reads.ListOffset(ctx, id, 0, ts)
		if err != nil {
			t.Fatalf("ListOffset(%d): %v", ts, err)
		}
		return answer{o, got}
	}
	// Exact answers inside the segment, not at its batches' starts.
	for _, tt := range []struct {
		ts   int64
		want answer
	}{
		{150, answer{3, 300}},
		{400, answer{11, 600}},
		{501, answer{11, 600}},
		{601, answer{-1, -1}},
		{coordapi.TimestampMax, answer{11, 600}},
		{455, answer{11, 600}},
		{0, answer{0, 100}},
	} {
		if got := list(b, ct.ID, tt.ts); got != tt.want {
			t.Errorf("timestamp %d: %+v, want %+v", tt.ts, got, tt.want)
		}
		if ks := keys(reads.take()); len(ks) > 1 || len(ks) == 1 && ks[seg.ObjectKey] == 0 {
			t.Errorf("timestamp %d: read %v, want the segment only", tt.ts, ks)
		}
	}
	tss := []int64{coordapi.TimestampMax, 0, 89, 90, 99, 100, 101, 110, 150, 199, 200, 201, 250, 299, 300, 301, 399, 400, 449, 450, 455, 460, 461, 499, 500, 501, 600, 601}
	compare := func(stage string) {
		t.Helper()
		for _, ts := range tss {
			if got, want := list(b, ct.ID, ts), list(plain, ct.ID, ts); got != want {
				t.Errorf("%s: timestamp %d: %+v, the WAL's %+v", stage, ts, got, want)
			}
		}
		for _, ts := range latTSs {
			if got, want := list(b, lat.ID, ts), list(plain, lat.ID, ts); got != want {
				t.Errorf("%s: LogAppendTime topic, timestamp %d: %+v, the WAL's %+v", stage, ts, got, want)
			}
		}
	}
	compare("whole segment")
	// The log start inside the segment, in a batch's middle.
	if _, err := c.DeleteRecords(ctx, ct.ID, 0, 4); err != nil {
		t.Fatal(err)
	}
	if _, err := c.DeleteRecords(ctx, lat.ID, 0, 1); err != nil {
		t.Fatal(err)
	}
	compare("log start in the segment")
	if got := list(b, ct.ID, 150); got != (answer{4, 300}) {
		t.Errorf("timestamp 150 with the log start at 4: %+v, want {4 300}", got)
	}
	// The log start past every batch of the segment that reaches 501-600
	// (batch 10-12's 600): the answer is in a later row, or none.
	if _, err := c.DeleteRecords(ctx, ct.ID, 0, 13); err != nil {
		t.Fatal(err)
	}
	compare("log start past the segment's max")
	if got := list(b, ct.ID, 550); got != (answer{-1, -1}) {
		t.Errorf("timestamp 550 with the log start at 13: %+v, want none", got)
	}
	commitBatches(t, c, store, ct.ID, 0, []int64{700}) // offset 16, in the WAL
	compare("a later WAL batch reaches it")
	if got := list(b, ct.ID, 550); got != (answer{16, 700}) {
		t.Errorf("timestamp 550 with a batch at 700 after the segment: %+v, want {16 700}", got)
	}
}

// TestKVInSegment: a /kv lookup of a key whose record lies in a tiered
// segment answers the record with remote reads enabled (each segment's
// index loaded once, each batch read once into the batch cache), and
// 404/40405 without reading anything with them disabled; keys in the WAL
// answer either way.
func TestKVInSegment(t *testing.T) {
	real := newTestCoordinator(t, func(o *coordinator.Options) { o.KVIndexEnabled = true })
	store := objectstore.NewMemory()
	tp := createTopic(t, real, "kv", 1, map[string]string{"cleanup.policy": "compact", "kv.index.enabled": "true"})
	commitKeyed(t, real, store, tp.ID, 0, record.CodecNone, []string{"a", "b", "c"})             // 0-2
	commitKeyed(t, real, store, tp.ID, 0, record.CodecSnappy, []string{"d", "e"}, []string{"f"}) // 3-4, 5
	commitKeyed(t, real, store, tp.ID, 0, record.CodecLZ4, []string{"g", "h"})                   // 6-7
	commitKeyed(t, real, store, tp.ID, 0, record.CodecNone, []string{"i"})                       // 8, in the WAL
	tc := &tieringCoord{Coordinator: real}
	seg := tc.tier(t, store, tp.ID, 0, 8)
	reads := &readLog{s: store}
	b := newTestBroker(t, Deps{Coordinator: tc, Reader: reads})
	handler := func(remote bool) http.Handler {
		return kvindex.NewHandler(b.KVService(), kvindex.HandlerOptions{RemoteReadDisabled: !remote, Logger: testkit.Logger(),
			BatchCache: kvindex.NewBatchCache(kvindex.DefaultBatchCacheBytes)})
	}
	on, off := handler(true), handler(false)
	get := func(h http.Handler, key string) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/kv/kv/"+key+"?partition=0", nil))
		return w
	}
	keysAt := []string{"a", "b", "c", "d", "e", "f", "g", "h", "i"}

	for i, key := range keysAt {
		w := get(off, key)
		if key == "i" {
			if w.Code != http.StatusOK || w.Body.String() != "v-i" {
				t.Errorf("gate off, WAL key i: %d %s", w.Code, w.Body)
			}
			reads.take()
			continue
		}
		var eb kvindex.ErrorBody
		if err := json.Unmarshal(w.Body.Bytes(), &eb); err != nil || w.Code != http.StatusNotFound ||
			eb != (kvindex.ErrorBody{ErrorCode: 40405, Message: "record only available in tiered storage"}) {
			t.Errorf("gate off, key %s at %d: %d %s", key, i, w.Code, w.Body)
		}
		if r := reads.take(); len(r) != 0 {
			t.Errorf("gate off, key %s: read %v", key, r)
		}
	}

	for round := range 2 {
		for i, key := range keysAt {
			w := get(on, key)
			if w.Code != http.StatusOK || w.Body.String() != "v-"+key || w.Header().Get("X-Kv-Offset") != strconv.Itoa(i) ||
				w.Header().Get("X-Kv-Timestamp") != "1000" {
				t.Errorf("round %d, key %s: %d %q offset %s", round, key, w.Code, w.Body, w.Header().Get("X-Kv-Offset"))
			}
		}
		all := reads.take()
		if n, want := indexLoads(all, seg), 1-round; n != want {
			t.Errorf("round %d: the segment's index read %d times, want %d", round, n, want)
		}
		if round == 0 && keys(all)[seg.ObjectKey] == 0 {
			t.Errorf("round 0 did not read the segment: %v", keys(all))
		}
	}

	// The Service itself: Lookup answers the segment, gated; ResolveSegment
	// the batch; a segment gone from the store is the record gone.
	svc := b.KVService()
	l, err := svc.Lookup(t.Context(), tp.ID, 0, []byte("e"))
	if err != nil || !l.Batch.Segment || !l.Batch.Remote || l.Batch.Object != seg.ObjectKey {
		t.Fatalf("Lookup(e) = %+v, %v", l, err)
	}
	ref, err := svc.ResolveSegment(t.Context(), l.Batch, l.Offset)
	if err != nil || ref.Segment || !ref.Remote || ref.Object != seg.ObjectKey || ref.BaseOffset != 3 || ref.ByteOffset == 0 {
		t.Fatalf("ResolveSegment(e) = %+v, %v", ref, err)
	}
	if err := store.Delete(t.Context(), seg.ObjectKey); err != nil {
		t.Fatal(err)
	}
	fresh := newTestBroker(t, Deps{Coordinator: tc, Reader: storeReader{store}})
	if _, err := fresh.KVService().ResolveSegment(t.Context(), l.Batch, l.Offset); !errors.Is(err, kvindex.ErrOffsetOutOfRange) {
		t.Errorf("segment gone: %v, want ErrOffsetOutOfRange", err)
	}
}
