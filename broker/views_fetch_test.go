package broker

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/floe-io/floe/broker/producecheck"
	"github.com/floe-io/floe/cache"
	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/objectstore"
	"github.com/floe-io/floe/record"
)

// countingStore counts the bytes its GETs return.
type countingStore struct {
	objectstore.Store
	bytes atomic.Int64
}

func (s *countingStore) GetRange(ctx context.Context, key string, offset, length int64) ([]byte, error) {
	b, err := s.Store.GetRange(ctx, key, offset, length)
	s.bytes.Add(int64(len(b)))
	return b, err
}

// commitViewBatches commits one object to partition 0 of topic t holding a batch
// per element of batches, batch i's records keyed batches[i][j], with the
// keys the broker extracts for t's configs. It returns the batches' lengths.
func commitViewBatches(t *testing.T, c coordapi.Coordinator, store objectstore.Store, tp coordapi.Topic, batches ...[]string) []int {
	t.Helper()
	req := &coordapi.CommitRequest{ObjectKey: fmt.Sprintf("wal/view-%d", testObjects.Add(1)), BrokerID: 1}
	var object []byte
	var lens []int
	for _, keys := range batches {
		recs := make([]record.Record, len(keys))
		for i, k := range keys {
			recs[i] = record.Record{Key: []byte(k), Value: []byte(fmt.Sprintf("%s-%d-%0200d", k, i, 0))}
		}
		data, err := record.Build(record.BuildOptions{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, BaseTimestamp: 1000}, recs)
		if err != nil {
			t.Fatal(err)
		}
		ks, _, err := producecheck.Records(data, producecheck.Rules{Hierarchical: true})
		if err != nil {
			t.Fatal(err)
		}
		req.Batches = append(req.Batches, coordapi.CommitBatch{
			TopicID: tp.ID, ByteOffset: int64(len(object)), ByteLength: int32(len(data)),
			LastOffsetDelta: int32(len(keys) - 1), MaxTimestamp: 1000, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, Keys: ks,
		})
		object = append(object, data...)
		lens = append(lens, len(data))
	}
	req.ObjectSize = int64(len(object))
	if err := store.Put(t.Context(), req.ObjectKey, object); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CommitObject(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	return lens
}

// TestViewFetchReadsKeyBatches: a view's fetch asks the posting index and
// reads only the batches holding its key, with exact reads (the object
// store serves about their bytes, not the cache chunks around them),
// answers only its records with their offsets, and moves the consumer to
// the high watermark with a bare header when the rest holds no record of
// the key.
func TestViewFetchReadsKeyBatches(t *testing.T) {
	c := newTestCoordinator(t)
	store := &countingStore{Store: objectstore.NewMemory()}
	ch, err := cache.New(store, cache.Options{MaxBytes: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ch.Close() })
	b := newTestBroker(t, Deps{Coordinator: c, Reader: ch})
	base := createTopic(t, c, "telemetry", 1, map[string]string{coordapi.ConfigHierarchicalEnabled: "true"})

	// Devices flush per device: batches of one key, and a mixed one.
	keyBytes := 0
	var want []int64 // offsets of key "dev-7"
	offset := int64(0)
	for o := range 4 {
		var batches [][]string
		for d := range 20 {
			key := fmt.Sprintf("dev-%d", d)
			n := 5
			if o == 2 && d == 0 {
				batches = append(batches, []string{"dev-7", "dev-1", "dev-7"}) // mixed
			}
			batches = append(batches, repeat(key, n))
		}
		lens := commitViewBatches(t, c, store, base, batches...)
		for i, keys := range batches {
			has := false
			for j, k := range keys {
				if k == "dev-7" {
					want = append(want, offset+int64(j))
					has = true
				}
			}
			if has {
				keyBytes += lens[i]
			}
			offset += int64(len(keys))
		}
	}
	hwm := offset
	view, err := c.Topic(t.Context(), "telemetry/dev-7")
	if err != nil || view.View == nil {
		t.Fatalf("view: %+v %v", view, err)
	}

	tests := []struct {
		name     string
		maxBytes int32
	}{
		{"one answer", 1 << 20},
		{"small budget", 1}, // a batch per answer
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			store.bytes.Store(0)
			var got []int64
			fetches := 0
			for next := int64(0); next < hwm; fetches++ {
				if fetches > 100 {
					t.Fatalf("no progress at %d", next)
				}
				ans, _ := brokerFetch(t, b, tc.maxBytes, 0, []fetchPart{{topic: view, partition: 0, offset: next, maxBytes: tc.maxBytes}})
				a := ans[0]
				if a.code != 0 || a.hwm != hwm {
					t.Fatalf("at %d: code %d hwm %d", next, a.code, a.hwm)
				}
				if a.batches == 0 {
					t.Fatalf("at %d: no batch, the consumer cannot move on", next)
				}
				err := forRecords(a.records, func(off int64, key string) {
					if key != "dev-7" {
						t.Errorf("offset %d has key %q", off, key)
					}
					if off >= next {
						got = append(got, off)
					}
				})
				if err != nil {
					t.Fatal(err)
				}
				next = a.lastOffsetNext
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("offsets %v, want %v", got, want)
			}
			// Exact reads: the key's batches, not the partition's chunk.
			if read := store.bytes.Load(); read != int64(keyBytes) {
				t.Errorf("read %d bytes from the store, the key's batches hold %d (partition %d)", read, keyBytes, hwm)
			}
		})
	}

	// A key never written: one answer, a bare header up to the end.
	absent, err := c.Topic(t.Context(), "telemetry/none")
	if err != nil {
		t.Fatal(err)
	}
	ans, _ := brokerFetch(t, b, 1<<20, 0, []fetchPart{{topic: absent, partition: 0, offset: 3, maxBytes: 1 << 20}})
	if a := ans[0]; a.code != 0 || a.batches != 1 || a.firstOffset != 3 || a.lastOffsetNext != hwm {
		t.Errorf("absent key: %+v, want one bare header 3..%d", a, hwm-1)
	}
	// At the end: nothing, and the fetch may wait.
	ans, _ = brokerFetch(t, b, 1<<20, 0, []fetchPart{{topic: absent, partition: 0, offset: hwm, maxBytes: 1 << 20}})
	if a := ans[0]; a.code != 0 || a.batches != 0 {
		t.Errorf("at the end: %+v, want no batch", a)
	}
}

func repeat(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}

// forRecords calls fn with each record's offset and key in records,
// checking every batch's CRC.
func forRecords(records []byte, fn func(offset int64, key string)) error {
	for len(records) > 0 {
		h, err := record.ValidateStored(records)
		if err != nil {
			h2, perr := record.ParseHeader(records)
			if perr != nil || h2.Size() > len(records) {
				return fmt.Errorf("records: %v", err)
			}
			if h, err = record.ValidateStored(records[:h2.Size()]); err != nil {
				return fmt.Errorf("batch at %d: %v", h2.BaseOffset, err)
			}
		}
		b := records[:h.Size()]
		records = records[h.Size():]
		if err := record.Records(b, func(r *record.Record) error {
			fn(h.BaseOffset+int64(r.OffsetDelta), string(r.Key))
			return nil
		}); err != nil {
			return err
		}
	}
	return nil
}

// TestViewFetchOutOfRange: a view's fetch below the log start answers
// OFFSET_OUT_OF_RANGE with the partition's offsets, as a topic's does.
func TestViewFetchOutOfRange(t *testing.T) {
	c := newTestCoordinator(t)
	store := objectstore.NewMemory()
	b := newTestBroker(t, Deps{Coordinator: c, Reader: storeReader{store}})
	base := createTopic(t, c, "telemetry", 1, map[string]string{coordapi.ConfigHierarchicalEnabled: "true"})
	commitViewBatches(t, c, store, base, []string{"a", "b"}, []string{"a"}, []string{"b"})
	if _, err := c.DeleteRecords(t.Context(), base.ID, 0, 2); err != nil {
		t.Fatal(err)
	}
	view, err := c.Topic(t.Context(), "telemetry/a")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		offset int64
		code   int16
		first  int64 // first offset answered, -1 for none
	}{
		{"below the log start", 0, 1, -1}, // OFFSET_OUT_OF_RANGE
		{"at the log start", 2, 0, 2},     // the batch of a holds 2; none after
		{"past the end", 5, 1, -1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ans, _ := brokerFetch(t, b, 1<<20, 0, []fetchPart{{topic: view, partition: 0, offset: tc.offset, maxBytes: 1 << 20}})
			a := ans[0]
			if a.code != tc.code || a.hwm != 4 || a.logStart != 2 || a.firstOffset != tc.first {
				t.Errorf("got %v; want code %d, hwm 4, log start 2, first offset %d", a, tc.code, tc.first)
			}
		})
	}
}

// TestViewFetchFallsBackWhileNotReady: a topic that turned
// hierarchical.enabled on with data has no postings until they are built
// from the log (here never: the coordinator has no object reader); its
// views read and filter the base partition meanwhile.
func TestViewFetchFallsBackWhileNotReady(t *testing.T) {
	c := newTestCoordinator(t)
	store := objectstore.NewMemory()
	b := newTestBroker(t, Deps{Coordinator: c, Reader: storeReader{store}})
	base := createTopic(t, c, "telemetry", 1, nil)
	commitViewBatches(t, c, store, base, []string{"a", "b"}, []string{"b"}, []string{"a", "a"})
	on := "true"
	if err := c.AlterTopicConfigs(t.Context(), "telemetry", []coordapi.ConfigOp{{Name: coordapi.ConfigHierarchicalEnabled, Value: &on, Op: coordapi.OpSet}}, true, false); err != nil {
		t.Fatal(err)
	}
	view, err := c.Topic(t.Context(), "telemetry/a")
	if err != nil {
		t.Fatal(err)
	}
	if r, err := c.FindKeyBatches(t.Context(), coordapi.FindKeyBatchesRequest{TopicID: base.ID, Key: []byte("a"), MaxBytes: 1 << 20}); err != nil || r.Ready {
		t.Fatalf("FindKeyBatches: %+v %v, want not ready", r, err)
	}
	ans, _ := brokerFetch(t, b, 1<<20, 0, []fetchPart{{topic: view, partition: 0, offset: 0, maxBytes: 1 << 20}})
	var got []int64
	if err := forRecords(ans[0].records, func(off int64, key string) {
		if key != "a" {
			t.Errorf("offset %d: key %q", off, key)
		}
		got = append(got, off)
	}); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != "[0 3 4]" || ans[0].lastOffsetNext != 5 {
		t.Errorf("offsets %v up to %d, want [0 3 4] up to 5", got, ans[0].lastOffsetNext)
	}
}

// FindKeyBatches answers, as the coordinator does once consolidation moved
// batches into the segment, the segment's coordinate for every key batch
// below its end, with the batch's own offsets.
func (c *tieringCoord) FindKeyBatches(ctx context.Context, req coordapi.FindKeyBatchesRequest) (coordapi.FindKeyBatchesResponse, error) {
	r, err := c.Coordinator.FindKeyBatches(ctx, req)
	for i := range r.Batches {
		if seg, ok := c.segment(req.TopicID, req.Partition, r.Batches[i].BaseOffset); ok && err == nil {
			r.Batches[i].Coord = seg
		}
	}
	return r, err
}

// TestViewFetchInSegment: a view's key batches in a tiered segment are
// found inside it through its index and read alone, with exact reads:
// the records are the key's, and the bytes read are the key's batches,
// the segment's index and the batch headers between index entries, far
// below the segment.
func TestViewFetchInSegment(t *testing.T) {
	tc := &tieringCoord{Coordinator: newTestCoordinator(t)}
	mem := objectstore.NewMemory()
	store := &countingStore{Store: mem}
	ch, err := cache.New(store, cache.Options{MaxBytes: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ch.Close() })
	b := newTestBroker(t, Deps{Coordinator: tc, Reader: ch})
	base := createTopic(t, tc, "telemetry", 1, map[string]string{coordapi.ConfigHierarchicalEnabled: "true"})
	keyBytes := 0
	var want []int64
	offset := int64(0)
	for range 3 {
		var batches [][]string
		for d := range 30 {
			batches = append(batches, repeat(fmt.Sprintf("dev-%d", d), 4))
		}
		lens := commitViewBatches(t, tc, mem, base, batches...)
		for i, keys := range batches {
			if keys[0] == "dev-3" {
				keyBytes += lens[i]
				for j := range keys {
					want = append(want, offset+int64(j))
				}
			}
			offset += int64(len(keys))
		}
	}
	hwm := offset
	seg := tc.tier(t, mem, base.ID, 0, 240) // two rounds of three in the segment
	view, err := tc.Topic(t.Context(), "telemetry/dev-3")
	if err != nil {
		t.Fatal(err)
	}
	store.bytes.Store(0)
	var got []int64
	for next := int64(0); next < hwm; {
		ans, _ := brokerFetch(t, b, 1<<20, 0, []fetchPart{{topic: view, partition: 0, offset: next, maxBytes: 1 << 20}})
		a := ans[0]
		if a.code != 0 || a.batches == 0 {
			t.Fatalf("at %d: %v", next, a)
		}
		if err := forRecords(a.records, func(off int64, key string) {
			if key != "dev-3" {
				t.Errorf("offset %d: key %q", off, key)
			}
			if off >= next {
				got = append(got, off)
			}
		}); err != nil {
			t.Fatal(err)
		}
		next = a.lastOffsetNext
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("offsets %v, want %v", got, want)
	}
	read := store.bytes.Load()
	t.Logf("read %d bytes: the key's batches %d, the segment %d", read, keyBytes, seg.ObjectSize)
	if read < int64(keyBytes) || read*4 > seg.ObjectSize {
		t.Errorf("read %d bytes; the key's batches hold %d, the segment %d", read, keyBytes, seg.ObjectSize)
	}
}
