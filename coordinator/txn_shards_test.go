package coordinator

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/objectstore"
)

// markerPeerOf is a MarkerPeer calling the coordinator get returns.
type markerPeerOf func() *Coordinator

func (p markerPeerOf) CommitObject(ctx context.Context, req *coordapi.CommitRequest) (*coordapi.CommitResponse, error) {
	return p().CommitObject(ctx, req)
}

// TestTransactionAcrossShards runs transactions over partitions of two
// shards: shard 0's transaction coordinator decides them and writes the
// markers on each shard; shard 1 checks a producer's transactional batches
// against the view it asks shard 0 for. A committed transaction is
// visible to read_committed on both shards, an aborted one is listed as
// aborted on both, and a batch of the aborted transaction arriving at
// shard 1 after its marker is refused there.
func TestTransactionAcrossShards(t *testing.T) {
	var shard1 *testEnv
	shard0 := newEnv(t, func(o *Options) {
		o.Shards, o.Shard, o.Markers, o.TxnCheckInterval, o.TierInterval = 2, 0, objectstore.NewMemory(), -1, -1
		o.ShardPeers = []MarkerPeer{markerPeerOf(func() *Coordinator { return shard1.c })}
	})
	shard1 = newEnv(t, func(o *Options) {
		o.Shards, o.Shard, o.TxnCheckInterval, o.TierInterval = 2, 1, -1, -1
		o.TopicOwner, o.TxnOwner, o.FollowInterval = shard0.c, shard0.c, time.Hour
	})
	tp := shard0.topic("tx", 24, nil) // a shard has none of 24 with p < 1e-6 (of 8: 0.8%)
	on := func(s int) coordapi.TopicPartition {
		for p := range int32(24) {
			if coordapi.ShardOf(tp.ID, p, 2) == s {
				return coordapi.TopicPartition{TopicID: tp.ID, Partition: p}
			}
		}
		t.Fatalf("no partition on shard %d", s)
		return coordapi.TopicPartition{}
	}
	p0, p1 := on(0), on(1)
	commitOn := func(e *testEnv, key string, b coordapi.CommitBatch) coordapi.BatchResult {
		t.Helper()
		return e.commit(key, b)[0]
	}

	prod := shard0.initTxn("etl", 60000)
	wantCodes := func(got []int16) {
		t.Helper()
		for _, c := range got {
			wantCode(t, "add partition", c, nil)
		}
	}
	wantCodes(shard0.addParts("etl", prod, p0, p1))
	r0 := commitOn(shard0, "wal/a0", txnBatch("etl", tp.ID, p0.Partition, 4, prod.ProducerID, prod.ProducerEpoch, 0))
	r1 := commitOn(shard1, "wal/a1", txnBatch("etl", tp.ID, p1.Partition, 4, prod.ProducerID, prod.ProducerEpoch, 0))
	wantCode(t, "transactional batch on shard 0", r0.ErrorCode, nil)
	wantCode(t, "transactional batch on shard 1 (its view asked of shard 0)", r1.ErrorCode, nil)
	if got := shard1.findRC(tp.ID, p1.Partition, 0); len(got.Batches) != 0 || got.LastStableOffset != 0 {
		t.Fatalf("read_committed on shard 1 before the commit: %+v", got)
	}
	if err := shard0.endTxn("etl", prod, true); err != nil {
		t.Fatalf("commit: %v", err)
	}
	for _, c := range []struct {
		e  *testEnv
		tp coordapi.TopicPartition
	}{{shard0, p0}, {shard1, p1}} {
		got := c.e.findRC(tp.ID, c.tp.Partition, 0)
		if got.LastStableOffset != 6 || got.HighWatermark != 6 || len(got.Batches) != 2 {
			t.Fatalf("read_committed of partition %d after the commit: LSO %d HW %d, %d batches", c.tp.Partition, got.LastStableOffset, got.HighWatermark, len(got.Batches))
		}
	}

	// An aborted transaction: listed as aborted on both shards; a late
	// batch of it at shard 1 is refused after its marker.
	wantCodes(shard0.addParts("etl", prod, p0, p1))
	commitOn(shard0, "wal/b0", txnBatch("etl", tp.ID, p0.Partition, 1, prod.ProducerID, prod.ProducerEpoch, 5))
	wantCode(t, "second transaction on shard 1",
		commitOn(shard1, "wal/b1", txnBatch("etl", tp.ID, p1.Partition, 1, prod.ProducerID, prod.ProducerEpoch, 5)).ErrorCode, nil)
	if err := shard0.endTxn("etl", prod, false); err != nil {
		t.Fatalf("abort: %v", err)
	}
	for _, c := range []struct {
		e  *testEnv
		tp coordapi.TopicPartition
	}{{shard0, p0}, {shard1, p1}} {
		got := c.e.findRC(tp.ID, c.tp.Partition, 6)
		if got.LastStableOffset != 9 || len(got.Aborted) != 1 || got.Aborted[0].ProducerID != prod.ProducerID {
			t.Fatalf("partition %d after the abort: LSO %d, aborted %+v", c.tp.Partition, got.LastStableOffset, got.Aborted)
		}
	}
	wantCode(t, "a late batch of the aborted transaction on shard 1",
		commitOn(shard1, "wal/late", txnBatch("etl", tp.ID, p1.Partition, 0, prod.ProducerID, prod.ProducerEpoch, 7)).ErrorCode, kerr.InvalidTxnState)
}
