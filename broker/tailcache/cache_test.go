package tailcache

import (
	"testing"
	"time"

	"github.com/floe-io/floe/coordapi"
)

func tailNotice(id coordapi.TopicID, hwm int64, bases ...int64) coordapi.CommitNotice {
	n := coordapi.CommitNotice{TopicID: id, HighWatermark: hwm, LastStableOffset: hwm}
	for i, base := range bases {
		last := hwm - 1
		if i+1 < len(bases) {
			last = bases[i+1] - 1
		}
		n.Batches = append(n.Batches, coordapi.BatchCoord{ObjectKey: "o", ByteLength: 100, BaseOffset: base, LastOffset: last})
	}
	return n
}

// stoppedTail returns a tail cache whose clock reads *now, and partition 0
// of topic id.
func stoppedTail(id coordapi.TopicID, now *time.Time) (*Cache, partition) {
	tc := New()
	tc.now = func() time.Time { return *now }
	return tc, partition{id, 0}
}

func TestTailCache(t *testing.T) {
	id := coordapi.TopicID{1}
	now := time.Unix(1000, 0)
	tc, tp := stoppedTail(id, &now)

	if _, ok := tc.Find(tp.id, tp.p, 0, 1000); ok {
		t.Fatal("hit on an empty cache")
	}
	tc.Notify([]coordapi.CommitNotice{tailNotice(id, 10, 0, 5)})
	tc.Notify([]coordapi.CommitNotice{tailNotice(id, 15, 10)})
	tc.Notify([]coordapi.CommitNotice{tailNotice(id, 12, 10)}) // older, overtaken: ignored

	tests := []struct {
		name      string
		offset    int64
		maxBytes  int32
		advance   time.Duration
		hit       bool
		wantBases []int64
	}{
		{"inside the first batch", 3, 1000, 0, true, []int64{0, 5, 10}},
		{"byte budget, first batch whole", 6, 50, 0, true, []int64{5}},
		{"budget for two", 6, 200, 0, true, []int64{5, 10}},
		{"at the high watermark, fresh", 15, 1000, 0, true, nil},
		{"past the high watermark", 16, 1000, 0, false, nil},
		{"at the high watermark, stale", 15, 1000, 2 * tailTrust, false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			now = now.Add(tt.advance)
			resp, ok := tc.Find(tp.id, tp.p, tt.offset, tt.maxBytes)
			if ok != tt.hit {
				t.Fatalf("hit %v, want %v", ok, tt.hit)
			}
			if !ok {
				return
			}
			var bases []int64
			for _, b := range resp.Batches {
				bases = append(bases, b.BaseOffset)
			}
			if len(bases) != len(tt.wantBases) || (len(bases) > 0 && bases[0] != tt.wantBases[0]) || resp.HighWatermark != 15 {
				t.Fatalf("batches %v hwm %d, want %v hwm 15", bases, resp.HighWatermark, tt.wantBases)
			}
		})
	}

	// A lost notice leaves a gap: the next notice starts the cache over, and
	// offsets before it go to the coordinator.
	tc.Notify([]coordapi.CommitNotice{tailNotice(id, 30, 20)})
	if _, ok := tc.Find(tp.id, tp.p, 16, 1000); ok {
		t.Fatal("served an offset from across a gap")
	}
	if resp, ok := tc.Find(tp.id, tp.p, 25, 1000); !ok || len(resp.Batches) != 1 || resp.Batches[0].BaseOffset != 20 {
		t.Fatalf("after the gap: %v %+v", ok, resp)
	}
	// The coordinator reporting more than the notices did drops the batches.
	tc.Verify(tp.id, tp.p, coordapi.PartitionState{HighWatermark: 40, LastStableOffset: 40})
	if _, ok := tc.Find(tp.id, tp.p, 25, 1000); ok {
		t.Fatal("served coordinates the coordinator has outrun")
	}
	if _, ok := tc.Find(tp.id, tp.p, 40, 1000); !ok {
		t.Fatal("a verified high watermark is not trusted")
	}
}

// TestTailCacheCommitted: a read_committed lookup stops at the last stable
// offset, and misses on a partition with aborted transactions (only the
// coordinator lists them).
func TestTailCacheCommitted(t *testing.T) {
	id := coordapi.TopicID{2}
	tp := partition{id, 0}
	tc := New()
	n := tailNotice(id, 30, 0, 10, 20)
	n.LastStableOffset = 10 // a transaction open from 10
	tc.Notify([]coordapi.CommitNotice{n})
	if resp, ok := tc.FindCommitted(tp.id, tp.p, 0, 1000); !ok || len(resp.Batches) != 1 || resp.LastStableOffset != 10 {
		t.Fatalf("read_committed from 0: %+v %v, want the batch below the LSO", resp, ok)
	}
	if resp, ok := tc.FindCommitted(tp.id, tp.p, 10, 1000); !ok || len(resp.Batches) != 0 {
		t.Fatalf("read_committed at the LSO: %+v %v, want nothing yet", resp, ok)
	}
	if resp, ok := tc.Find(tp.id, tp.p, 10, 1000); !ok || len(resp.Batches) != 2 {
		t.Fatalf("read_uncommitted at 10: %+v %v, want both batches", resp, ok)
	}
	n2 := tailNotice(id, 31, 30)
	n2.HasAborted = true
	tc.Notify([]coordapi.CommitNotice{n2})
	if _, ok := tc.FindCommitted(tp.id, tp.p, 0, 1000); ok {
		t.Fatal("read_committed answered from the cache with aborted transactions in the partition")
	}
	if _, ok := tc.Find(tp.id, tp.p, 30, 1000); !ok {
		t.Fatal("read_uncommitted missed")
	}
}

// Past tailBatches the cache keeps the newest coordinates, serves them in
// order across the ring's wrap, and a notice costs no allocation.
func TestTailCacheRing(t *testing.T) {
	id := coordapi.TopicID{2}
	now := time.Unix(1000, 0)
	tc, tp := stoppedTail(id, &now)
	hwm := int64(0)
	notice := tailNotice(id, 0, 0, 0, 0) // three batches of one record each
	send := func() {
		for i := range notice.Batches {
			b := &notice.Batches[i]
			b.BaseOffset, b.LastOffset = hwm+int64(i), hwm+int64(i)
		}
		hwm += int64(len(notice.Batches))
		notice.HighWatermark, notice.LastStableOffset = hwm, hwm
		tc.Notify([]coordapi.CommitNotice{notice})
	}
	for range tailBatches + 100 { // wraps the ring more than once
		send()
	}
	if allocs := testing.AllocsPerRun(100, send); allocs != 0 {
		t.Errorf("a notice of a full partition allocated %.1f times, want 0", allocs)
	}
	oldest := hwm - tailBatches
	for _, tc2 := range []struct {
		offset int64
		hit    bool
	}{{oldest - 1, false}, {oldest, true}, {oldest + 200, true}, {hwm - 1, true}, {hwm, true}} {
		resp, ok := tc.Find(tp.id, tp.p, tc2.offset, 1<<30)
		if ok != tc2.hit {
			t.Fatalf("offset %d: hit %v, want %v", tc2.offset, ok, tc2.hit)
		}
		if !ok {
			continue
		}
		if want := int(hwm - tc2.offset); len(resp.Batches) != want {
			t.Fatalf("offset %d: %d batches, want %d", tc2.offset, len(resp.Batches), want)
		}
		for i, b := range resp.Batches {
			if b.BaseOffset != tc2.offset+int64(i) {
				t.Fatalf("offset %d: batch %d based at %d, want %d", tc2.offset, i, b.BaseOffset, tc2.offset+int64(i))
			}
		}
	}
}
