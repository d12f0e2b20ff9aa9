package coordinator

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-io/floe/coordapi"
)

// fillPartition commits batches of the given deltas (and max timestamps,
// and lengths) to partition 0 of tp, one object each, and returns their
// base offsets.
func fillPartition(e *testEnv, id coordapi.TopicID, deltas []int32, timestamps []int64, lengths []int32) []int64 {
	e.t.Helper()
	var bases []int64
	for i, d := range deltas {
		b := plain(id, 0, d)
		if timestamps != nil {
			b.MaxTimestamp = timestamps[i]
		}
		if lengths != nil {
			b.ByteLength = lengths[i]
		}
		r := e.commit(fmt.Sprintf("fill-%d", i), b)
		bases = append(bases, r[0].BaseOffset)
	}
	return bases
}

func TestFindBatches(t *testing.T) {
	e := newEnv(t)
	tp := e.topic("t", 2, nil)
	// Batches: [0-4] 100B, [5-5] 300B, [6-9] 100B, [10-10] 50B.
	fillPartition(e, tp.ID, []int32{4, 0, 3, 0}, nil, []int32{100, 300, 100, 50})
	ctx := context.Background()

	tests := []struct {
		offset   int64
		maxBytes int32
		want     string // base-last pairs
		err      *kerr.Error
	}{
		{offset: 0, maxBytes: 1 << 20, want: "0-4 5-5 6-9 10-10"},
		{offset: 0, maxBytes: 100, want: "0-4"},
		{offset: 0, maxBytes: 399, want: "0-4"},
		{offset: 0, maxBytes: 400, want: "0-4 5-5"},
		{offset: 0, maxBytes: 0, want: "0-4"},   // first batch always whole
		{offset: 5, maxBytes: 10, want: "5-5"},  // larger than maxBytes
		{offset: 3, maxBytes: 100, want: "0-4"}, // inside a batch: the whole batch
		{offset: 7, maxBytes: 150, want: "6-9 10-10"},
		{offset: 10, maxBytes: 1, want: "10-10"},
		{offset: 11, maxBytes: 1 << 20, want: ""}, // at the high watermark: empty
		{offset: 12, maxBytes: 1 << 20, err: kerr.OffsetOutOfRange},
		{offset: -1, maxBytes: 1 << 20, err: kerr.OffsetOutOfRange},
	}
	for _, tt := range tests {
		resp, err := e.c.FindBatches(ctx, coordapi.FindBatchesRequest{TopicID: tp.ID, Partition: 0, Offset: tt.offset, MaxBytes: tt.maxBytes})
		if tt.err != nil {
			wantKerr(t, err, tt.err)
			continue
		}
		if err != nil {
			t.Fatalf("offset %d: %v", tt.offset, err)
		}
		got := ""
		for i, b := range resp.Batches {
			if i > 0 {
				got += " "
			}
			got += fmt.Sprintf("%d-%d", b.BaseOffset, b.LastOffset)
			if b.ObjectKey == "" || b.ByteLength == 0 {
				t.Errorf("batch without coordinates: %+v", b)
			}
		}
		if got != tt.want {
			t.Errorf("offset %d maxBytes %d: got %q, want %q", tt.offset, tt.maxBytes, got, tt.want)
		}
		if resp.HighWatermark != 11 || resp.LogStartOffset != 0 {
			t.Errorf("offset %d: state %+v", tt.offset, resp.PartitionState)
		}
	}
	if r, _ := e.c.FindBatches(ctx, coordapi.FindBatchesRequest{TopicID: tp.ID, Partition: 0, Offset: 6, MaxBytes: 1}); r.Batches[0] != (coordapi.BatchCoord{
		ObjectKey: "fill-2", ObjectSize: 100, ByteOffset: 0, ByteLength: 100, BaseOffset: 6, LastOffset: 9, MaxTimestamp: 1000,
	}) {
		t.Errorf("coords %+v", r.Batches[0])
	}

	// Empty partition: offset 0 is the high watermark.
	if r, err := e.c.FindBatches(ctx, coordapi.FindBatchesRequest{TopicID: tp.ID, Partition: 1, Offset: 0}); err != nil || len(r.Batches) != 0 {
		t.Errorf("empty partition: %+v %v", r, err)
	}
	_, err := e.c.FindBatches(ctx, coordapi.FindBatchesRequest{TopicID: tp.ID, Partition: 2})
	wantKerr(t, err, kerr.UnknownTopicOrPartition)
	_, err = e.c.FindBatches(ctx, coordapi.FindBatchesRequest{TopicID: coordapi.TopicID{1}})
	wantKerr(t, err, kerr.UnknownTopicID)
}

// TestFindBatchesMulti: every result of a multi-partition call is what
// FindBatches answers for that request alone, Kafka-level failures as the
// result's code (OFFSET_OUT_OF_RANGE with the partition's offsets), in
// request order, repeats and all.
func TestFindBatchesMulti(t *testing.T) {
	e := newEnv(t)
	a := e.topic("a", 3, nil)
	b := e.topic("b", 1, nil)
	// Partition a/0: [0-4] 100B, [5-5] 300B, [6-9] 100B, [10-10] 50B, one
	// object each. a/1 and b/0 share objects with each other; a/2 is empty.
	fillPartition(e, a.ID, []int32{4, 0, 3, 0}, nil, []int32{100, 300, 100, 50})
	for i := range 3 {
		e.commit(fmt.Sprintf("shared-%d", i), plain(a.ID, 1, 1), plain(b.ID, 0, 2), plain(a.ID, 1, 0))
	}
	if _, err := e.c.DeleteRecords(context.Background(), b.ID, 0, 4); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	req := func(id coordapi.TopicID, p int32, offset int64, maxBytes int32) coordapi.FindBatchesRequest {
		return coordapi.FindBatchesRequest{TopicID: id, Partition: p, Offset: offset, MaxBytes: maxBytes}
	}
	reqs := []coordapi.FindBatchesRequest{
		req(a.ID, 0, 0, 1<<20),
		req(a.ID, 0, 3, 100), // inside a batch
		req(a.ID, 0, 0, 0),   // the first batch whole
		req(a.ID, 1, 2, 250),
		req(b.ID, 0, 5, 1<<20),
		req(b.ID, 0, 2, 1<<20),  // below the log start: out of range
		req(a.ID, 0, 12, 1<<20), // past the high watermark
		req(a.ID, 0, 11, 1<<20), // at the high watermark: empty
		req(a.ID, 2, 0, 1<<20),  // empty partition
		req(a.ID, 3, 0, 1<<20),  // no such partition
		req(coordapi.TopicID{9}, 0, 0, 1<<20),
		req(a.ID, 0, 0, 1<<20), // a repeat
	}
	got, err := e.c.FindBatchesMulti(ctx, reqs)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(reqs) {
		t.Fatalf("%d results for %d requests", len(got), len(reqs))
	}
	codes := []int16{0, 0, 0, 0, 0, kerr.OffsetOutOfRange.Code, kerr.OffsetOutOfRange.Code, 0, 0,
		kerr.UnknownTopicOrPartition.Code, kerr.UnknownTopicID.Code, 0}
	for i, r := range reqs {
		want, werr := e.c.FindBatches(ctx, r)
		var code int16
		if werr != nil {
			var ke *kerr.Error
			if !errors.As(werr, &ke) {
				t.Fatalf("request %d: FindBatches: %v", i, werr)
			}
			code = ke.Code
		}
		if code != codes[i] {
			t.Errorf("request %d: FindBatches answers code %d, test expects %d", i, code, codes[i])
		}
		if got[i].ErrorCode != code || !reflect.DeepEqual(got[i].FindBatchesResponse, want) {
			t.Errorf("request %d %+v:\n got code %d %+v\nwant code %d %+v", i, r, got[i].ErrorCode, got[i].FindBatchesResponse, code, want)
		}
	}
	if st := got[5].PartitionState; st.LogStartOffset != 4 || st.HighWatermark != 9 {
		t.Errorf("out of range: offsets %+v, want log start 4, high watermark 9", st)
	}
	if r, err := e.c.FindBatchesMulti(ctx, nil); err != nil || len(r) != 0 {
		t.Errorf("no requests: %+v, %v", r, err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := e.c.FindBatchesMulti(cctx, reqs); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

func TestListOffset(t *testing.T) {
	e := newEnv(t)
	tp := e.topic("t", 2, nil)
	ctx := context.Background()

	// Empty partition.
	for _, ts := range []int64{coordapi.TimestampEarliest, coordapi.TimestampLatest, coordapi.TimestampMax, 0, coordapi.TimestampLatestTiered} {
		off, gotTs, err := e.c.ListOffset(ctx, tp.ID, 1, ts)
		want := map[int64]int64{coordapi.TimestampEarliest: 0, coordapi.TimestampLatest: 0}[ts]
		if _, ok := map[int64]bool{coordapi.TimestampEarliest: true, coordapi.TimestampLatest: true}[ts]; !ok {
			want = -1
		}
		if err != nil || off != want || gotTs != -1 {
			t.Errorf("empty partition, ts %d: %d %d %v, want %d", ts, off, gotTs, err, want)
		}
	}

	// Batches [0-1] ts 100, [2-4] ts 300, [5-5] ts 200, [6-8] ts 300, [9-9] ts 400... and [10-10] ts 400.
	fillPartition(e, tp.ID, []int32{1, 2, 0, 2, 0, 0}, []int64{100, 300, 200, 300, 400, 400}, nil)
	tests := []struct {
		ts, wantOff, wantTs int64
	}{
		{coordapi.TimestampEarliest, 0, -1},
		{coordapi.TimestampEarliestLocal, 0, -1},
		{coordapi.TimestampLatest, 11, -1},
		{coordapi.TimestampLatestTiered, -1, -1},
		{coordapi.TimestampMax, 9, 400}, // first batch with the max; CreateTime: its last offset
		{0, 0, 100},
		{100, 0, 100},
		{101, 2, 300}, // first batch whose max timestamp >= target
		{250, 2, 300},
		{300, 2, 300},
		{301, 9, 400},
		{400, 9, 400},
		{401, -1, -1},
	}
	for _, tt := range tests {
		off, ts, err := e.c.ListOffset(ctx, tp.ID, 0, tt.ts)
		if err != nil || off != tt.wantOff || ts != tt.wantTs {
			t.Errorf("ListOffset(%d) = %d, %d, %v; want %d, %d", tt.ts, off, ts, err, tt.wantOff, tt.wantTs)
		}
	}

	// After DeleteRecords: never below the log start, and the max moves on
	// when its batch is gone.
	if _, err := e.c.DeleteRecords(ctx, tp.ID, 0, 3); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ ts, wantOff, wantTs int64 }{
		{coordapi.TimestampEarliest, 3, -1}, {0, 3, 300}, {300, 3, 300}, {coordapi.TimestampMax, 9, 400},
	} {
		if off, ts, err := e.c.ListOffset(ctx, tp.ID, 0, tt.ts); err != nil || off != tt.wantOff || ts != tt.wantTs {
			t.Errorf("after delete to 3: ListOffset(%d) = %d, %d, %v; want %d, %d", tt.ts, off, ts, err, tt.wantOff, tt.wantTs)
		}
	}
	if _, err := e.c.DeleteRecords(ctx, tp.ID, 0, 10); err != nil {
		t.Fatal(err)
	}
	if off, ts, _ := e.c.ListOffset(ctx, tp.ID, 0, coordapi.TimestampMax); off != 10 || ts != 400 {
		t.Errorf("max after deleting its batch: %d %d, want 10 400", off, ts)
	}
	if _, err := e.c.DeleteRecords(ctx, tp.ID, 0, -1); err != nil {
		t.Fatal(err)
	}
	if off, ts, _ := e.c.ListOffset(ctx, tp.ID, 0, coordapi.TimestampMax); off != -1 || ts != -1 {
		t.Errorf("max after deleting everything: %d %d", off, ts)
	}
	if off, ts, _ := e.c.ListOffset(ctx, tp.ID, 0, 0); off != -1 || ts != -1 {
		t.Errorf("by timestamp after deleting everything: %d %d", off, ts)
	}

	_, _, err := e.c.ListOffset(ctx, coordapi.TopicID{1}, 0, coordapi.TimestampLatest)
	wantKerr(t, err, kerr.UnknownTopicID)
	_, _, err = e.c.ListOffset(ctx, tp.ID, 7, coordapi.TimestampLatest)
	wantKerr(t, err, kerr.UnknownTopicOrPartition)
}

func TestListOffsetLogAppendTime(t *testing.T) {
	e := newEnv(t)
	tp := e.topic("t", 1, map[string]string{"message.timestamp.type": "LogAppendTime"})
	ctx := context.Background()
	t0 := e.clock.Now().UnixMilli()
	e.commit("o1", plain(tp.ID, 0, 2)) // [0-2] at t0
	e.clock.Advance(time.Second)
	e.commit("o2", plain(tp.ID, 0, 3)) // [3-6] at t1
	t1 := e.clock.Now().UnixMilli()
	if off, ts, _ := e.c.ListOffset(ctx, tp.ID, 0, coordapi.TimestampMax); off != 3 || ts != t1 {
		t.Errorf("max: %d %d, want 3 %d (LogAppendTime: the batch's base offset)", off, ts, t1)
	}
	if off, ts, _ := e.c.ListOffset(ctx, tp.ID, 0, t0+1); off != 3 || ts != t1 {
		t.Errorf("by time: %d %d", off, ts)
	}
	if off, ts, _ := e.c.ListOffset(ctx, tp.ID, 0, t0); off != 0 || ts != t0 {
		t.Errorf("by time: %d %d", off, ts)
	}
	// Log start inside the max batch: never below the log start.
	if _, err := e.c.DeleteRecords(ctx, tp.ID, 0, 5); err != nil {
		t.Fatal(err)
	}
	if off, _, _ := e.c.ListOffset(ctx, tp.ID, 0, coordapi.TimestampMax); off != 5 {
		t.Errorf("max inside deleted range: %d, want 5", off)
	}
}

func TestDeleteRecords(t *testing.T) {
	e := newEnv(t)
	tp := e.topic("t", 2, nil)
	ctx := context.Background()
	// Objects: o1 = [0-4] on p0 + [0-0] on p1; o2 = [5-5]; o3 = [6-9].
	e.commit("o1", plain(tp.ID, 0, 4), plain(tp.ID, 1, 0))
	e.commit("o2", plain(tp.ID, 0, 0))
	e.commit("o3", plain(tp.ID, 0, 3))

	low, err := e.c.DeleteRecords(ctx, tp.ID, 0, 3) // inside [0-4]: nothing deleted
	if err != nil || low != 3 {
		t.Fatalf("delete to 3: %d %v", low, err)
	}
	if o := e.object("o1"); o.LiveBytes != 2*batchLen {
		t.Errorf("o1 after delete to 3: %+v", o)
	}
	// The batch containing the log start is still served whole.
	r, err := e.c.FindBatches(ctx, coordapi.FindBatchesRequest{TopicID: tp.ID, Offset: 3, MaxBytes: 1})
	if err != nil || len(r.Batches) != 1 || r.Batches[0].BaseOffset != 0 || r.LogStartOffset != 3 {
		t.Errorf("find at log start: %+v %v", r, err)
	}
	_, err = e.c.FindBatches(ctx, coordapi.FindBatchesRequest{TopicID: tp.ID, Offset: 2})
	wantKerr(t, err, kerr.OffsetOutOfRange)

	low, err = e.c.DeleteRecords(ctx, tp.ID, 0, 6) // deletes [0-4] and [5-5]
	if err != nil || low != 6 {
		t.Fatalf("delete to 6: %d %v", low, err)
	}
	if o := e.object("o1"); o.LiveBytes != batchLen || o.State != ObjectLive {
		t.Errorf("o1 after delete to 6: %+v", o)
	}
	if o := e.object("o2"); o.LiveBytes != 0 || o.State != ObjectGarbage || o.GarbageSinceMs == 0 {
		t.Errorf("o2 after delete to 6: %+v", o)
	}
	// Below the log start: no-op, answers the current low watermark.
	if low, err := e.c.DeleteRecords(ctx, tp.ID, 0, 2); err != nil || low != 6 {
		t.Errorf("delete below log start: %d %v", low, err)
	}
	_, err = e.c.DeleteRecords(ctx, tp.ID, 0, 11)
	wantKerr(t, err, kerr.OffsetOutOfRange)
	_, err = e.c.DeleteRecords(ctx, tp.ID, 0, -2)
	wantKerr(t, err, kerr.OffsetOutOfRange)

	if low, err := e.c.DeleteRecords(ctx, tp.ID, 0, -1); err != nil || low != 10 {
		t.Fatalf("delete to hwm: %d %v", low, err)
	}
	if st := e.state(tp.ID, 0); st != (coordapi.PartitionState{LogStartOffset: 10, HighWatermark: 10, LastStableOffset: 10}) {
		t.Errorf("state %+v", st)
	}
	if r, err := e.c.FindBatches(ctx, coordapi.FindBatchesRequest{TopicID: tp.ID, Offset: 10}); err != nil || len(r.Batches) != 0 {
		t.Errorf("find at hwm after delete: %+v %v", r, err)
	}
	// Offsets continue from the high watermark.
	if got := baseOffsets(e.commit("o4", plain(tp.ID, 0, 0))); got != "10" {
		t.Errorf("commit after delete: %s", got)
	}
	if r := e.commit("o5", plain(tp.ID, 0, 0)); r[0].LogStartOffset != 10 {
		t.Errorf("result log start %+v", r[0])
	}

	_, err = e.c.DeleteRecords(ctx, coordapi.TopicID{1}, 0, 0)
	wantKerr(t, err, kerr.UnknownTopicID)
	_, err = e.c.DeleteRecords(ctx, tp.ID, 2, 0)
	wantKerr(t, err, kerr.UnknownTopicOrPartition)
}
