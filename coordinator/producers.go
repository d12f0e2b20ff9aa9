package coordinator

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/cockroachdb/pebble"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/coordinator/idempotence"
	"github.com/floe-io/floe/coordinator/layout"
)

// Idempotence follows Apache Kafka 3.x: package idempotence decides a
// batch against its producer's state (Check) and remembers it (Record).

// noProducerEpoch marks a state that has seen no batch.
const noProducerEpoch = idempotence.NoEpoch

// firstProducerID is the first producer id handed out.
const firstProducerID int64 = 1

// Kafka error codes CommitObject answers per batch.
var (
	codeUnknownTopicOrPartition = kerr.UnknownTopicOrPartition.Code
	codeUnknownTopicID          = kerr.UnknownTopicID.Code
	codeInvalidProducerEpoch    = kerr.InvalidProducerEpoch.Code
	codeInvalidRecord           = kerr.InvalidRecord.Code
	codeNotLeader               = kerr.NotLeaderForPartition.Code
)

type producerStateKey struct {
	producerID int64
	topic      coordapi.TopicID
	partition  int32
}

// producerState is one producer's idempotence state on one partition: its
// persisted value, and whether it changed since its partition's
// checkpoint.
type producerState struct {
	layout.Producer
	// dirty is set while the state has changed since its partition's
	// checkpoint (checkpoint.go): its latest value is in a batch run, not
	// yet in its producer record.
	dirty bool
}

// InitProducerID hands out a producer id and epoch (Kafka's InitProducerId
// for idempotent producers):
//
//   - ProducerID -1: a new id (from a durable counter) with epoch 0.
//   - ProducerID and ProducerEpoch set (KIP-360 epoch bump): epoch + 1 on the
//     same id. A client's epoch may be ahead of the coordinator's (the Java
//     client bumps idempotent epochs locally), so any epoch at or above the
//     current one is bumped from; a retry of the last bump (the epoch it was
//     bumped from) gets the same answer again; an older epoch is
//     INVALID_PRODUCER_EPOCH. An exhausted epoch (>= 32766) rolls to a new id
//     with epoch 0, and so does an id this coordinator never handed out.
//     ProducerID and ProducerEpoch must be both -1 or both set, else
//     INVALID_REQUEST.
//   - TransactionalID set: after Kafka's own checks (empty id:
//     INVALID_REQUEST; TimeoutMs outside 1..transaction.max.timeout.ms
//     (900000): INVALID_TRANSACTION_TIMEOUT), the transaction coordinator
//     answers (txn.go: a new id, or an epoch bump fencing the previous
//     producer of the id). TimeoutMs is not checked without a transactional
//     id, as in Kafka (idempotent clients send anything there, e.g.
//     librdkafka -1).
func (c *Coordinator) InitProducerID(ctx context.Context, req coordapi.InitProducerIDRequest) (coordapi.InitProducerIDResponse, error) {
	if err := c.enter(ctx); err != nil {
		return coordapi.InitProducerIDResponse{}, err
	}
	defer c.leave()
	fail := func(err error) (coordapi.InitProducerIDResponse, error) {
		return coordapi.InitProducerIDResponse{}, fmt.Errorf("init producer id: %w", err)
	}
	if req.TransactionalID != nil {
		resp, err := c.txn.InitProducerID(ctx, req)
		if err != nil {
			return fail(err)
		}
		return resp, nil
	}
	if (req.ProducerID < 0) != (req.ProducerEpoch < 0) {
		return fail(coordapi.Errorf(kerr.InvalidRequest,
			"Producer id %d and epoch %d must be both -1 or both set", req.ProducerID, req.ProducerEpoch))
	}

	c.pids.Lock()
	defer c.pids.Unlock()
	if req.ProducerID < 0 || req.ProducerID >= c.pids.next {
		return c.allocateProducerIDLocked()
	}
	cur := layout.ProducerID{Epoch: 0, LastEpoch: noProducerEpoch}
	v, closer, err := c.db.Get(layout.ProducerEpochKey(req.ProducerID))
	switch {
	case errors.Is(err, pebble.ErrNotFound):
	case err != nil:
		return fail(fmt.Errorf("read producer %d: %w", req.ProducerID, err))
	default:
		cur, err = layout.DecodeProducerID(v)
		_ = closer.Close()
		if err != nil {
			return fail(err)
		}
	}
	switch {
	case req.ProducerEpoch >= cur.Epoch:
	case req.ProducerEpoch == cur.LastEpoch:
		return coordapi.InitProducerIDResponse{ProducerID: req.ProducerID, ProducerEpoch: cur.Epoch}, nil
	default:
		return fail(coordapi.Errorf(kerr.InvalidProducerEpoch,
			"Producer %d epoch %d is older than its current epoch %d", req.ProducerID, req.ProducerEpoch, cur.Epoch))
	}
	if req.ProducerEpoch >= math.MaxInt16-1 {
		return c.allocateProducerIDLocked()
	}
	next := layout.ProducerID{Epoch: req.ProducerEpoch + 1, LastEpoch: req.ProducerEpoch}
	if err := c.set(layout.ProducerEpochKey(req.ProducerID), layout.EncodeProducerID(next)); err != nil {
		return fail(fmt.Errorf("write producer %d: %w", req.ProducerID, err))
	}
	c.log.Debug("producer epoch bumped", "producer_id", req.ProducerID, "epoch", next.Epoch)
	return coordapi.InitProducerIDResponse{ProducerID: req.ProducerID, ProducerEpoch: next.Epoch}, nil
}

// allocateProducerID hands out the next producer id.
func (c *Coordinator) allocateProducerID() (int64, error) {
	c.pids.Lock()
	defer c.pids.Unlock()
	r, err := c.allocateProducerIDLocked()
	return r.ProducerID, err
}

// allocateProducerIDLocked hands out the next producer id with epoch 0,
// persisting the counter first. c.pids must be held.
func (c *Coordinator) allocateProducerIDLocked() (coordapi.InitProducerIDResponse, error) {
	id := c.pids.next
	if err := c.set(layout.KeyNextProducerID, layout.EncodeUint64(uint64(id+1))); err != nil {
		return coordapi.InitProducerIDResponse{}, fmt.Errorf("init producer id: write counter: %w", err)
	}
	c.pids.next = id + 1
	return coordapi.InitProducerIDResponse{ProducerID: id, ProducerEpoch: 0}, nil
}

// ExpireProducers drops the idempotence state of every (producer,
// partition) that has not committed a batch for maxIdle (Kafka's
// producer.id.expiration.ms, default 1 day), so that producer state does not
// grow without bound. A producer with a transaction open in the partition
// keeps its state there, as in Kafka. It returns how many states it
// dropped. A producer that comes back afterwards is accepted at any
// sequence.
func (c *Coordinator) ExpireProducers(ctx context.Context, maxIdle time.Duration) (int, error) {
	if err := c.enter(ctx); err != nil {
		return 0, err
	}
	defer c.leave()
	return c.expireProducers(maxIdle)
}

// expireProducers is ExpireProducers for a caller already entered.
func (c *Coordinator) expireProducers(maxIdle time.Duration) (int, error) {
	c.commit.Lock()
	defer c.commit.Unlock()
	cutoff := c.now().Add(-maxIdle).UnixMilli()
	b := c.db.NewBatch()
	defer b.Close()
	isExpired := func(k producerStateKey, ps *producerState) bool {
		_, open := c.commit.openTxns[partKey{k.topic, k.partition}][k.producerID]
		return ps.LastUpdateMs < cutoff && !open
	}
	var (
		expired     []producerStateKey
		checkpoints []partKey
	)
	seen := map[partKey]bool{}
	for pk, ps := range c.commit.producers {
		if !isExpired(pk, ps) || !c.owns(pk.topic, pk.partition) {
			continue // a partition moving out keeps its rows as exported
		}
		expired = append(expired, pk)
		_ = b.Delete(layout.ProducerKey(pk.producerID, pk.topic, pk.partition), nil)
		part := partKey{pk.topic, pk.partition}
		if ps.dirty && !seen[part] {
			// Its state is in a run replayed at Open: checkpoint the
			// partition so that replay starts after it.
			seen[part] = true
			checkpoints = append(checkpoints, part)
			if t := c.mu.topicsByID[part.topic]; t != nil && int(part.partition) < len(t.parts) {
				c.checkpointLocked(b, part, &t.parts[part.partition], isExpired)
			}
		}
	}
	if len(expired) == 0 {
		return 0, nil
	}
	if err := c.write(b, pebble.Sync); err != nil {
		return 0, fmt.Errorf("expire producers: commit: %w", err)
	}
	for _, part := range checkpoints {
		c.checkpointedLocked(part)
	}
	for _, pk := range expired {
		delete(c.commit.producers, pk)
	}
	c.log.Info("producer states expired", "count", len(expired))
	return len(expired), nil
}
