package coordinator

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/coordinator/logread"
	"github.com/floe-io/floe/internal/testkit"
	"github.com/floe-io/floe/kvindex"
	"github.com/floe-io/floe/objectstore"
	"github.com/floe-io/floe/record"
	"github.com/floe-io/floe/tiered"
)

// TestCommitRefusesUnkeyedBatchOnIndexedTopic: a broker that has not yet
// seen kv.index.enabled sends no keys; the commit refuses the batch with a
// retriable error instead of leaving the index without its records.
func TestCommitRefusesUnkeyedBatchOnIndexedTopic(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.KVIndexEnabled = true })
	kv := e.topic("kv", 1, map[string]string{"cleanup.policy": "compact", "kv.index.enabled": "true"})
	res := e.commit("o1", plain(kv.ID, 0, 0))
	if res[0].ErrorCode != codeNotLeader {
		t.Fatalf("unkeyed batch on an indexed topic: code %d, want NOT_LEADER_OR_FOLLOWER", res[0].ErrorCode)
	}
	keyed := plain(kv.ID, 0, 0)
	keyed.Keys = []coordapi.KeyEntry{{Key: []byte("k")}}
	if res := e.commit("o2", keyed); res[0].ErrorCode != 0 || res[0].BaseOffset != 0 {
		t.Fatalf("keyed batch: %+v", res[0])
	}
}

// keyed is a batch of delta+1 records of an indexed topic whose record i
// carries keys[i] ("" for none; a leading '-' makes a tombstone).
func keyed(id coordapi.TopicID, partition int32, keys ...string) coordapi.CommitBatch {
	b := plain(id, partition, int32(len(keys)-1))
	for i, k := range keys {
		if k == "" {
			continue
		}
		tomb := strings.HasPrefix(k, "-")
		b.Keys = append(b.Keys, coordapi.KeyEntry{Key: []byte(strings.TrimPrefix(k, "-")), OffsetDelta: int32(i), Tombstone: tomb})
	}
	return b
}

func (e *testEnv) kvGet(id coordapi.TopicID, partition int32, key string) coordapi.KvGetResult {
	e.t.Helper()
	r, err := e.c.KvGet(context.Background(), coordapi.KvGetRequest{TopicID: id, Partition: partition, Key: []byte(key)})
	if err != nil {
		e.t.Fatalf("KvGet(%s): %v", key, err)
	}
	return r
}

var kvConfigs = map[string]string{"cleanup.policy": "compact", "kv.index.enabled": "true"}

// TestKvGet: one call answers the entry, the partition's offsets and the
// coordinates of the batch holding the record, the same ones FindBatches
// gives for that offset.
func TestKvGet(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.KVIndexEnabled = true })
	kv := e.topic("kv", 2, kvConfigs)
	// o1: one run of three batches on p1 (offsets 0-1, 2-4, 5); o2: 6-7.
	e.commit("o1", keyed(kv.ID, 1, "a", "b"), keyed(kv.ID, 1, "c", "", "d"), keyed(kv.ID, 1, "e"))
	e.commit("o2", keyed(kv.ID, 1, "-b", "a"))

	for _, tt := range []struct {
		key    string
		found  bool
		offset int64
	}{
		{"a", true, 7}, {"c", true, 2}, {"d", true, 4}, {"e", true, 5},
		{"b", false, 0}, // tombstoned
		{"z", false, 0}, // never written
	} {
		r := e.kvGet(kv.ID, 1, tt.key)
		if !r.Indexed || !r.Ready || r.Found != tt.found || r.HighWatermark != 8 || r.LogStartOffset != 0 {
			t.Fatalf("%s: %+v, want found=%v, indexed, ready, offsets [0, 8)", tt.key, r, tt.found)
		}
		if !tt.found {
			if r.HasBatch() {
				t.Errorf("%s: a batch without an entry: %+v", tt.key, r.Batch)
			}
			continue
		}
		found, err := e.c.FindBatches(context.Background(), coordapi.FindBatchesRequest{TopicID: kv.ID, Partition: 1, Offset: tt.offset, MaxBytes: 1})
		if err != nil {
			t.Fatal(err)
		}
		if r.Offset != tt.offset || !r.HasBatch() || r.Batch != found.Batches[0] {
			t.Errorf("%s: offset %d batch %+v, want %d in %+v", tt.key, r.Offset, r.Batch, tt.offset, found.Batches[0])
		}
	}
	if r := e.kvGet(kv.ID, 0, "a"); !r.Ready || r.Found || r.HighWatermark != 0 {
		t.Errorf("other partition: %+v", r)
	}

	// Restarts keep it all (the readiness is rebuilt from the marker).
	e.reopen()
	if r := e.kvGet(kv.ID, 1, "d"); !r.Ready || !r.Found || r.Offset != 4 || r.Batch.ObjectKey != "o1" || r.Batch.BaseOffset != 2 {
		t.Errorf("after restart: %+v", r)
	}
}

// TestKvGetBelowLogStart: an entry below the log start is found, with no
// batch: the record is gone (the handler answers 404).
func TestKvGetBelowLogStart(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.KVIndexEnabled = true })
	kv := e.topic("kv", 1, kvConfigs)
	e.commit("o1", keyed(kv.ID, 0, "old", "x"))
	e.commit("o2", keyed(kv.ID, 0, "new"))
	if _, err := e.c.DeleteRecords(context.Background(), kv.ID, 0, 2); err != nil {
		t.Fatal(err)
	}
	r := e.kvGet(kv.ID, 0, "old")
	if !r.Ready || !r.Found || r.Offset != 0 || r.LogStartOffset != 2 || r.HighWatermark != 3 || r.HasBatch() {
		t.Errorf("below the log start: %+v", r)
	}
	if r := e.kvGet(kv.ID, 0, "new"); !r.Found || r.Offset != 2 || r.Batch.ObjectKey != "o2" {
		t.Errorf("at the log start: %+v", r)
	}
}

// TestKvGetNotReady: a topic whose index is being built answers not ready
// without looking up (here it stays so: no object reader to rebuild from,
// across a restart too); a topic without the index answers not indexed.
func TestKvGetNotReady(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.KVIndexEnabled = true })
	late := e.topic("late", 1, map[string]string{"cleanup.policy": "compact"})
	e.commit("o1", plain(late.ID, 0, 0))
	if r := e.kvGet(late.ID, 0, "k"); r.Indexed || r.Ready || r.Found {
		t.Errorf("not indexed: %+v", r)
	}
	on := "true"
	if err := e.c.AlterTopicConfigs(context.Background(), "late", []coordapi.ConfigOp{{Name: "kv.index.enabled", Op: coordapi.OpSet, Value: &on}}, true, false); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if r := e.kvGet(late.ID, 0, "k"); !r.Indexed || r.Ready || r.Found || r.HasBatch() {
			t.Errorf("being built: %+v", r)
		}
		if ready, err := e.c.KvReady(context.Background(), late.ID); err != nil || ready {
			t.Errorf("KvReady = %v, %v", ready, err)
		}
		e.reopen()
	}
	// An empty topic that turns the index on has nothing to build.
	empty := e.topic("empty", 1, map[string]string{"cleanup.policy": "compact"})
	if err := e.c.AlterTopicConfigs(context.Background(), "empty", []coordapi.ConfigOp{{Name: "kv.index.enabled", Op: coordapi.OpSet, Value: &on}}, true, false); err != nil {
		t.Fatal(err)
	}
	if r := e.kvGet(empty.ID, 0, "k"); !r.Indexed || !r.Ready || r.Found {
		t.Errorf("empty topic indexed: %+v", r)
	}
}

// TestKvGetUnknown: unknown partitions and topics are Kafka errors.
func TestKvGetUnknown(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.KVIndexEnabled = true })
	kv := e.topic("kv", 2, kvConfigs)
	for _, p := range []int32{2, -1} {
		_, err := e.c.KvGet(context.Background(), coordapi.KvGetRequest{TopicID: kv.ID, Partition: p, Key: []byte("k")})
		wantKerr(t, err, kerr.UnknownTopicOrPartition)
	}
	_, err := e.c.KvGet(context.Background(), coordapi.KvGetRequest{TopicID: coordapi.TopicID{1}, Key: []byte("k")})
	wantKerr(t, err, kerr.UnknownTopicID)
}

// TestLogSourceSegmentBatches reads a segment's batches for a key index
// rebuild a window at a time: every batch from the one holding the offset
// on, a batch larger than the window included, and an error for a
// segment whose data does not frame.
func TestLogSourceSegmentBatches(t *testing.T) {
	store := objectstore.NewMemory()
	e := newEnv(t, func(o *Options) { o.Objects = store; o.TierInterval = -1 })
	w, err := tiered.NewWriter(0, tiered.Options{})
	if err != nil {
		t.Fatal(err)
	}
	sizes := []int{100, logread.SegmentWindow + 1000, 100, 100} // values of one record each
	for i, n := range sizes {
		b, err := record.Build(record.BuildOptions{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1},
			[]record.Record{{Key: []byte{byte(i)}, Value: make([]byte, n)}})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Append(b, int64(i), 0); err != nil {
			t.Fatal(err)
		}
	}
	obj, info, err := w.Finish()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := store.Put(ctx, "seg", obj); err != nil {
		t.Fatal(err)
	}
	seg := coordapi.BatchCoord{ObjectKey: "seg", ObjectSize: int64(len(obj)), ByteLength: int32(info.DataLength),
		BaseOffset: 0, LastOffset: info.LastOffset, Segment: true}
	for _, from := range []int64{0, 1, 2, 3} {
		var got []int64
		next, ok := logread.SegmentBatches(ctx, e.c.opts.Objects, seg, from, func(b kvindex.LogBatch, err error) bool {
			if err != nil {
				t.Fatalf("from %d: %v", from, err)
			}
			if _, err := record.Validate(b.Data); err != nil {
				t.Fatalf("from %d: batch %d: %v", from, b.BaseOffset, err)
			}
			got = append(got, b.BaseOffset)
			return true
		})
		var want []int64
		for o := from; o < int64(len(sizes)); o++ {
			want = append(want, o)
		}
		if !ok || next != 4 || !slices.Equal(got, want) {
			t.Errorf("from %d: batches %v, next %d, ok %v; want %v, 4, true", from, got, next, ok, want)
		}
	}
	// Data that does not frame as batches.
	bad := seg
	bad.ObjectKey = "bad"
	if err := store.Put(ctx, "bad", make([]byte, len(obj))); err != nil {
		t.Fatal(err)
	}
	var failed error
	if _, ok := logread.SegmentBatches(ctx, e.c.opts.Objects, bad, 0, func(_ kvindex.LogBatch, err error) bool { failed = err; return false }); ok || failed == nil {
		t.Errorf("a segment of zeros: ok %v, err %v; want an error", ok, failed)
	}
}

// TestKvLatestOffsets: a compaction pass's key lookups answer each key's
// latest offset, -1 for a tombstoned or unknown key, in request order; a
// topic without a ready index is a KafkaStorageError, an unknown partition
// UNKNOWN_TOPIC_OR_PARTITION.
func TestKvLatestOffsets(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.KVIndexEnabled = true })
	kv := e.topic("kv", 2, kvConfigs)
	plainTopic := e.topic("plain", 1, map[string]string{"cleanup.policy": "compact"})
	e.commit("o1", keyed(kv.ID, 1, "a", "b"), keyed(kv.ID, 1, "c", "", "d"), keyed(kv.ID, 0, "a"))
	e.commit("o2", keyed(kv.ID, 1, "-b", "a"))
	ctx := context.Background()
	keys := [][]byte{[]byte("a"), []byte("b"), []byte("z"), []byte("d"), []byte("a")}
	got, err := e.c.KvLatestOffsets(ctx, coordapi.KvOffsetsRequest{TopicID: kv.ID, Partition: 1, Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	if want := []int64{6, -1, -1, 4, 6}; !slices.Equal(got, want) {
		t.Fatalf("latest offsets %v, want %v", got, want)
	}
	if got, err := e.c.KvLatestOffsets(ctx, coordapi.KvOffsetsRequest{TopicID: kv.ID, Partition: 0, Keys: keys[:1]}); err != nil || !slices.Equal(got, []int64{0}) {
		t.Fatalf("partition 0: %v, %v", got, err)
	}
	if _, err := e.c.KvLatestOffsets(ctx, coordapi.KvOffsetsRequest{TopicID: plainTopic.ID, Partition: 0, Keys: keys}); !errors.Is(err, kerr.KafkaStorageError) {
		t.Fatalf("unindexed topic: %v, want KAFKA_STORAGE_ERROR", err)
	}
	if _, err := e.c.KvLatestOffsets(ctx, coordapi.KvOffsetsRequest{TopicID: kv.ID, Partition: 2, Keys: keys}); !errors.Is(err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("partition 2: %v, want UNKNOWN_TOPIC_OR_PARTITION", err)
	}
}

// gatedReader is an object reader whose reads wait until open is closed.
type gatedReader struct {
	*objectstore.Memory
	open chan struct{}
}

func (g gatedReader) GetRange(ctx context.Context, key string, offset, length int64) ([]byte, error) {
	select {
	case <-g.open:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return g.Memory.GetRange(ctx, key, offset, length)
}

// TestKvLatestOffsetsAcrossRebuild: a compaction pass removes every record
// whose key answers -1, so lookups that a rebuild's drop of the index
// overtakes (the rebuild still running after them, or finished before the
// answer) must fail, never answer the dropped index's -1 for live keys.
func TestKvLatestOffsetsAcrossRebuild(t *testing.T) {
	for _, finished := range []bool{false, true} {
		store := objectstore.NewMemory()
		gate := gatedReader{store, make(chan struct{})}
		e := newEnv(t, func(o *Options) { o.KVIndexEnabled = true; o.Objects = gate; o.TierInterval = -1 })
		release := sync.OnceFunc(func() { close(gate.open) })
		t.Cleanup(release) // before Close, which waits for the rebuild
		kv := e.topic("kv", 1, kvConfigs)
		e.commitReal(store, kv.ID, "o1", []string{"a", "b"})
		ctx := context.Background()
		req := coordapi.KvOffsetsRequest{TopicID: kv.ID, Partition: 0, Keys: [][]byte{[]byte("a"), []byte("b")}}

		rebuilt := make(chan error, 1)
		e.c.testBeforeKvLookups = func() {
			// The rebuild drops the index, then waits on its first read.
			go func() { rebuilt <- e.c.RebuildKVIndex(ctx, "kv") }()
			testkit.CheckFor(t, 10*time.Second, time.Millisecond, func() error {
				if e.c.kv.Ready(kv.ID) {
					return errors.New("the index is not dropped yet")
				}
				return nil
			})
		}
		if finished {
			e.c.testAfterKvLookups = func() {
				release()
				if err := <-rebuilt; err != nil {
					t.Errorf("rebuild: %v", err)
				}
			}
		}
		got, err := e.c.KvLatestOffsets(ctx, req)
		if !errors.Is(err, kerr.KafkaStorageError) {
			t.Fatalf("rebuild finished before the answer %v: offsets %v, err %v; want KAFKA_STORAGE_ERROR", finished, got, err)
		}
		e.c.testBeforeKvLookups, e.c.testAfterKvLookups = nil, nil
		if !finished {
			release()
			if err := <-rebuilt; err != nil {
				t.Fatalf("rebuild: %v", err)
			}
		}
		if got, err := e.c.KvLatestOffsets(ctx, req); err != nil || !slices.Equal(got, []int64{0, 1}) {
			t.Fatalf("after the rebuild (finished %v): offsets %v, err %v; want [0 1]", finished, got, err)
		}
	}
}

// TestCloseDuringRebuild: Close stops a key index build that a
// RebuildKVIndex call waits for, even one stuck on a read of the log, and
// the call returns; the next Open takes the build up again.
func TestCloseDuringRebuild(t *testing.T) {
	store := objectstore.NewMemory()
	gate := gatedReader{store, make(chan struct{})}
	e := newEnv(t, func(o *Options) { o.KVIndexEnabled = true; o.Objects = gate; o.TierInterval = -1 })
	kv := e.topic("kv", 1, kvConfigs)
	e.commitReal(store, kv.ID, "o1", []string{"a", "b"})
	rebuilt := make(chan error, 1)
	go func() { rebuilt <- e.c.RebuildKVIndex(context.Background(), "kv") }()
	testkit.CheckFor(t, 10*time.Second, time.Millisecond, func() error {
		if e.c.kv.Ready(kv.ID) {
			return errors.New("the index is not dropped yet")
		}
		return nil
	})
	closed := make(chan error, 1)
	go func() { closed <- e.c.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatalf("Close: %v", err)
		}
	case <-time.After(10 * time.Second):
		close(gate.open) // let the test end
		t.Fatal("Close did not return while a rebuild waited on a read")
	}
	if err := <-rebuilt; !errors.Is(err, context.Canceled) {
		t.Errorf("RebuildKVIndex across Close: %v, want context.Canceled", err)
	}
	close(gate.open)
	e.open()
	testkit.CheckFor(t, 10*time.Second, 5*time.Millisecond, func() error {
		got, err := e.c.KvLatestOffsets(context.Background(), coordapi.KvOffsetsRequest{TopicID: kv.ID, Partition: 0, Keys: [][]byte{[]byte("a"), []byte("b")}})
		if err == nil && !slices.Equal(got, []int64{0, 1}) {
			err = fmt.Errorf("offsets %v, want [0 1]", got)
		}
		return err
	})
}
