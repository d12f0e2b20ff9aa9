package coordinator

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/coordinator/handover"
	"github.com/floe-io/floe/objectstore"
)

// handoverShards is a cluster growing from 2 shards to 3 in process:
// shards 0 and 1 of 2, and a new shard 2 of 3, both others following
// shard 0's topics and transactions.
type handoverShards struct {
	s0, s1, s2 *testEnv
}

func newHandoverShards(t *testing.T) *handoverShards {
	h := &handoverShards{}
	h.s0 = newEnv(t, func(o *Options) {
		o.Shards, o.Shard, o.KVIndexEnabled, o.Markers, o.TxnCheckInterval, o.TierInterval = 2, 0, true, objectstore.NewMemory(), -1, -1
		o.ShardPeers = []MarkerPeer{markerPeerOf(func() *Coordinator { return h.s1.c })}
	})
	follower := func(shards, shard int) func(*Options) {
		return func(o *Options) {
			o.Shards, o.Shard, o.TxnCheckInterval, o.TierInterval = shards, shard, -1, -1
			o.TopicOwner, o.TxnOwner, o.FollowInterval, o.Now = h.s0.c, h.s0.c, time.Hour, h.s0.clock.Now
		}
	}
	h.s1 = newEnv(t, follower(2, 1))
	h.s2 = newEnv(t, follower(3, 2))
	return h
}

// move hands partition p over from one shard to another (handover.Move).
func move(t *testing.T, from, to *testEnv, id coordapi.TopicID, p int32, chunkBytes int) (chunks int) {
	t.Helper()
	n, err := handover.Move(context.Background(), from.c, to.c, id, p, 1, chunkBytes)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// partitionView is what a shard answers of a partition: the reads the
// handover must keep identical.
type partitionView struct {
	State                 coordapi.PartitionState
	Batches, Committed    coordapi.FindBatchesResponse
	Earliest, Latest, Max int64
	MaxTs                 int64
	K1, K2, K3            coordapi.KvGetResult
	Producers             []coordapi.ProducerDescription
}

func (e *testEnv) view(id coordapi.TopicID, p int32) (partitionView, error) {
	ctx := context.Background()
	var v partitionView
	var err error
	if v.State, err = e.c.PartitionState(ctx, id, p); err != nil {
		return v, err
	}
	if v.Batches, err = e.c.FindBatches(ctx, coordapi.FindBatchesRequest{TopicID: id, Partition: p, Offset: 0, MaxBytes: 1 << 20}); err != nil {
		return v, err
	}
	if v.Committed, err = e.c.FindBatches(ctx, coordapi.FindBatchesRequest{TopicID: id, Partition: p, Offset: 0, MaxBytes: 1 << 20, ReadCommitted: true}); err != nil {
		return v, err
	}
	if v.Earliest, _, err = e.c.ListOffset(ctx, id, p, coordapi.TimestampEarliest); err != nil {
		return v, err
	}
	if v.Latest, _, err = e.c.ListOffset(ctx, id, p, coordapi.TimestampLatest); err != nil {
		return v, err
	}
	if v.Max, v.MaxTs, err = e.c.ListOffset(ctx, id, p, coordapi.TimestampMax); err != nil {
		return v, err
	}
	for key, dst := range map[string]*coordapi.KvGetResult{"k1": &v.K1, "k2": &v.K2, "k3": &v.K3} {
		if *dst, err = e.c.KvGet(ctx, coordapi.KvGetRequest{TopicID: id, Partition: p, Key: []byte(key)}); err != nil {
			return v, err
		}
	}
	if v.Producers, err = e.c.DescribeProducers(ctx, id, p); err != nil {
		return v, err
	}
	return v, nil
}

// TestHandoverMovesPartition moves a partition holding batches of two
// objects, an idempotent producer's state, an open transaction with held
// keys, and key index entries, from shard 1 to a new shard 2, its export
// interrupted once and a chunk sent twice: the new shard answers every
// read as the old did, deduplicates the producer's retried batch, takes
// the transaction's marker; the old refuses the partition
// (NOT_LEADER_OR_FOLLOWER), and each object is live on the shard whose
// partitions are in it; all of it as well after both restart.
func TestHandoverMovesPartition(t *testing.T) {
	ctx := context.Background()
	h := newHandoverShards(t)
	tp := h.s0.topic("moving", 64, kvConfigs)
	for _, e := range []*testEnv{h.s1, h.s2} {
		if _, err := e.c.FollowTopics(ctx, h.s0.c); err != nil {
			t.Fatal(err)
		}
	}
	p, q := int32(-1), int32(-1) // p moves from shard 1 to 2, q stays on 1
	for i := range int32(64) {
		switch {
		case coordapi.ShardOf(tp.ID, i, 2) != 1:
		case coordapi.ShardOf(tp.ID, i, 3) == 2 && p < 0:
			p = i
		case coordapi.ShardOf(tp.ID, i, 3) == 1 && q < 0:
			q = i
		}
	}
	if p < 0 || q < 0 {
		t.Fatalf("no partition moving (%d) or staying (%d)", p, q)
	}

	h.s1.commit("wal/a", keyed(tp.ID, p, "k1", "k2"), keyed(tp.ID, q, "q1"))
	idemBatch := func(seq int32, keys ...string) coordapi.CommitBatch {
		b := keyed(tp.ID, p, keys...)
		b.ProducerID, b.ProducerEpoch, b.BaseSequence = 900, 0, seq
		return b
	}
	first := h.s1.commit("wal/b", idemBatch(0, "k1"), idemBatch(1, "k2"))
	prod := h.s0.initTxn("etl", 60000)
	for _, c := range h.s0.addParts("etl", prod, coordapi.TopicPartition{TopicID: tp.ID, Partition: p}) {
		wantCode(t, "add partition", c, nil)
	}
	tb := txnBatch("etl", tp.ID, p, 0, prod.ProducerID, prod.ProducerEpoch, 0)
	tb.Keys = []coordapi.KeyEntry{{Key: []byte("k3")}}
	wantCode(t, "transactional batch", h.s1.commit("wal/c", tb)[0].ErrorCode, nil)

	before, err := h.s1.view(tp.ID, p)
	if err != nil {
		t.Fatal(err)
	}
	if before.State.HighWatermark != 5 || before.State.LastStableOffset != 4 || !before.K1.Found || before.K3.Found {
		t.Fatalf("before the move: %+v", before)
	}

	// An export interrupted after its first chunk, started again (the
	// import drops what the first pass left), one chunk imported twice.
	if err := h.s1.c.FencePartition(ctx, tp.ID, p, 1); err != nil {
		t.Fatal(err)
	}
	wantCode(t, "commit while fenced", h.s1.commit("wal/fenced", keyed(tp.ID, p, "k9"))[0].ErrorCode, kerr.NotLeaderForPartition)
	if _, err := h.s1.c.DeleteRecords(ctx, tp.ID, p, 1); err == nil {
		t.Fatal("DeleteRecords of a fenced partition succeeded")
	} else {
		wantKerr(t, err, kerr.NotLeaderForPartition)
	}
	ch, err := h.s1.c.ExportPartition(ctx, tp.ID, p, nil, 64)
	if err != nil || ch.Done {
		t.Fatalf("first chunk: done %v, %v", ch.Done, err)
	}
	if err := h.s2.c.ImportPartition(ctx, &ch); err != nil {
		t.Fatal(err)
	}
	if err := h.s2.c.ImportPartition(ctx, &ch); err != nil {
		t.Fatal(err)
	}
	ch2, err := h.s1.c.ExportPartition(ctx, tp.ID, p, ch.Cursor, 64)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := h.s2.c.ImportPartition(ctx, &ch2); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := h.s2.c.PartitionState(ctx, tp.ID, p); err == nil {
		t.Fatal("the new shard serves a partition whose import is not done")
	}
	if n := move(t, h.s1, h.s2, tp.ID, p, 64); n < 3 {
		t.Fatalf("the partition moved in %d chunks, want several", n)
	}

	check := func(step string) {
		t.Helper()
		after, err := h.s2.view(tp.ID, p)
		if err != nil {
			t.Fatalf("%s: the new shard: %v", step, err)
		}
		if !reflect.DeepEqual(after, before) {
			t.Fatalf("%s: the new shard answers\n%+v\nthe old answered\n%+v", step, after, before)
		}
		_, err = h.s1.view(tp.ID, p)
		wantKerr(t, err, kerr.NotLeaderForPartition)
		if ch, err := h.s1.c.ExportPartition(ctx, tp.ID, p, nil, 0); err != nil || !ch.Gone || len(ch.Rows) > 0 {
			t.Fatalf("%s: a dropped partition exported again: gone %v, %d rows, %v", step, ch.Gone, len(ch.Rows), err)
		} else if err := h.s2.c.ImportPartition(ctx, &ch); err == nil {
			t.Fatalf("%s: the new shard imported a gone partition's chunk", step)
		}
		wantCode(t, step+": commit on the old shard", h.s1.commit("wal/late", keyed(tp.ID, p, "k9"))[0].ErrorCode, kerr.NotLeaderForPartition)
		// Each object is live where some partition of it is: wal/a on both
		// (q stays), wal/b and wal/c on the new shard alone.
		for _, c := range []struct {
			e    *testEnv
			key  string
			live int64
		}{{h.s1, "wal/a", batchLen}, {h.s2, "wal/a", batchLen}, {h.s1, "wal/b", 0}, {h.s2, "wal/b", 2 * batchLen}, {h.s2, "wal/c", batchLen}} {
			if o := c.e.object(c.key); o.LiveBytes != c.live || (c.live > 0) != (o.State == ObjectLive) {
				t.Fatalf("%s: shard %d's %s: %+v, want %d live bytes", step, c.e.opts.Shard, c.key, o, c.live)
			}
		}
	}
	check("after the move")
	h.s1.reopen()
	h.s2.reopen()
	check("after both restart")

	// The producer's retried batch is a duplicate on the new shard; its
	// next is appended. The transaction's marker commits it there, with
	// its held key.
	dup := h.s2.commit("wal/b-again", idemBatch(0, "k1"), idemBatch(1, "k2"), idemBatch(2, "k1"))
	if dup[0].BaseOffset != first[0].BaseOffset || dup[1].BaseOffset != first[1].BaseOffset || dup[2].BaseOffset != 5 {
		t.Fatalf("retried batches answered %s, first answered %s", baseOffsets(dup), baseOffsets(first))
	}
	marker := coordapi.CommitBatch{TopicID: tp.ID, Partition: p, ProducerID: prod.ProducerID, ProducerEpoch: prod.ProducerEpoch,
		BaseSequence: -1, MaxTimestamp: 1000, Transactional: true, Control: true, Commit: true}
	wantCode(t, "marker on the new shard", h.s2.commit("wal/marker", marker)[0].ErrorCode, nil)
	after, err := h.s2.view(tp.ID, p)
	if err != nil {
		t.Fatal(err)
	}
	if after.State.LastStableOffset != 7 || after.State.HighWatermark != 7 || !after.K3.Found || after.K3.Offset != 4 {
		t.Fatalf("after the marker: %+v", after)
	}
	if st := h.s1.state(tp.ID, q); st.HighWatermark != 1 {
		t.Fatalf("the partition staying on shard 1: %+v", st)
	}
}

// TestHandoverRefusals: an export of a partition not fenced, an import
// over a partition the shard serves, a later chunk with no import in
// progress and a drop of a partition not fenced are refused.
func TestHandoverRefusals(t *testing.T) {
	ctx := context.Background()
	h := newHandoverShards(t)
	tp := h.s0.topic("t", 16, nil)
	for _, e := range []*testEnv{h.s1, h.s2} {
		if _, err := e.c.FollowTopics(ctx, h.s0.c); err != nil {
			t.Fatal(err)
		}
	}
	on := func(shards, shard int) int32 {
		for i := range int32(16) {
			if coordapi.ShardOf(tp.ID, i, shards) == shard {
				return i
			}
		}
		t.Fatalf("no partition on shard %d of %d", shard, shards)
		return -1
	}
	p1 := on(2, 1)
	h.s1.commit("wal/a", plain(tp.ID, p1, 0))
	if _, err := h.s1.c.ExportPartition(ctx, tp.ID, p1, nil, 0); err == nil {
		t.Fatal("export of a partition not fenced")
	}
	if err := h.s1.c.DropPartition(ctx, tp.ID, p1); err == nil {
		t.Fatal("drop of a partition not fenced")
	}
	if err := h.s1.c.FencePartition(ctx, tp.ID, on(2, 0), 1); err == nil {
		t.Fatal("fence of another shard's partition")
	}
	if err := h.s1.c.FencePartition(ctx, tp.ID, p1, 1); err != nil {
		t.Fatal(err)
	}
	ch, err := h.s1.c.ExportPartition(ctx, tp.ID, p1, nil, 0)
	if err != nil || !ch.Done {
		t.Fatalf("export: done %v, %v", ch.Done, err)
	}
	// Shard 0 serves its own partitions: an import over one with data is
	// refused.
	p0 := on(2, 0)
	h.s0.commit("wal/z", plain(tp.ID, p0, 0))
	over := ch
	over.Partition = p0
	over.Rows, over.Objects = nil, nil
	if err := h.s0.c.ImportPartition(ctx, &over); err == nil {
		t.Fatal("an import over a partition the shard serves")
	}
	later := ch
	later.First = false
	if err := h.s2.c.ImportPartition(ctx, &later); err == nil {
		t.Fatal("a later chunk with no import in progress")
	}
	// The fenced shard refuses to import the partition it moves out.
	if err := h.s1.c.ImportPartition(ctx, &ch); err == nil {
		t.Fatal("an import into the shard the partition leaves")
	}
}

// TestHandoverMovesSegmentsAndPostings moves a hierarchical topic's
// partition whose oldest batches were consolidated into a segment: the
// new shard answers its segment and WAL batches, ListOffsets and the
// postings of each key as the old did, and the segment object is live
// there alone.
func TestHandoverMovesSegmentsAndPostings(t *testing.T) {
	ctx := context.Background()
	h := newHandoverShards(t)
	tp := h.s0.topic("hier", 64, map[string]string{coordapi.ConfigHierarchicalEnabled: "true", "retention.ms": "-1"})
	for _, e := range []*testEnv{h.s1, h.s2} {
		if _, err := e.c.FollowTopics(ctx, h.s0.c); err != nil {
			t.Fatal(err)
		}
	}
	p := int32(-1)
	for i := range int32(64) {
		if coordapi.ShardOf(tp.ID, i, 2) == 1 && coordapi.ShardOf(tp.ID, i, 3) == 2 {
			p = i
			break
		}
	}
	if p < 0 {
		t.Fatal("no partition moving from shard 1 to 2")
	}
	h.s1.commit("wal/a", keyed(tp.ID, p, "x", "y"), keyed(tp.ID, p, "x"))
	h.s1.commit("wal/b", keyed(tp.ID, p, "y"))
	h.s0.clock.Advance(21 * time.Minute) // past the WAL retention: consolidated
	if err := h.s1.c.TierTick(ctx); err != nil {
		t.Fatal(err)
	}
	seg := 0
	h.s1.consolidateAll(&seg)
	if seg == 0 {
		t.Fatal("nothing consolidated")
	}
	h.s1.commit("wal/c", keyed(tp.ID, p, "x"))

	type reads struct {
		Batches      coordapi.FindBatchesResponse
		Tail         coordapi.FindBatchesResponse
		X, Y         string
		Max, MaxTs   int64
		State        coordapi.PartitionState
		LatestTiered int64
	}
	read := func(e *testEnv) (r reads, err error) {
		if r.State, err = e.c.PartitionState(ctx, tp.ID, p); err != nil {
			return r, err
		}
		if r.Batches, err = e.c.FindBatches(ctx, coordapi.FindBatchesRequest{TopicID: tp.ID, Partition: p, MaxBytes: 1 << 20}); err != nil {
			return r, err
		}
		if r.Tail, err = e.c.FindBatches(ctx, coordapi.FindBatchesRequest{TopicID: tp.ID, Partition: p, Offset: r.State.HighWatermark - 1, MaxBytes: 1 << 20}); err != nil {
			return r, err
		}
		if r.X, err = e.keyBatches(tp.ID, p, "x", 0, 1<<20); err != nil {
			return r, err
		}
		if r.Y, err = e.keyBatches(tp.ID, p, "y", 0, 1<<20); err != nil {
			return r, err
		}
		if r.Max, r.MaxTs, err = e.c.ListOffset(ctx, tp.ID, p, coordapi.TimestampMax); err != nil {
			return r, err
		}
		r.LatestTiered, _, err = e.c.ListOffset(ctx, tp.ID, p, coordapi.TimestampLatestTiered)
		return r, err
	}
	before, err := read(h.s1)
	if err != nil {
		t.Fatal(err)
	}
	if len(before.Batches.Batches) == 0 || !before.Batches.Batches[0].Segment || before.State.HighWatermark != 5 {
		t.Fatalf("before the move: %+v", before)
	}
	move(t, h.s1, h.s2, tp.ID, p, 0)
	after, err := read(h.s2)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(after, before) {
		t.Fatalf("the new shard answers\n%+v\nthe old answered\n%+v", after, before)
	}
	segKey := before.Batches.Batches[0].ObjectKey
	if o := h.s2.object(segKey); o.State != ObjectLive || o.LiveBytes == 0 {
		t.Fatalf("the segment on the new shard: %+v", o)
	}
	if o := h.s1.object(segKey); o.State != ObjectGarbage || o.LiveBytes != 0 {
		t.Fatalf("the segment on the old shard: %+v", o)
	}
	// The new shard plans the partition's tier from here: its next
	// consolidation takes the WAL batch moved with it.
	h.s0.clock.Advance(21 * time.Minute)
	if err := h.s2.c.TierTick(ctx); err != nil {
		t.Fatal(err)
	}
	n := seg
	h.s2.consolidateAll(&seg)
	if seg == n {
		t.Fatal("the new shard consolidated nothing of the moved partition")
	}
	if r, err := read(h.s2); err != nil || r.State != before.State {
		t.Fatalf("after the new shard's consolidation: %+v, %v", r, err)
	}
}

// TestHandoverSurvivesRestarts restarts both shards in the middle of a
// move: the old keeps the partition fenced, the new goes on with the
// import where it was (its handover row says one is in progress), and
// the partition is served by the new shard once the last chunk is in.
func TestHandoverSurvivesRestarts(t *testing.T) {
	ctx := context.Background()
	h := newHandoverShards(t)
	tp := h.s0.topic("t", 64, nil)
	for _, e := range []*testEnv{h.s1, h.s2} {
		if _, err := e.c.FollowTopics(ctx, h.s0.c); err != nil {
			t.Fatal(err)
		}
	}
	p := int32(-1)
	for i := range int32(64) {
		if coordapi.ShardOf(tp.ID, i, 2) == 1 && coordapi.ShardOf(tp.ID, i, 3) == 2 {
			p = i
			break
		}
	}
	for i := range 4 {
		h.s1.commit("wal/"+string(rune('a'+i)), plain(tp.ID, p, 1))
	}
	want := h.s1.state(tp.ID, p)
	if err := h.s1.c.FencePartition(ctx, tp.ID, p, 1); err != nil {
		t.Fatal(err)
	}
	ch, err := h.s1.c.ExportPartition(ctx, tp.ID, p, nil, 64)
	if err != nil || ch.Done {
		t.Fatalf("first chunk: done %v, %v", ch.Done, err)
	}
	if err := h.s2.c.ImportPartition(ctx, &ch); err != nil {
		t.Fatal(err)
	}
	h.s1.reopen()
	h.s2.reopen()
	wantCode(t, "commit on the fenced shard after its restart", h.s1.commit("wal/x", plain(tp.ID, p, 0))[0].ErrorCode, kerr.NotLeaderForPartition)
	if _, err := h.s2.c.PartitionState(ctx, tp.ID, p); err == nil {
		t.Fatal("the new shard serves the partition mid-import after its restart")
	}
	for cursor := ch.Cursor; ; {
		ch, err := h.s1.c.ExportPartition(ctx, tp.ID, p, cursor, 64)
		if err != nil {
			t.Fatal(err)
		}
		if err := h.s2.c.ImportPartition(ctx, &ch); err != nil {
			t.Fatalf("import after the restart: %v", err)
		}
		if ch.Done {
			break
		}
		cursor = ch.Cursor
	}
	if err := h.s1.c.DropPartition(ctx, tp.ID, p); err != nil {
		t.Fatal(err)
	}
	if got := h.s2.state(tp.ID, p); got != want {
		t.Fatalf("the new shard: %+v, want %+v", got, want)
	}
	for i := range 4 {
		key := "wal/" + string(rune('a'+i))
		if o := h.s2.object(key); o.LiveBytes != batchLen {
			t.Fatalf("%s on the new shard: %+v", key, o)
		}
	}
	if r := h.s2.commit("wal/y", plain(tp.ID, p, 0)); r[0].BaseOffset != want.HighWatermark {
		t.Fatalf("the next commit on the new shard: %s, want offset %d", baseOffsets(r), want.HighWatermark)
	}
}
