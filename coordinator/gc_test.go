package coordinator

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/coordinator/collect"
	"github.com/floe-io/floe/objectstore"
)

// TestCollectGarbage: live objects are never deleted; rejected-commit
// objects, deleted topics' objects and orphans go after the grace period,
// not before.
func TestCollectGarbage(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.GCGrace = 10 * time.Minute })
	e.clock.Advance(time.Since(e.clock.Now())) // the store's clock is real time
	ctx := context.Background()
	store := objectstore.NewMemory()
	put := func(key string) {
		if err := store.Put(ctx, key, make([]byte, 3*batchLen)); err != nil {
			t.Fatal(err)
		}
	}
	keep := e.topic("keep", 1, nil)
	doomed := e.topic("doomed", 1, nil)

	put("wal/live")
	e.commit("wal/live", plain(keep.ID, 0, 0))
	put("wal/rejected")
	if res := e.commit("wal/rejected", plain(keep.ID, 5, 0)); res[0].ErrorCode == 0 {
		t.Fatal("a batch for a missing partition was accepted")
	}
	put("wal/doomed")
	e.commit("wal/doomed", plain(doomed.ID, 0, 0))
	if _, err := e.c.DeleteTopic(ctx, "doomed"); err != nil {
		t.Fatal(err)
	}
	put("wal/orphan") // uploaded, never committed
	put("other/not-wal")

	stored := func() map[string]bool {
		objs, err := store.List(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]bool{}
		for _, o := range objs {
			m[o.Key] = true
		}
		return m
	}

	st, err := e.c.CollectGarbage(ctx, store, "")
	if err != nil {
		t.Fatal(err)
	}
	if st.Garbage+st.Orphans != 0 || len(stored()) != 5 {
		t.Fatalf("deleted within the grace period: %+v, left %v", st, stored())
	}

	e.clock.Advance(11 * time.Minute)
	st, err = e.c.CollectGarbage(ctx, store, "")
	if err != nil {
		t.Fatal(err)
	}
	if st.Garbage != 2 || st.Orphans != 1 {
		t.Fatalf("collected %+v, want 2 garbage (rejected, deleted topic) and 1 orphan", st)
	}
	left := stored()
	if !left["wal/live"] || !left["other/not-wal"] || len(left) != 2 {
		t.Fatalf("left %v, want only the live object and the non-WAL key", left)
	}
	objs, err := e.c.Objects(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 1 || objs[0].Key != "wal/live" {
		t.Fatalf("coordinator still knows %+v", objs)
	}
	// The live object's batch still reads.
	if found, err := e.c.FindBatches(ctx, coordapi.FindBatchesRequest{TopicID: keep.ID, Offset: 0, MaxBytes: 1}); err != nil || len(found.Batches) != 1 {
		t.Fatalf("live batch after gc: %v %+v", err, found)
	}
	// And after a restart nothing comes back.
	e.reopen()
	if objs, _ := e.c.Objects(ctx); len(objs) != 1 {
		t.Fatalf("after reopen the coordinator knows %d objects", len(objs))
	}
}

// countingLog is a Log that commits each batch synced and counts them: the
// coordinator's synced writes.
type countingLog struct{ commits atomic.Int64 }

func (l *countingLog) Commit(b *pebble.Batch) error {
	l.commits.Add(1)
	return b.Commit(pebble.Sync)
}

func (l *countingLog) Start(b *pebble.Batch) (func() error, error) {
	return noWait, l.Commit(b)
}

// The collector removes garbage records collect.RecordBatch to a synced write:
// more garbage than two batches hold costs three writes, is all collected,
// and stays gone after a restart; another topic's live object is kept.
func TestCollectGarbageInBatches(t *testing.T) {
	log := &countingLog{}
	e := newEnv(t, func(o *Options) { o.GCGrace, o.Log = 10*time.Minute, log })
	e.clock.Advance(time.Since(e.clock.Now()))
	ctx := context.Background()
	store := objectstore.NewMemory()
	keep := e.topic("keep", 1, nil)
	doomed := e.topic("doomed", 1, nil)
	const n = 2*collect.RecordBatch + 10
	for i := range n {
		key := fmt.Sprintf("wal/doomed-%04d", i)
		if err := store.Put(ctx, key, make([]byte, 3*batchLen)); err != nil {
			t.Fatal(err)
		}
		e.commit(key, plain(doomed.ID, 0, 0))
	}
	if err := store.Put(ctx, "wal/live", make([]byte, 3*batchLen)); err != nil {
		t.Fatal(err)
	}
	e.commit("wal/live", plain(keep.ID, 0, 0))
	if _, err := e.c.DeleteTopic(ctx, "doomed"); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(11 * time.Minute)
	before := log.commits.Load()
	st, err := e.c.CollectGarbage(ctx, store, "")
	if err != nil {
		t.Fatal(err)
	}
	if st.Garbage != n || st.Orphans != 0 {
		t.Fatalf("collected %+v, want %d garbage objects", st, n)
	}
	if writes := log.commits.Load() - before; writes != 3 {
		t.Errorf("the collection made %d synced writes for %d records, want 3 of at most %d", writes, n, collect.RecordBatch)
	}
	left, err := store.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 1 || left[0].Key != "wal/live" {
		t.Fatalf("left %d objects (%v), want only wal/live", len(left), left[:min(len(left), 3)])
	}
	e.reopen()
	if objs, _ := e.c.Objects(ctx); len(objs) != 1 || objs[0].Key != "wal/live" {
		t.Fatalf("after reopen the coordinator knows %d objects", len(objs))
	}
}

// Candidates looks listed keys up chunk by chunk: a listing of several
// chunks finds every unknown key old enough, and no known one.
func TestCandidatesInChunks(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.GCGrace = 10 * time.Minute })
	tp := e.topic("t", 1, nil)
	var known []string
	for i := range 3 {
		key := fmt.Sprintf("wal/known-%d", i)
		e.commit(key, plain(tp.ID, 0, 0))
		known = append(known, key)
	}
	now := e.clock.Now()
	old, young := now.Add(-time.Hour), now.Add(-time.Minute)
	var listed []objectstore.ObjectInfo
	wantOrphans := 0
	for i := range 3*candidatesChunk + 7 {
		info := objectstore.ObjectInfo{Key: fmt.Sprintf("wal/unknown-%06d", i), LastModified: old}
		switch {
		case i%candidatesChunk == 5: // one known key in each chunk
			info.Key = known[(i/candidatesChunk)%len(known)]
		case i%3 == 0:
			info.LastModified = young
		case i%3 == 1:
			info.LastModified = time.Time{} // listed by key alone: for the collector to date
			wantOrphans++
		default:
			wantOrphans++
		}
		listed = append(listed, info)
	}
	orphans, garbage := gcState{e.c}.Candidates(listed, now.UnixMilli(), (10 * time.Minute).Milliseconds())
	if len(orphans) != wantOrphans || len(garbage) != 0 {
		t.Fatalf("%d orphans, %d garbage; want %d, 0", len(orphans), len(garbage), wantOrphans)
	}
	for _, o := range orphans {
		if strings.HasPrefix(o.Key, "wal/known-") || !o.LastModified.IsZero() && !o.LastModified.Equal(old) {
			t.Fatalf("orphan %+v: known, or young", o)
		}
	}
}
