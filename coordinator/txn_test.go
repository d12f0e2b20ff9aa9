package coordinator

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/objectstore"
	"github.com/floe-io/floe/record"
)

// txnEnv is a coordinator with a marker store and no background loops.
func txnEnv(t *testing.T) (*testEnv, *objectstore.Memory) {
	store := objectstore.NewMemory()
	e := newEnv(t, func(o *Options) {
		o.Markers = store
		o.TxnCheckInterval = -1
		o.TierInterval = -1
	})
	return e, store
}

func txnBatch(txnID string, id coordapi.TopicID, partition, delta int32, pid int64, epoch int16, seq int32) coordapi.CommitBatch {
	b := idem(id, partition, delta, pid, epoch, seq)
	b.Transactional, b.TransactionalID = true, txnID
	return b
}

func wantCode(t *testing.T, what string, got int16, want *kerr.Error) {
	t.Helper()
	var code int16
	if want != nil {
		code = want.Code
	}
	if got != code {
		t.Fatalf("%s: error code %d (%v), want %v", what, got, kerr.ErrorForCode(got), want)
	}
}

func (e *testEnv) initTxn(id string, timeoutMs int32) coordapi.InitProducerIDResponse {
	e.t.Helper()
	r, err := e.c.InitProducerID(context.Background(), coordapi.InitProducerIDRequest{TransactionalID: &id, TimeoutMs: timeoutMs, ProducerID: -1, ProducerEpoch: -1})
	if err != nil {
		e.t.Fatalf("InitProducerID(%s): %v", id, err)
	}
	return r
}

func (e *testEnv) addParts(id string, p coordapi.InitProducerIDResponse, tps ...coordapi.TopicPartition) []int16 {
	e.t.Helper()
	codes, err := e.c.AddPartitionsToTxn(context.Background(), coordapi.AddPartitionsRequest{
		TxnProducer: coordapi.TxnProducer{TransactionalID: id, ProducerID: p.ProducerID, ProducerEpoch: p.ProducerEpoch}, Partitions: tps})
	if err != nil {
		e.t.Fatalf("AddPartitionsToTxn(%s): %v", id, err)
	}
	return codes
}

func (e *testEnv) endTxn(id string, p coordapi.InitProducerIDResponse, commit bool) error {
	return e.c.EndTxn(context.Background(), coordapi.EndTxnRequest{
		TxnProducer: coordapi.TxnProducer{TransactionalID: id, ProducerID: p.ProducerID, ProducerEpoch: p.ProducerEpoch}, Commit: commit})
}

func (e *testEnv) findRC(id coordapi.TopicID, partition int32, offset int64) coordapi.FindBatchesResponse {
	e.t.Helper()
	r, err := e.c.FindBatches(context.Background(), coordapi.FindBatchesRequest{TopicID: id, Partition: partition, Offset: offset, MaxBytes: 1 << 20, ReadCommitted: true})
	if err != nil {
		e.t.Fatalf("FindBatches read_committed: %v", err)
	}
	return r
}

func TestTransactionCommitAndAbort(t *testing.T) {
	e, store := txnEnv(t)
	tp := e.topic("orders", 2, nil)
	p0 := coordapi.TopicPartition{TopicID: tp.ID, Partition: 0}
	ctx := context.Background()

	prod := e.initTxn("etl", 60000)
	if prod.ProducerEpoch != 0 {
		t.Fatalf("first epoch %d", prod.ProducerEpoch)
	}
	// A transactional batch before its partition is added is refused
	// (KIP-890), and so is one of a producer with no transaction.
	rs := e.commit("wal/early", txnBatch("etl", tp.ID, 0, 4, prod.ProducerID, 0, 0), txnBatch("etl", tp.ID, 0, 0, 999, 0, 0))
	wantCode(t, "batch before AddPartitionsToTxn", rs[0].ErrorCode, kerr.InvalidTxnState)
	wantCode(t, "batch of an unknown transactional producer", rs[1].ErrorCode, kerr.InvalidTxnState)

	if codes := e.addParts("etl", prod, p0); codes[0] != 0 {
		t.Fatalf("AddPartitionsToTxn: %v", codes)
	}
	rs = e.commit("wal/other", txnBatch("not-etl", tp.ID, 0, 4, prod.ProducerID, 0, 0))
	wantCode(t, "batch naming another transactional id", rs[0].ErrorCode, kerr.InvalidProducerIDMapping)
	rs = e.commit("wal/a", txnBatch("etl", tp.ID, 0, 4, prod.ProducerID, 0, 0), plain(tp.ID, 0, 1))
	wantCode(t, "transactional batch", rs[0].ErrorCode, nil)
	st := e.state(tp.ID, 0)
	if st.HighWatermark != 7 || st.LastStableOffset != 0 {
		t.Fatalf("with the transaction open: %+v, want hwm 7 and LSO 0", st)
	}
	if r := e.findRC(tp.ID, 0, 0); len(r.Batches) != 0 || r.LastStableOffset != 0 {
		t.Fatalf("read_committed below an open transaction: %+v", r)
	}
	// Committing writes a marker at offset 7; the LSO moves to the end.
	if err := e.endTxn("etl", prod, true); err != nil {
		t.Fatal(err)
	}
	if err := e.endTxn("etl", prod, true); err != nil {
		t.Fatalf("a retried EndTxn: %v", err)
	}
	if err := e.endTxn("etl", prod, false); !errors.Is(err, kerr.InvalidTxnState) {
		t.Fatalf("aborting a committed transaction: %v", err)
	}
	st = e.state(tp.ID, 0)
	if st.HighWatermark != 8 || st.LastStableOffset != 8 {
		t.Fatalf("after the commit: %+v, want hwm 8, LSO 8", st)
	}
	r := e.findRC(tp.ID, 0, 0)
	if len(r.Batches) != 3 || len(r.Aborted) != 0 || r.Batches[2].BaseOffset != 7 {
		t.Fatalf("read_committed after the commit: %+v", r)
	}
	// The marker is a control batch in the object store.
	data, err := store.GetRange(ctx, r.Batches[2].ObjectKey, r.Batches[2].ByteOffset, int64(r.Batches[2].ByteLength))
	if err != nil {
		t.Fatal(err)
	}
	h, err := record.ParseHeader(data)
	if err != nil || !h.Control() || !h.Transactional() || h.ProducerID != prod.ProducerID {
		t.Fatalf("marker header %+v, %v", h, err)
	}

	// A second transaction, aborted: its range is listed for read_committed.
	if codes := e.addParts("etl", prod, p0); codes[0] != 0 {
		t.Fatal(codes)
	}
	rs = e.commit("wal/b", txnBatch("etl", tp.ID, 0, 2, prod.ProducerID, 0, 5))
	wantCode(t, "second transaction", rs[0].ErrorCode, nil)
	if err := e.endTxn("etl", prod, false); err != nil {
		t.Fatal(err)
	}
	r = e.findRC(tp.ID, 0, 0)
	want := coordapi.AbortedTxn{ProducerID: prod.ProducerID, FirstOffset: 8, LastOffset: 11}
	if len(r.Aborted) != 1 || r.Aborted[0] != want || r.LastStableOffset != 12 {
		t.Fatalf("after the abort: aborted %+v, LSO %d; want %+v, 12", r.Aborted, r.LastStableOffset, want)
	}
	if r := e.findRC(tp.ID, 0, 12); len(r.Aborted) != 0 {
		t.Fatalf("aborted listed past its marker: %+v", r.Aborted)
	}

	// It all survives a restart.
	e.reopen()
	if r := e.findRC(tp.ID, 0, 0); len(r.Aborted) != 1 || r.Aborted[0] != want {
		t.Fatalf("after reopen: %+v", r.Aborted)
	}
	descs, err := e.c.DescribeTransactions(ctx, []string{"etl", "nope"})
	if err != nil {
		t.Fatal(err)
	}
	if descs[0].State != coordapi.TxnCompleteAbort || descs[0].ProducerID != prod.ProducerID || descs[1].ErrorCode != kerr.TransactionalIDNotFound.Code {
		t.Fatalf("describe: %+v", descs)
	}
}

func TestTransactionFencingAndTimeout(t *testing.T) {
	e, _ := txnEnv(t)
	tp := e.topic("t", 1, nil)
	p0 := coordapi.TopicPartition{TopicID: tp.ID, Partition: 0}
	ctx := context.Background()

	old := e.initTxn("app", 60000)
	e.addParts("app", old, p0)
	e.commit("wal/1", txnBatch("app", tp.ID, 0, 0, old.ProducerID, 0, 0))
	if st := e.state(tp.ID, 0); st.LastStableOffset != 0 {
		t.Fatalf("LSO %d", st.LastStableOffset)
	}
	// A new instance of the producer: the open transaction is aborted
	// and the old epoch is fenced everywhere.
	cur := e.initTxn("app", 60000)
	if cur.ProducerID != old.ProducerID || cur.ProducerEpoch <= old.ProducerEpoch {
		t.Fatalf("re-init: %+v after %+v", cur, old)
	}
	if st := e.state(tp.ID, 0); st.LastStableOffset != st.HighWatermark {
		t.Fatalf("the old transaction still holds the LSO: %+v", st)
	}
	if r := e.findRC(tp.ID, 0, 0); len(r.Aborted) != 1 {
		t.Fatalf("old transaction not listed aborted: %+v", r.Aborted)
	}
	if _, err := e.c.AddPartitionsToTxn(ctx, coordapi.AddPartitionsRequest{TxnProducer: coordapi.TxnProducer{TransactionalID: "app",
		ProducerID: old.ProducerID, ProducerEpoch: old.ProducerEpoch}, Partitions: []coordapi.TopicPartition{p0}}); !errors.Is(err, kerr.ProducerFenced) {
		t.Fatalf("fenced producer adds a partition: %v", err)
	}
	if err := e.endTxn("app", old, true); !errors.Is(err, kerr.ProducerFenced) {
		t.Fatalf("fenced producer commits: %v", err)
	}
	e.addParts("app", cur, p0)
	rs := e.commit("wal/2", txnBatch("app", tp.ID, 0, 0, old.ProducerID, old.ProducerEpoch, 1))
	wantCode(t, "fenced producer's batch", rs[0].ErrorCode, kerr.InvalidProducerEpoch)

	// Past its timeout, a transaction is aborted with the epoch bumped.
	e.commit("wal/3", txnBatch("app", tp.ID, 0, 0, cur.ProducerID, cur.ProducerEpoch, 0))
	e.clock.Advance(61 * time.Second)
	if n := e.c.TxnTick(ctx); n != 1 {
		t.Fatalf("TxnTick aborted %d, want 1", n)
	}
	if st := e.state(tp.ID, 0); st.LastStableOffset != st.HighWatermark {
		t.Fatalf("timed-out transaction still open: %+v", st)
	}
	if err := e.endTxn("app", cur, true); !errors.Is(err, kerr.ProducerFenced) {
		t.Fatalf("commit after the timeout abort: %v", err)
	}
	ls, err := e.c.ListTransactions(ctx, []coordapi.TxnState{coordapi.TxnCompleteAbort}, nil)
	if err != nil || len(ls) != 1 || ls[0].TransactionalID != "app" {
		t.Fatalf("list: %+v, %v", ls, err)
	}
	prods, err := e.c.DescribeProducers(ctx, tp.ID, 0)
	if err != nil || len(prods) != 1 || prods[0].ProducerID != cur.ProducerID || prods[0].CurrentTxnStartOffset != -1 {
		t.Fatalf("describe producers: %+v, %v", prods, err)
	}
}

// TestTransactionKeyIndex: on a kv-indexed topic a transaction's keys take
// effect when it commits and never when it aborts, across a restart.
func TestTransactionKeyIndex(t *testing.T) {
	e, _ := txnEnv(t)
	e.c.opts.KVIndexEnabled = true
	tp, err := e.c.CreateTopic(context.Background(), coordapi.CreateTopicRequest{Name: "kv", Partitions: 1, ReplicationFactor: -1,
		Configs: map[string]string{"cleanup.policy": "compact", coordapi.ConfigKVIndexEnabled: "true"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	lookup := func(key string) (int64, bool) {
		t.Helper()
		off, _, found, err := e.c.KvLookup(ctx, tp.ID, 0, []byte(key))
		if err != nil {
			t.Fatal(err)
		}
		return off, found
	}
	keyed := func(b coordapi.CommitBatch, key string) coordapi.CommitBatch {
		b.Keys = []coordapi.KeyEntry{{Key: []byte(key)}}
		return b
	}
	plainKeyed := keyed(plain(tp.ID, 0, 0), "k")
	e.commit("wal/0", plainKeyed) // k at 0, outside any transaction
	prod := e.initTxn("kv-app", 60000)
	p0 := coordapi.TopicPartition{TopicID: tp.ID, Partition: 0}

	e.addParts("kv-app", prod, p0)
	e.commit("wal/1", keyed(txnBatch("kv-app", tp.ID, 0, 0, prod.ProducerID, 0, 0), "k")) // k at 1, aborted below
	if off, _ := lookup("k"); off != 0 {
		t.Fatalf("an open transaction's key took effect: k at %d", off)
	}
	if err := e.endTxn("kv-app", prod, false); err != nil {
		t.Fatal(err)
	}
	if off, _ := lookup("k"); off != 0 {
		t.Fatalf("an aborted overwrite took effect: k at %d", off)
	}

	e.addParts("kv-app", prod, p0)
	e.commit("wal/2", keyed(txnBatch("kv-app", tp.ID, 0, 0, prod.ProducerID, 0, 1), "k")) // k at 3
	e.reopen()                                                                            // the held keys survive it
	if off, _ := lookup("k"); off != 0 {
		t.Fatalf("after reopen, an open transaction's key took effect: k at %d", off)
	}
	if err := e.endTxn("kv-app", prod, true); err != nil {
		t.Fatal(err)
	}
	if off, found := lookup("k"); !found || off != 3 {
		t.Fatalf("committed overwrite: k at %d (found %v), want 3", off, found)
	}

	// A write committed while a transaction holding the key is open wins
	// over the transaction's older value, a live value or a tombstone.
	for i, plainTombstone := range []bool{false, true} {
		e.addParts("kv-app", prod, p0)
		e.commit(fmt.Sprintf("wal/old-%d", i), keyed(txnBatch("kv-app", tp.ID, 0, 0, prod.ProducerID, 0, int32(2+2*i)), "k"))
		newer := keyed(plain(tp.ID, 0, 0), "k")
		newer.Keys[0].Tombstone = plainTombstone
		rs := e.commit(fmt.Sprintf("wal/new-%d", i), newer)
		if err := e.endTxn("kv-app", prod, true); err != nil {
			t.Fatal(err)
		}
		off, found := lookup("k")
		switch {
		case plainTombstone && found:
			t.Fatalf("a newer tombstone lost to an older committed transaction: k at %d", off)
		case !plainTombstone && (!found || off != rs[0].BaseOffset):
			t.Fatalf("a newer value lost to an older committed transaction: k at %d (found %v), want %d", off, found, rs[0].BaseOffset)
		}
	}
}

// TestAbortedPruned: once the log start passes an aborted transaction's
// marker, the transaction is forgotten, and stays so after a restart.
func TestAbortedPruned(t *testing.T) {
	e, _ := txnEnv(t)
	tp := e.topic("p", 1, nil)
	ctx := context.Background()
	prod := e.initTxn("pr", 60000)
	p0 := coordapi.TopicPartition{TopicID: tp.ID, Partition: 0}
	for i := range 2 {
		e.addParts("pr", prod, p0)
		e.commit(fmt.Sprintf("wal/p%d", i), txnBatch("pr", tp.ID, 0, 1, prod.ProducerID, 0, int32(2*i)))
		if err := e.endTxn("pr", prod, false); err != nil {
			t.Fatal(err)
		}
	}
	// Offsets 0-1 and marker 2, then 3-4 and marker 5.
	if r := e.findRC(tp.ID, 0, 0); len(r.Aborted) != 2 {
		t.Fatalf("aborted %+v, want 2", r.Aborted)
	}
	if _, err := e.c.DeleteRecords(ctx, tp.ID, 0, 3); err != nil {
		t.Fatal(err)
	}
	e.c.TxnTick(ctx)
	check := func(when string) {
		t.Helper()
		if r := e.findRC(tp.ID, 0, 3); len(r.Aborted) != 1 || r.Aborted[0].FirstOffset != 3 {
			t.Fatalf("%s: aborted %+v, want only the one from 3", when, r.Aborted)
		}
		e.c.mu.RLock()
		n := len(e.c.mu.aborted[partKey{tp.ID, 0}])
		e.c.mu.RUnlock()
		if n != 1 {
			t.Fatalf("%s: %d aborted transactions kept, want 1", when, n)
		}
	}
	check("after the prune")
	e.reopen()
	check("after reopen")
}

// TestTxnTickExpires: the transaction loop, once per check interval on
// the coordinator's clock, drops the producer states idle for
// ProducerIDExpiration (not the one of a transaction still open) and the
// transactional ids with no transaction open that have not changed for
// TransactionalIDExpiration (an open one is aborted at its timeout
// instead, and kept). The expiry survives a restart, and the expired id's
// producer must register again, getting a new producer id.
func TestTxnTickExpires(t *testing.T) {
	e, _ := txnEnv(t)
	e.opts.ProducerIDExpiration = 24 * time.Hour
	e.opts.TransactionalIDExpiration = 7 * 24 * time.Hour
	e.opts.ExpirationCheckInterval = time.Hour
	e.reopen()
	tp := e.topic("t", 1, nil)
	p0 := coordapi.TopicPartition{TopicID: tp.ID, Partition: 0}
	ctx := context.Background()
	list := func() string {
		t.Helper()
		ls, err := e.c.ListTransactions(ctx, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, l := range ls {
			ids = append(ids, fmt.Sprintf("%s:%s", l.TransactionalID, l.State))
		}
		return fmt.Sprint(ids)
	}
	producers := func() []int64 {
		t.Helper()
		ps, err := e.c.DescribeProducers(ctx, tp.ID, 0)
		if err != nil {
			t.Fatal(err)
		}
		var ids []int64
		for _, p := range ps {
			ids = append(ids, p.ProducerID)
		}
		slices.Sort(ids)
		return ids
	}

	done := e.initTxn("done", 60000)
	e.addParts("done", done, p0)
	e.commit("wal/1", txnBatch("done", tp.ID, 0, 0, done.ProducerID, done.ProducerEpoch, 0))
	if err := e.endTxn("done", done, true); err != nil {
		t.Fatal(err)
	}
	e.initTxn("idle", 60000)
	e.commit("wal/2", idem(tp.ID, 0, 0, 900, 0, 0)) // an idempotent producer
	e.c.TxnTick(ctx)                                // the first check: nothing is idle yet

	// Five days on, "busy" opens a transaction, and a day later every other
	// producer state is past its expiration, not the ids.
	e.clock.Advance(5 * 24 * time.Hour)
	busy := e.initTxn("busy", 60000)
	e.addParts("busy", busy, p0)
	e.commit("wal/3", txnBatch("busy", tp.ID, 0, 0, busy.ProducerID, busy.ProducerEpoch, 0))
	if got, want := producers(), []int64{done.ProducerID, busy.ProducerID, 900}; !slices.Equal(got, want) {
		t.Fatalf("producer states before the expiry: %v, want %v", got, want)
	}
	e.clock.Advance(24*time.Hour + time.Second)
	e.c.TxnTick(ctx) // expires, then aborts busy's transaction at its timeout
	if got, want := list(), "[busy:CompleteAbort done:CompleteCommit idle:Empty]"; got != want {
		t.Fatalf("after a day: ids %s, want %s", got, want)
	}
	if got, want := producers(), []int64{busy.ProducerID}; !slices.Equal(got, want) {
		t.Fatalf("after a day: producer states %v, want %v (its transaction was open)", got, want)
	}
	// Past 7 days since their last change, "done" and "idle" go; "busy"
	// changed a day ago.
	e.clock.Advance(24 * time.Hour)
	e.c.TxnTick(ctx)
	if got, want := list(), "[busy:CompleteAbort]"; got != want {
		t.Fatalf("after the expiration: ids %s, want %s", got, want)
	}
	e.reopen()
	if got, want := list(), "[busy:CompleteAbort]"; got != want {
		t.Fatalf("after a restart: ids %s, want %s", got, want)
	}
	d, err := e.c.DescribeTransactions(ctx, []string{"done"})
	if err != nil {
		t.Fatal(err)
	}
	wantCode(t, "describe an expired id", d[0].ErrorCode, kerr.TransactionalIDNotFound)
	if err := e.endTxn("done", done, true); !errors.Is(err, kerr.InvalidProducerIDMapping) {
		t.Fatalf("EndTxn with an expired id: %v, want INVALID_PRODUCER_ID_MAPPING", err)
	}
	again := e.initTxn("done", 60000)
	if again.ProducerID == done.ProducerID || again.ProducerEpoch != 0 {
		t.Fatalf("re-registered id: %+v, want a new producer id at epoch 0 (was %+v)", again, done)
	}
}
