package coordinator

import (
	"context"
	"slices"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/coordinator/markers"
)

// TxnOwner is shard 0's transaction coordinator, as another shard asks it
// for a producer's view (docs/design/coordinator-shards.md): *rpc.Client,
// or a *Coordinator.
type TxnOwner interface {
	// TxnView returns producer id pid's view, false when it writes
	// nothing.
	TxnView(ctx context.Context, pid int64) (coordapi.TxnView, bool, error)
}

// MarkerPeer is another shard, as shard 0 commits the transaction markers
// of its partitions there: *rpc.Client, or a *Coordinator.
type MarkerPeer = markers.Peer

// TxnView returns producer id pid's view as this coordinator's
// transaction coordinator holds it (shard 0's, for the other shards'
// TxnOwner).
func (c *Coordinator) TxnView(ctx context.Context, pid int64) (coordapi.TxnView, bool, error) {
	if err := c.enter(ctx); err != nil {
		return coordapi.TxnView{}, false, err
	}
	defer c.leave()
	v, ok := c.txn.View(pid)
	return v, ok, nil
}

// followTxnViews makes sure, before a commit on a shard other than 0, that
// each transactional batch is checked against its producer's current view:
// one this shard has no view of, or whose view is not ongoing, is of
// another epoch, or lacks the batch's partition, is asked of shard 0
// (TxnOwner). A view fetched while a marker of its producer was committed
// here is not installed: the transaction it describes ended here, and the
// batch is then refused as Kafka refuses a batch after its marker. Errors
// are logged: the batch is then checked against what is here, and refused
// if that is nothing.
func (c *Coordinator) followTxnViews(ctx context.Context, req *coordapi.CommitRequest) {
	if !slices.ContainsFunc(req.Batches, func(cb coordapi.CommitBatch) bool { return cb.Transactional && !cb.Control }) {
		return // most commits: no transactional batch, no lock taken
	}
	var asks []int64
	c.commit.Lock()
	for i := range req.Batches {
		cb := &req.Batches[i]
		if !cb.Transactional || cb.Control || slices.Contains(asks, cb.ProducerID) {
			continue
		}
		v := c.commit.txnViews[cb.ProducerID]
		if v != nil && v.ongoing && v.epoch == cb.ProducerEpoch {
			if _, ok := v.parts[partKey{cb.TopicID, cb.Partition}]; ok {
				continue
			}
		}
		asks = append(asks, cb.ProducerID)
	}
	if len(asks) == 0 {
		c.commit.Unlock()
		return
	}
	gen := c.commit.markerGen
	c.commit.fetching++
	c.commit.Unlock()
	defer func() {
		c.commit.Lock()
		if c.commit.fetching--; c.commit.fetching == 0 {
			clear(c.commit.markers) // no fetch left to compare against
		}
		c.commit.Unlock()
	}()
	for _, pid := range asks {
		v, ok, err := c.opts.TxnOwner.TxnView(ctx, pid)
		if err != nil {
			c.log.Warn("ask shard 0 for a producer's transaction", "producer_id", pid, "err", err)
			continue
		}
		c.commit.Lock()
		if c.commit.markers[pid] <= gen { // no marker of pid since the fetch began
			c.setTxnViewLocked(pid, v, ok)
		}
		c.commit.Unlock()
	}
}
