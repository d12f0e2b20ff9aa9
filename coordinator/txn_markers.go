package coordinator

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/coordinator/txn"
)

// WriteTxnMarkers writes a transaction's markers, commit or abort, into
// every partition of parts: one object holding a control batch per
// partition, put in the object store and committed like a broker's (each
// marker gets its offset, and closes its partition's open transaction). A
// partition whose topic was deleted meanwhile gets none
// (txn.Partitions). On a sharded coordinator (shard 0) the markers of
// another shard's partitions are committed on it, through ShardPeers: the
// transaction is decided in this shard's log first (PrepareCommit or
// PrepareAbort), so a shard that fails has them written again when EndTxn
// is retried, Kafka's two phases.
func (p txnPartitions) WriteTxnMarkers(ctx context.Context, pid int64, epoch int16, parts []coordapi.TopicPartition, commit bool) error {
	c := p.c
	if c.markers == nil {
		return errNoMarkerStore
	}
	nowMs := c.now().UnixMilli()
	var data []byte
	batches := make([]coordapi.CommitBatch, 0, len(parts))
	for _, tp := range parts {
		b, err := txn.MarkerBatch(pid, epoch, commit, nowMs)
		if err != nil {
			return err
		}
		batches = append(batches, coordapi.CommitBatch{
			TopicID: tp.TopicID, Partition: tp.Partition,
			ByteOffset: int64(len(data)), ByteLength: int32(len(b)), MaxTimestamp: nowMs,
			ProducerID: pid, ProducerEpoch: epoch, BaseSequence: -1,
			Transactional: true, Control: true, Commit: commit,
		})
		data = append(data, b...)
	}
	id, err := uuid.NewV7()
	if err != nil {
		id = uuid.New()
	}
	key := coordapi.WALKey(c.markerPrefix, "txn-"+id.String())
	if err := c.markers.Put(ctx, key, data); err != nil {
		return fmt.Errorf("put %s: %w", key, err)
	}
	// One object; on a sharded coordinator each shard commits the markers
	// of its own partitions (Options.ShardPeers), this one first.
	// By the count this shard serves by: a growth commits it here last
	// (grow.go), so a marker of a partition moving is refused by its old
	// shard until then, and EndTxn is retried.
	shards := c.place.Load().shards
	byShard := make([][]coordapi.CommitBatch, shards)
	for _, b := range batches {
		s := coordapi.ShardOf(b.TopicID, b.Partition, shards)
		byShard[s] = append(byShard[s], b)
	}
	for s, bs := range byShard {
		if len(bs) == 0 {
			continue
		}
		req := &coordapi.CommitRequest{ObjectKey: key, ObjectSize: int64(len(data)), BrokerID: -1, Batches: bs}
		var resp *coordapi.CommitResponse
		if s == c.opts.Shard {
			var notices []coordapi.CommitNotice
			var wait func() error
			c.commit.Lock()
			resp, notices, wait, err = c.commitObjectLocked(req)
			c.commit.Unlock()
			if err == nil {
				err = wait()
			}
			if err == nil {
				c.notify(notices)
			}
		} else if s-1 < len(c.opts.ShardPeers) {
			resp, err = c.opts.ShardPeers[s-1].CommitObject(ctx, req)
		} else {
			err = fmt.Errorf("shard %d has no peer to commit its markers on", s)
		}
		if err != nil {
			return fmt.Errorf("commit %s (shard %d): %w", key, s, err)
		}
		for i, r := range resp.Results {
			switch r.ErrorCode {
			case 0, kerr.UnknownTopicID.Code, kerr.UnknownTopicOrPartition.Code:
			default:
				return fmt.Errorf("marker of partition %d: %w", bs[i].Partition, kerr.ErrorForCode(r.ErrorCode))
			}
		}
	}
	return nil
}
