package coordinator

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/pebble"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/objectstore"
)

// slowLog is a Log that applies each batch at once and, while hold is set,
// makes Start's wait block until release: a commit in memory and in Pebble
// that the log has not yet made durable.
type slowLog struct {
	hold    atomic.Bool
	started chan struct{}
	release chan struct{}
}

func (l *slowLog) Commit(b *pebble.Batch) error { return b.Commit(pebble.NoSync) }

func (l *slowLog) Start(b *pebble.Batch) (func() error, error) {
	if err := b.Commit(pebble.NoSync); err != nil {
		return nil, err
	}
	if !l.hold.Load() {
		return noWait, nil
	}
	release := l.release // set before hold
	l.started <- struct{}{}
	return func() error { <-release; return nil }, nil
}

// TestKvDurable (KvGetSettled): a lookup's answer is durable once the commit that wrote
// its key's entry is, the commit holding its offset or, for a
// transaction's key, the commit of its marker; not while that commit waits
// for the log, and not for a key another commit still in flight changed.
func TestKvDurable(t *testing.T) {
	log := &slowLog{started: make(chan struct{})}
	e := newEnv(t, func(o *Options) {
		o.KVIndexEnabled, o.Log, o.Markers = true, log, objectstore.NewMemory()
		o.TxnCheckInterval, o.TierInterval = -1, -1
	})
	kv := e.topic("kv", 1, kvConfigs)
	get := func(key string) (coordapi.KvGetResult, bool) {
		t.Helper()
		req := coordapi.KvGetRequest{TopicID: kv.ID, Partition: 0, Key: []byte(key)}
		r, settled, err := e.c.KvGetSettled(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		return r, settled
	}
	durable := func(key string) (int64, bool) {
		t.Helper()
		r, ok := get(key)
		if !r.Found {
			t.Fatalf("%s not found: %+v", key, r)
		}
		return r.Offset, ok
	}
	absent := func(key string) bool {
		t.Helper()
		r, ok := get(key)
		if r.Found {
			t.Fatalf("%s found: %+v", key, r)
		}
		return ok
	}
	slow := slowCommits(t, log)

	if !absent("z") {
		t.Error("z absent from a partition nothing was written to: not durable")
	}
	e.commit("o1", keyed(kv.ID, 0, "a", "b", "c")) // a at 0, b at 1, c at 2
	if off, ok := durable("a"); off != 0 || !ok {
		t.Fatalf("a at %d after its commit returned: durable %v", off, ok)
	}
	if !absent("z") {
		t.Error("z absent, no commit in flight: not durable")
	}
	done := slow(func() { e.commit("o1b", keyed(kv.ID, 0, "-c")) }) // c's tombstone at 3
	if absent("c") || absent("z") {
		t.Error("a key absent while a commit that may have tombstoned it waits for the log: durable")
	}
	done()
	if !absent("c") {
		t.Error("c tombstoned, its commit returned: not durable")
	}
	done = slow(func() { e.commit("o2", keyed(kv.ID, 0, "b")) }) // b at 4
	if off, ok := durable("b"); off != 4 || ok {
		t.Fatalf("b at %d while its commit waits for the log: durable %v", off, ok)
	}
	if off, ok := durable("a"); off != 0 || !ok {
		t.Errorf("a at %d, untouched by the commit in flight: durable %v", off, ok)
	}
	done()
	if off, ok := durable("b"); off != 4 || !ok {
		t.Fatalf("b at %d once its commit returned: durable %v", off, ok)
	}

	// A transaction's key: its batch is durable long before its marker,
	// which makes the key the index's.
	ctx := context.Background()
	prod := e.initTxn("app", 60000)
	e.addParts("app", prod, coordapi.TopicPartition{TopicID: kv.ID, Partition: 0})
	tb := txnBatch("app", kv.ID, 0, 0, prod.ProducerID, 0, 0)
	tb.Keys = []coordapi.KeyEntry{{Key: []byte("t")}}
	e.commit("o3", tb) // t at 5, held until the marker
	if r := e.kvGet(kv.ID, 0, "t"); r.Found {
		t.Fatalf("an open transaction's key found: %+v", r)
	}
	done = slow(func() {
		if err := e.endTxn("app", prod, true); err != nil {
			t.Error(err)
		}
	})
	if off, ok := durable("t"); off != 5 || ok {
		t.Fatalf("t at %d while its marker waits for the log: durable %v", off, ok)
	}
	done()
	if off, ok := durable("t"); off != 5 || !ok {
		t.Fatalf("t at %d once its marker's commit returned: durable %v", off, ok)
	}

	// A deleted topic's partitions are forgotten.
	if _, err := e.c.DeleteTopic(ctx, "kv"); err != nil {
		t.Fatal(err)
	}
	if e.c.dur.Noted(partKey{kv.ID, 0}) {
		t.Error("a deleted topic's partition is still noted")
	}
}

// slowCommits returns a runner of commits the log holds (as TestKvDurable's
// slow): do runs a commit, and returns once it waits for the log; done
// releases it and waits for do to return.
func slowCommits(t *testing.T, log *slowLog) func(do func()) (done func()) {
	return func(do func()) (done func()) {
		t.Helper()
		release := make(chan struct{})
		log.release = release
		log.hold.Store(true)
		finished := make(chan struct{})
		go func() { defer close(finished); do() }()
		<-log.started
		log.hold.Store(false)
		var once sync.Once
		done = func() { once.Do(func() { close(release) }); <-finished }
		t.Cleanup(done) // before the coordinator's Close, which waits for do
		return done
	}
}

// TestFindBatchesSettled: a fetch's FindBatches answers no further than
// what the log has, and says its answer is settled, leaving without the
// log's wait, unless a change it cannot place (a write other than a
// commit, a marker for read_committed) is in flight.
func TestFindBatchesSettled(t *testing.T) {
	log := &slowLog{started: make(chan struct{})}
	e := newEnv(t, func(o *Options) {
		o.Log, o.Markers = log, objectstore.NewMemory()
		o.TxnCheckInterval, o.TierInterval = -1, -1
	})
	slow := slowCommits(t, log)
	ctx := context.Background()
	tp := e.topic("t", 2, nil)
	find := func(partition int32, offset int64, committed bool) (coordapi.FindBatchesResponse, bool) {
		t.Helper()
		req := coordapi.FindBatchesRequest{TopicID: tp.ID, Partition: partition, Offset: offset, MaxBytes: 1 << 20, ReadCommitted: committed}
		resp, settled, err := e.c.FindBatchesSettled(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		multi, msettled, err := e.c.FindBatchesMultiSettled(ctx, []coordapi.FindBatchesRequest{req})
		if err != nil || multi[0].ErrorCode != 0 {
			t.Fatalf("multi: %v, code %d", err, multi[0].ErrorCode)
		}
		if len(multi[0].Batches) != len(resp.Batches) || multi[0].HighWatermark != resp.HighWatermark || msettled != settled {
			t.Fatalf("multi answers %d batches to %d, settled %v, against %d to %d, settled %v",
				len(multi[0].Batches), multi[0].HighWatermark, msettled, len(resp.Batches), resp.HighWatermark, settled)
		}
		return resp, settled
	}
	e.commit("o1", plain(tp.ID, 0, 4), plain(tp.ID, 1, 0)) // p0 [0,5), p1 [0,1)
	if r, settled := find(0, 0, false); len(r.Batches) != 1 || r.HighWatermark != 5 || !settled {
		t.Fatalf("after a commit returned: %d batches to %d, settled %v; want 1 to 5, settled", len(r.Batches), r.HighWatermark, settled)
	}

	done := slow(func() { e.commit("o2", plain(tp.ID, 0, 4)) }) // p0 [5,10), in flight
	if st := e.state(tp.ID, 0); st.HighWatermark != 5 {
		t.Errorf("PartitionState's high watermark %d while [5,10) waits for the log; want 5", st.HighWatermark)
	}
	if r, settled := find(0, 0, false); len(r.Batches) != 1 || r.HighWatermark != 5 || !settled {
		t.Fatalf("with a commit in flight: %d batches to %d, settled %v; want the durable 1 to 5, settled", len(r.Batches), r.HighWatermark, settled)
	}
	if r, settled := find(0, 5, false); len(r.Batches) != 0 || !settled {
		t.Fatalf("at the durable end, the commit in flight: %d batches, settled %v; want none, settled", len(r.Batches), settled)
	}
	if r, settled := find(1, 0, true); len(r.Batches) != 1 || !settled {
		t.Fatalf("another partition, read_committed: %d batches, settled %v; want 1, settled", len(r.Batches), settled)
	}
	done()
	if r, settled := find(0, 0, false); len(r.Batches) != 2 || r.HighWatermark != 10 || !settled {
		t.Fatalf("once the commit returned: %d batches to %d, settled %v; want 2 to 10", len(r.Batches), r.HighWatermark, settled)
	}

	// A write other than a commit in flight: nothing is settled.
	e.c.unsettled.Add(1)
	if _, settled := find(1, 0, false); settled {
		t.Error("settled while a write other than a commit waits for the log")
	}
	e.c.unsettled.Add(-1)

	// A transaction's marker in flight: read_committed cannot place it.
	prod := e.initTxn("app", 60000)
	e.addParts("app", prod, coordapi.TopicPartition{TopicID: tp.ID, Partition: 1})
	e.commit("o3", txnBatch("app", tp.ID, 1, 0, prod.ProducerID, 0, 0)) // p1 1, open
	if r, settled := find(1, 0, true); len(r.Batches) != 1 || r.LastStableOffset != 1 || !settled {
		t.Fatalf("an open transaction: %d batches, LSO %d, settled %v; want 1, LSO 1, settled", len(r.Batches), r.LastStableOffset, settled)
	}
	done = slow(func() {
		if err := e.endTxn("app", prod, true); err != nil {
			t.Error(err)
		}
	})
	if _, settled := find(1, 0, true); settled {
		t.Error("read_committed settled while its partition's marker waits for the log")
	}
	if r, settled := find(1, 0, false); len(r.Batches) != 2 || r.HighWatermark != 2 || !settled {
		t.Fatalf("read_uncommitted, the marker in flight: %d batches to %d, settled %v; want 2 to 2 (the marker's commit is below), settled", len(r.Batches), r.HighWatermark, settled)
	}
	done()
	if r, settled := find(1, 0, true); r.LastStableOffset != 3 || !settled {
		t.Fatalf("once the marker returned: LSO %d, settled %v; want 3, settled", r.LastStableOffset, settled)
	}
}
