package broker

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/floe-io/floe/broker/topiccache"
	"github.com/floe-io/floe/cache"
	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/coordinator"
	"github.com/floe-io/floe/internal/testkit"
	"github.com/floe-io/floe/kvindex"
	"github.com/floe-io/floe/objectstore"
	"github.com/floe-io/floe/record"
)

// countingCoordinator is the real coordinator with every read call counted
// by name.
type countingCoordinator struct {
	coordapi.Coordinator
	mu    sync.Mutex
	calls map[string]int
}

func (c *countingCoordinator) count(name string) {
	c.mu.Lock()
	c.calls[name]++
	c.mu.Unlock()
}

// take returns the calls counted since the last take, and starts over.
func (c *countingCoordinator) take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.calls
	c.calls = map[string]int{}
	return out
}

func (c *countingCoordinator) Topic(ctx context.Context, name string) (coordapi.Topic, error) {
	c.count("Topic")
	return c.Coordinator.Topic(ctx, name)
}

func (c *countingCoordinator) TopicByID(ctx context.Context, id coordapi.TopicID) (coordapi.Topic, error) {
	c.count("TopicByID")
	return c.Coordinator.TopicByID(ctx, id)
}

func (c *countingCoordinator) Topics(ctx context.Context) ([]coordapi.Topic, error) {
	c.count("Topics")
	return c.Coordinator.Topics(ctx)
}

func (c *countingCoordinator) FindBatches(ctx context.Context, req coordapi.FindBatchesRequest) (coordapi.FindBatchesResponse, error) {
	c.count("FindBatches")
	return c.Coordinator.FindBatches(ctx, req)
}

func (c *countingCoordinator) PartitionState(ctx context.Context, id coordapi.TopicID, partition int32) (coordapi.PartitionState, error) {
	c.count("PartitionState")
	return c.Coordinator.PartitionState(ctx, id, partition)
}

func (c *countingCoordinator) ListOffset(ctx context.Context, id coordapi.TopicID, partition int32, timestamp int64) (int64, int64, error) {
	c.count("ListOffset")
	return c.Coordinator.ListOffset(ctx, id, partition, timestamp)
}

func (c *countingCoordinator) KvLookup(ctx context.Context, id coordapi.TopicID, partition int32, key []byte) (int64, int64, bool, error) {
	c.count("KvLookup")
	return c.Coordinator.KvLookup(ctx, id, partition, key)
}

func (c *countingCoordinator) KvReady(ctx context.Context, id coordapi.TopicID) (bool, error) {
	c.count("KvReady")
	return c.Coordinator.KvReady(ctx, id)
}

func (c *countingCoordinator) KvGet(ctx context.Context, req coordapi.KvGetRequest) (coordapi.KvGetResult, error) {
	c.count("KvGet")
	return c.Coordinator.KvGet(ctx, req)
}

// commitKeyed commits one object to partition of an indexed topic holding a
// batch per element of batches, batch i with a record "<key>=v-<key>" per
// key in batches[i], compressed with codec, its bytes in store.
func commitKeyed(t *testing.T, c coordapi.Coordinator, store objectstore.Store, id coordapi.TopicID, partition int32, codec record.Codec, batches ...[]string) {
	t.Helper()
	req := &coordapi.CommitRequest{ObjectKey: fmt.Sprintf("wal/kv-%d", testObjects.Add(1)), BrokerID: 1}
	var object []byte
	for _, keys := range batches {
		recs := make([]record.Record, len(keys))
		entries := make([]coordapi.KeyEntry, len(keys))
		for i, k := range keys {
			recs[i] = record.Record{Key: []byte(k), Value: []byte("v-" + k)}
			entries[i] = coordapi.KeyEntry{Key: []byte(k), OffsetDelta: int32(i)}
		}
		data, err := record.Build(record.BuildOptions{Codec: codec, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, BaseTimestamp: 1000}, recs)
		if err != nil {
			t.Fatal(err)
		}
		req.Batches = append(req.Batches, coordapi.CommitBatch{
			TopicID: id, Partition: partition, ByteOffset: int64(len(object)), ByteLength: int32(len(data)),
			LastOffsetDelta: int32(len(keys) - 1), MaxTimestamp: 1000, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1,
			Keys: entries,
		})
		object = append(object, data...)
	}
	req.ObjectSize = int64(len(object))
	if err := store.Put(t.Context(), req.ObjectKey, object); err != nil {
		t.Fatal(err)
	}
	resp, err := c.CommitObject(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range resp.Results {
		if r.ErrorCode != 0 {
			t.Fatalf("batch %d: %+v", i, r)
		}
	}
}

// TestKVOneCoordinatorCallPerLookup: with the topic in the broker's cache, a
// /kv lookup makes exactly one coordinator call (KvGet), hit or miss,
// compressed or not, and a hot compressed batch is not read again.
func TestKVOneCoordinatorCallPerLookup(t *testing.T) {
	real := newTestCoordinator(t, func(o *coordinator.Options) { o.KVIndexEnabled = true })
	cc := &countingCoordinator{Coordinator: real, calls: map[string]int{}}
	store := objectstore.NewMemory()
	b := newTestBroker(t, Deps{Coordinator: cc, Reader: storeReader{store}})
	now := time.Now()
	b.topics = topiccache.New(cc, topiccache.Options{Now: func() time.Time { return now }}) // the cached topic never expires here
	tp := createTopic(t, real, "kv", 1, map[string]string{"cleanup.policy": "compact", "kv.index.enabled": "true"})
	commitKeyed(t, real, store, tp.ID, 0, record.CodecNone, []string{"a", "b", "c"})             // offsets 0-2
	commitKeyed(t, real, store, tp.ID, 0, record.CodecSnappy, []string{"d", "e"}, []string{"f"}) // 3-4, 5

	cache := kvindex.NewBatchCache(kvindex.DefaultBatchCacheBytes)
	h := kvindex.NewHandler(b.KVService(), kvindex.HandlerOptions{Logger: testkit.Logger(), BatchCache: cache})
	get := func(key string) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/kv/kv/"+key+"?partition=0", nil))
		return w
	}
	if w := get("a"); w.Code != http.StatusOK {
		t.Fatalf("warm-up lookup: %d %s", w.Code, w.Body)
	}
	if calls := cc.take(); calls["Topic"] != 1 || calls["KvGet"] != 1 || len(calls) != 2 {
		t.Errorf("first lookup: calls %v, want the topic once and one KvGet", calls)
	}
	for round := range 3 {
		for i, key := range []string{"a", "b", "c", "d", "e", "f", "missing"} {
			w := get(key)
			switch {
			case key == "missing" && w.Code != http.StatusNotFound:
				t.Fatalf("%s: %d %s", key, w.Code, w.Body)
			case key != "missing" && (w.Code != http.StatusOK || w.Body.String() != "v-"+key || w.Header().Get("X-Kv-Offset") != strconv.Itoa(i)):
				t.Fatalf("%s: %d %q offset %s", key, w.Code, w.Body, w.Header().Get("X-Kv-Offset"))
			}
			if calls := cc.take(); calls["KvGet"] != 1 || len(calls) != 1 {
				t.Errorf("round %d, %s: coordinator calls %v, want exactly one KvGet", round, key, calls)
			}
		}
	}
	// The three batches were read and indexed once each; every other
	// lookup of them was a hit.
	if st := cache.Stats(); st.Loads != 3 || st.Hits != 1+3*6-3 {
		t.Errorf("batch cache %+v, want 3 loads and 16 hits", st)
	}

	// A miss costs its one KvGet; an unknown topic (not cached) one Topic.
	if w := get("x"); w.Code != http.StatusNotFound {
		t.Fatalf("after: %d", w.Code)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/kv/nope/x", nil))
	if w.Code != http.StatusNotFound {
		t.Fatalf("unknown topic: %d", w.Code)
	}
	if calls := cc.take(); calls["KvGet"] != 1 || calls["Topic"] != 1 || len(calls) != 2 {
		t.Errorf("a miss and an unknown topic: calls %v", calls)
	}
}

// TestKVServiceAnswers: the broker's Service maps the coordinator's answers
// and errors as the handler expects them.
func TestKVServiceAnswers(t *testing.T) {
	real := newTestCoordinator(t, func(o *coordinator.Options) { o.KVIndexEnabled = true })
	store := objectstore.NewMemory()
	b := newTestBroker(t, Deps{Coordinator: real, Reader: storeReader{store}})
	tp := createTopic(t, real, "kv", 2, map[string]string{"cleanup.policy": "compact", "kv.index.enabled": "true"})
	createTopic(t, real, "plain", 1, nil)
	commitKeyed(t, real, store, tp.ID, 1, record.CodecLZ4, []string{"a", "b"})
	svc := b.KVService()
	ctx := t.Context()

	if info, err := svc.Topic(ctx, "kv"); err != nil || info.ID != tp.ID || info.Partitions != 2 || !info.Indexed {
		t.Errorf("Topic(kv) = %+v, %v", info, err)
	}
	if info, err := svc.Topic(ctx, "plain"); err != nil || info.Indexed {
		t.Errorf("Topic(plain) = %+v, %v", info, err)
	}
	if _, err := svc.Topic(ctx, "nope"); !errors.Is(err, kvindex.ErrUnknownTopic) {
		t.Errorf("Topic(nope): %v", err)
	}
	l, err := svc.Lookup(ctx, tp.ID, 1, []byte("b"))
	if err != nil || !l.Indexed || !l.Ready || !l.Found || l.Offset != 1 || l.HighWatermark != 2 || l.Batch.Object == "" || l.Batch.Remote {
		t.Fatalf("Lookup(b) = %+v, %v", l, err)
	}
	data, err := svc.ReadBatch(ctx, l.Batch, 0, l.Batch.ByteLength)
	if h, herr := record.ParseHeader(data); err != nil || herr != nil || h.Codec() != record.CodecLZ4 || int(h.LastOffsetDelta) != 1 {
		t.Errorf("ReadBatch = %d bytes, %v, %v", len(data), err, herr)
	}
	if _, err := svc.Lookup(ctx, tp.ID, 7, []byte("b")); !errors.Is(err, kvindex.ErrUnknownPartition) {
		t.Errorf("unknown partition: %v", err)
	}
	if _, err := svc.Lookup(ctx, coordapi.TopicID{3}, 0, []byte("b")); !errors.Is(err, kvindex.ErrUnknownTopic) {
		t.Errorf("unknown topic id: %v", err)
	}
	if err := store.Delete(ctx, l.Batch.Object); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.ReadBatch(ctx, l.Batch, 0, l.Batch.ByteLength); !errors.Is(err, kvindex.ErrOffsetOutOfRange) {
		t.Errorf("object gone: %v, want ErrOffsetOutOfRange", err)
	}
}

// TestKVReadBatchDirect: through the chunk cache, a lookup's batch that
// is not resident is read exactly, loading no chunk; a resident one is a
// hit.
func TestKVReadBatchDirect(t *testing.T) {
	real := newTestCoordinator(t, func(o *coordinator.Options) { o.KVIndexEnabled = true })
	store := objectstore.NewMemory()
	c, err := cache.New(store, cache.Options{MaxBytes: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	b := newTestBroker(t, Deps{Coordinator: real, Reader: c})
	tp := createTopic(t, real, "kv", 1, map[string]string{"cleanup.policy": "compact", "kv.index.enabled": "true"})
	commitKeyed(t, real, store, tp.ID, 0, record.CodecNone, []string{"a", "b"})
	svc := b.KVService()
	ctx := t.Context()
	l, err := svc.Lookup(ctx, tp.ID, 0, []byte("b"))
	if err != nil || !l.Found {
		t.Fatalf("Lookup(b) = %+v, %v", l, err)
	}
	for i, want := range []cache.Stats{{Gets: 1, DirectReads: 1}, {Gets: 2, DirectReads: 2}} {
		if _, err := svc.ReadBatch(ctx, l.Batch, 0, l.Batch.ByteLength); err != nil {
			t.Fatal(err)
		}
		if s := c.Stats(); s.Gets != want.Gets || s.DirectReads != want.DirectReads || s.Misses != 0 || s.Bytes != 0 {
			t.Fatalf("read %d: gets %d, direct %d, misses %d, resident %d bytes; want %d, %d, 0, 0 (no chunk loaded)",
				i, s.Gets, s.DirectReads, s.Misses, s.Bytes, want.Gets, want.DirectReads)
		}
	}
	obj, err := store.GetRange(ctx, l.Batch.Object, 0, l.Batch.ObjectSize)
	if err != nil {
		t.Fatal(err)
	}
	c.Put(l.Batch.Object, obj)
	data, err := svc.ReadBatch(ctx, l.Batch, 0, l.Batch.ByteLength)
	if h, herr := record.ParseHeader(data); err != nil || herr != nil || int(h.LastOffsetDelta) != 1 {
		t.Fatalf("ReadBatch of a resident batch = %d bytes, %v, %v", len(data), err, herr)
	}
	if s := c.Stats(); s.Gets != 2 || s.Hits == 0 {
		t.Fatalf("read of a resident chunk: gets %d, hits %d; want 2 (no more) and a hit", s.Gets, s.Hits)
	}
}
