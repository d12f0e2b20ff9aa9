// Package markers writes a transaction's markers, commit or abort, into
// every partition it touched (KIP-98): one object holding a control batch
// per partition, put in the object store and committed like a broker's,
// each marker on the shard that serves its partition:
//
//	txn.MarkerBatch per partition ──▶ one object ──▶ Store.Put
//	  ──▶ commit its markers on each shard (Writer.Local for this one,
//	      first; Peers for the others), by the count this shard serves by
//
// The transaction is decided in shard 0's log before (PrepareCommit or
// PrepareAbort), so a shard that fails has its markers written again when
// EndTxn is retried, Kafka's two phases. The package holds no state and
// takes no locks; Local takes the coordinator's.
package markers

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/coordinator/txn"
)

// Store is where the coordinator writes the objects holding transaction
// markers: the cluster's object store.
type Store interface {
	Put(ctx context.Context, key string, data []byte) error
}

// Peer is another shard, as shard 0 commits the transaction markers of
// its partitions there: *rpc.Client, or a *coordinator.Coordinator.
type Peer interface {
	CommitObject(ctx context.Context, req *coordapi.CommitRequest) (*coordapi.CommitResponse, error)
}

// Writer writes the markers of a coordinator (shard Shard).
type Writer struct {
	// Store takes the markers' objects, under Prefix.
	Store  Store
	Prefix string
	// Shard is this shard; Shards answers the count it serves by, read
	// once the object is put. A growth commits a new count on shard 0
	// last, so a marker of a partition moving is refused by its old
	// shard until then, and EndTxn is retried.
	Shard  int
	Shards func() int
	// Local commits the markers of this shard's partitions.
	Local func(req *coordapi.CommitRequest) (*coordapi.CommitResponse, error)
	// Peers are the other shards, index i-1 for shard i.
	Peers []Peer
}

// Write writes producer pid's markers (epoch epoch; commit or abort) into
// parts, at nowMs. A partition whose topic was deleted meanwhile gets
// none (txn.Partitions).
func (w Writer) Write(ctx context.Context, pid int64, epoch int16, parts []coordapi.TopicPartition, commit bool, nowMs int64) error {
	if len(parts) == 0 {
		return nil // no marker to write: no object, nothing for the collector
	}
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
	key := coordapi.WALKey(w.Prefix, "txn-"+id.String())
	if err := w.Store.Put(ctx, key, data); err != nil {
		return fmt.Errorf("put %s: %w", key, err)
	}
	// One object; each shard commits the markers of its own partitions,
	// this one first.
	shards := w.Shards()
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
		if s == w.Shard {
			resp, err = w.Local(req)
		} else if s > 0 && s-1 < len(w.Peers) { // Peers are shard 0's: shard i at i-1
			resp, err = w.Peers[s-1].CommitObject(ctx, req)
		} else {
			err = fmt.Errorf("shard %d has no peer to commit its markers on", s)
		}
		if err != nil {
			return fmt.Errorf("commit %s (shard %d): %w", key, s, err)
		}
		if len(resp.Results) != len(bs) {
			return fmt.Errorf("commit %s (shard %d): %d results for %d markers", key, s, len(resp.Results), len(bs))
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
