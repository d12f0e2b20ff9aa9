package coordinator

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-io/floe/coordapi"
)

func TestCommitOffsetAssignment(t *testing.T) {
	// Topics: a (3 partitions), b (1 partition). A batch is
	// {topic, partition, delta}; topic "x" is an unknown id.
	type b struct {
		topic     string
		partition int32
		delta     int32
	}
	tests := []struct {
		name    string
		objects [][]b
		want    []string // per object: base offsets or errN
		hwm     map[string][]int64
	}{
		{
			name:    "one batch",
			objects: [][]b{{{"a", 0, 0}}},
			want:    []string{"0"},
			hwm:     map[string][]int64{"a": {1, 0, 0}, "b": {0}},
		},
		{
			name:    "batches of one partition in one object",
			objects: [][]b{{{"a", 0, 4}, {"a", 0, 0}, {"a", 0, 9}}},
			want:    []string{"0 5 6"},
			hwm:     map[string][]int64{"a": {16, 0, 0}},
		},
		{
			name:    "partitions interleaved",
			objects: [][]b{{{"a", 0, 1}, {"a", 1, 2}, {"b", 0, 0}, {"a", 0, 0}, {"a", 1, 0}}},
			want:    []string{"0 0 0 2 3"},
			hwm:     map[string][]int64{"a": {3, 4, 0}, "b": {1}},
		},
		{
			name: "across objects",
			objects: [][]b{
				{{"a", 0, 9}, {"a", 2, 0}},
				{{"a", 0, 0}, {"b", 0, 3}},
				{{"a", 2, 1}, {"a", 0, 4}},
			},
			want: []string{"0 0", "10 0", "1 11"},
			hwm:  map[string][]int64{"a": {16, 0, 3}, "b": {4}},
		},
		{
			name:    "unknown topic and partition are rejected, others go on",
			objects: [][]b{{{"a", 0, 0}, {"x", 0, 0}, {"a", 3, 0}, {"a", -1, 0}, {"a", 0, 0}}},
			want:    []string{"0 err100 err3 err3 1"},
			hwm:     map[string][]int64{"a": {2, 0, 0}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			ids := map[string]coordapi.TopicID{"a": e.topic("a", 3, nil).ID, "b": e.topic("b", 1, nil).ID, "x": {1, 2, 3}}
			for i, obj := range tt.objects {
				var batches []coordapi.CommitBatch
				for _, bb := range obj {
					batches = append(batches, plain(ids[bb.topic], bb.partition, bb.delta))
				}
				if got := baseOffsets(e.commit(fmt.Sprintf("obj-%d", i), batches...)); got != tt.want[i] {
					t.Errorf("object %d: got %q, want %q", i, got, tt.want[i])
				}
			}
			for topic, hwms := range tt.hwm {
				for p, want := range hwms {
					if got := e.state(ids[topic], int32(p)); got.HighWatermark != want || got.LogStartOffset != 0 {
						t.Errorf("%s/%d: state %+v, want hwm %d", topic, p, got, want)
					}
				}
			}
		})
	}
}

func TestCommitResultFields(t *testing.T) {
	e := newEnv(t)
	ct := e.topic("create", 1, nil)
	lat := e.topic("append", 1, map[string]string{"message.timestamp.type": "LogAppendTime"})
	now := e.clock.Now().UnixMilli()

	b1 := plain(ct.ID, 0, 0)
	b1.MaxTimestamp = 42
	b2 := plain(lat.ID, 0, 1)
	b2.MaxTimestamp = 42
	rs := e.commit("o1", b1, b2)
	if r := rs[0]; r != (coordapi.BatchResult{BaseOffset: 0, LogAppendTime: -1, LogStartOffset: 0}) {
		t.Errorf("CreateTime result %+v", r)
	}
	if r := rs[1]; r != (coordapi.BatchResult{BaseOffset: 0, LogAppendTime: now, LogStartOffset: 0}) {
		t.Errorf("LogAppendTime result %+v", r)
	}
	rs = e.commit("o2", plain(coordapi.TopicID{9}, 0, 0))
	if r := rs[0]; r != (coordapi.BatchResult{ErrorCode: kerr.UnknownTopicID.Code, BaseOffset: -1, LogAppendTime: -1, LogStartOffset: -1}) {
		t.Errorf("error result %+v", r)
	}

	fb, err := e.c.FindBatches(context.Background(), coordapi.FindBatchesRequest{TopicID: lat.ID, Offset: 0, MaxBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if len(fb.Batches) != 1 || !fb.Batches[0].LogAppendTime || fb.Batches[0].MaxTimestamp != now {
		t.Errorf("LogAppendTime batch coords %+v", fb.Batches)
	}
	fb, err = e.c.FindBatches(context.Background(), coordapi.FindBatchesRequest{TopicID: ct.ID, Offset: 0, MaxBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if len(fb.Batches) != 1 || fb.Batches[0].LogAppendTime || fb.Batches[0].MaxTimestamp != 42 || fb.Batches[0].ObjectKey != "o1" {
		t.Errorf("CreateTime batch coords %+v", fb.Batches)
	}
}

func TestCommitObjects(t *testing.T) {
	e := newEnv(t)
	tp := e.topic("t", 1, nil)

	e.commit("all-bad", plain(coordapi.TopicID{7}, 0, 0), plain(tp.ID, 5, 0))
	if o := e.object("all-bad"); o.State != ObjectGarbage || o.LiveBytes != 0 || o.Size != 2*batchLen || o.GarbageSinceMs == 0 || o.BrokerID != 1 {
		t.Errorf("all-rejected object: %+v", o)
	}
	e.commit("mixed", plain(tp.ID, 0, 0), plain(coordapi.TopicID{7}, 0, 0), plain(tp.ID, 0, 3))
	if o := e.object("mixed"); o.State != ObjectLive || o.LiveBytes != 2*batchLen || o.Size != 3*batchLen || o.GarbageSinceMs != 0 {
		t.Errorf("mixed object: %+v", o)
	}

	// A retried commit of the same key reuses the object record.
	e.commit("mixed", plain(tp.ID, 0, 0), plain(coordapi.TopicID{7}, 0, 0), plain(tp.ID, 0, 3))
	if o := e.object("mixed"); o.LiveBytes != 4*batchLen {
		t.Errorf("recommitted object: %+v", o)
	}
	objs, _ := e.c.Objects(context.Background())
	if len(objs) != 2 {
		t.Errorf("objects: %+v", objs)
	}
	// Reviving a garbage object.
	e.commit("all-bad", plain(tp.ID, 0, 0), plain(tp.ID, 0, 0))
	if o := e.object("all-bad"); o.State != ObjectLive || o.LiveBytes != 2*batchLen || o.GarbageSinceMs != 0 {
		t.Errorf("revived object: %+v", o)
	}
}

func TestCommitInvalidRequests(t *testing.T) {
	e := newEnv(t)
	tp := e.topic("t", 1, nil)
	ctx := context.Background()
	bad := []*coordapi.CommitRequest{
		{ObjectKey: "", ObjectSize: 100, Batches: []coordapi.CommitBatch{{TopicID: tp.ID, ByteLength: 100, ProducerID: -1}}},
		{ObjectKey: "k", ObjectSize: 50, Batches: []coordapi.CommitBatch{{TopicID: tp.ID, ByteLength: 100, ProducerID: -1}}},
		{ObjectKey: "k", ObjectSize: 100, Batches: []coordapi.CommitBatch{{TopicID: tp.ID, ByteLength: 0, ProducerID: -1}}},
		{ObjectKey: "k", ObjectSize: 100, Batches: []coordapi.CommitBatch{{TopicID: tp.ID, ByteLength: 10, LastOffsetDelta: -1, ProducerID: -1}}},
	}
	for i, req := range bad {
		_, err := e.c.CommitObject(ctx, req)
		wantKerr(t, err, kerr.InvalidRequest)
		_ = i
	}
	if st := e.state(tp.ID, 0); st.HighWatermark != 0 {
		t.Errorf("state after bad requests: %+v", st)
	}
	if objs, _ := e.c.Objects(ctx); len(objs) != 0 {
		t.Errorf("objects after bad requests: %+v", objs)
	}
}

func TestCommitNotices(t *testing.T) {
	e := newEnv(t)
	a := e.topic("a", 2, nil)
	var mu sync.Mutex
	var got [][]coordapi.CommitNotice
	cancel := e.c.Subscribe(func(ns []coordapi.CommitNotice) {
		mu.Lock()
		got = append(got, ns)
		mu.Unlock()
	})
	e.commit("o1", plain(a.ID, 1, 1), plain(a.ID, 0, 0), plain(a.ID, 1, 0))
	e.commit("o2", plain(coordapi.TopicID{1}, 0, 0)) // nothing advanced: no call
	cancel()
	e.commit("o3", plain(a.ID, 0, 0))
	mu.Lock()
	defer mu.Unlock()
	coord := func(off int64, base, last int64) coordapi.BatchCoord {
		return coordapi.BatchCoord{ObjectKey: "o1", ObjectSize: 3 * batchLen, ByteOffset: off, ByteLength: batchLen, BaseOffset: base, LastOffset: last, MaxTimestamp: 1000}
	}
	want := []coordapi.CommitNotice{
		{TopicID: a.ID, Partition: 1, HighWatermark: 3, LastStableOffset: 3, Batches: []coordapi.BatchCoord{coord(0, 0, 1), coord(200, 2, 2)}},
		{TopicID: a.ID, Partition: 0, HighWatermark: 1, LastStableOffset: 1, Batches: []coordapi.BatchCoord{coord(100, 0, 0)}},
	}
	if len(got) != 1 || fmt.Sprint(got[0]) != fmt.Sprint(want) {
		t.Errorf("notices %v, want [%v]", got, want)
	}
}

// TestCommitConcurrent commits from several goroutines (run with -race):
// every partition ends up with contiguous, unique offsets.
func TestCommitConcurrent(t *testing.T) {
	e := newEnv(t)
	tp := e.topic("t", 4, nil)
	const workers, objects, perObject = 8, 20, 10
	type assigned struct {
		partition int32
		base      int64
		delta     int32
	}
	var mu sync.Mutex
	var all []assigned
	var wg sync.WaitGroup
	var notified sync.Map
	e.c.Subscribe(func(ns []coordapi.CommitNotice) {
		for _, n := range ns {
			for {
				old, _ := notified.LoadOrStore(n.Partition, n.HighWatermark)
				if old.(int64) >= n.HighWatermark || notified.CompareAndSwap(n.Partition, old, n.HighWatermark) {
					break
				}
			}
		}
	})
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := context.Background()
			for o := 0; o < objects; o++ {
				var batches []coordapi.CommitBatch
				for i := 0; i < perObject; i++ {
					batches = append(batches, plain(tp.ID, int32((w+o+i)%4), int32(i%3)))
				}
				resp, err := e.c.CommitObject(ctx, objectReq(fmt.Sprintf("w%d-o%d", w, o), batches...))
				if err != nil {
					t.Error(err)
					return
				}
				// Readers run alongside.
				if _, err := e.c.FindBatches(ctx, coordapi.FindBatchesRequest{TopicID: tp.ID, Partition: int32(o % 4), Offset: 0, MaxBytes: 1000}); err != nil {
					t.Error(err)
				}
				mu.Lock()
				for i, r := range resp.Results {
					if r.ErrorCode != 0 {
						t.Errorf("error %d", r.ErrorCode)
					}
					all = append(all, assigned{batches[i].Partition, r.BaseOffset, batches[i].LastOffsetDelta})
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	sort.Slice(all, func(i, j int) bool {
		if all[i].partition != all[j].partition {
			return all[i].partition < all[j].partition
		}
		return all[i].base < all[j].base
	})
	next := map[int32]int64{}
	for _, a := range all {
		if a.base != next[a.partition] {
			t.Fatalf("partition %d: batch at %d, want %d", a.partition, a.base, next[a.partition])
		}
		next[a.partition] = a.base + int64(a.delta) + 1
	}
	for p := int32(0); p < 4; p++ {
		st := e.state(tp.ID, p)
		if st.HighWatermark != next[p] {
			t.Errorf("partition %d: hwm %d, want %d", p, st.HighWatermark, next[p])
		}
		if n, _ := notified.Load(p); n.(int64) != next[p] {
			t.Errorf("partition %d: notified hwm %v, want %d", p, n, next[p])
		}
		// FindBatches walks the whole partition in order.
		var off int64
		for off < st.HighWatermark {
			fb, err := e.c.FindBatches(context.Background(), coordapi.FindBatchesRequest{TopicID: tp.ID, Partition: p, Offset: off, MaxBytes: 350})
			if err != nil {
				t.Fatal(err)
			}
			for _, b := range fb.Batches {
				if b.BaseOffset != off {
					t.Fatalf("partition %d: batch %+v, want base %d", p, b, off)
				}
				off = b.LastOffset + 1
			}
		}
	}
}
