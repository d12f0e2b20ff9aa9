package coordinator

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-io/floe/coordapi"
)

// txnPartitions is the batch coordinator as the transaction coordinator
// sees it (txn.Partitions): its producer ids, its partitions, what its
// commits check transactional batches against, and the markers
// (WriteTxnMarkers, txn_markers.go).
type txnPartitions struct{ c *Coordinator }

// AllocateProducerID hands out the next producer id, the counter persisted
// first.
func (p txnPartitions) AllocateProducerID() (int64, error) {
	id, err := p.c.allocateProducerID()
	if err != nil {
		return 0, fmt.Errorf("allocate producer id: %w", err)
	}
	return id, nil
}

// CheckPartitions answers UNKNOWN_TOPIC_OR_PARTITION for each partition
// that does not exist, 0 for the others.
func (p txnPartitions) CheckPartitions(parts []coordapi.TopicPartition) []int16 {
	codes := make([]int16, len(parts))
	p.c.mu.RLock()
	defer p.c.mu.RUnlock()
	for i, tp := range parts {
		// Whichever shard owns it: shard 0 has every topic.
		if t := p.c.mu.topicsByID[tp.TopicID]; t == nil || tp.Partition < 0 || int(tp.Partition) >= len(t.parts) {
			codes[i] = kerr.UnknownTopicOrPartition.Code
		}
	}
	return codes
}

// SetTxnView installs what commits check producer pid's transactional
// batches against, nil to forget it.
func (p txnPartitions) SetTxnView(pid int64, v *coordapi.TxnView) {
	c := p.c
	c.commit.Lock()
	defer c.commit.Unlock()
	if v == nil {
		c.setTxnViewLocked(pid, coordapi.TxnView{}, false)
		return
	}
	c.setTxnViewLocked(pid, *v, true)
}

// setTxnViewLocked installs producer pid's view, or forgets it (!ok).
// c.commit must be held.
func (c *Coordinator) setTxnViewLocked(pid int64, v coordapi.TxnView, ok bool) {
	if !ok {
		delete(c.commit.txnViews, pid)
		return
	}
	tv := &txnView{id: v.TransactionalID, epoch: v.Epoch, ongoing: v.Ongoing, parts: make(map[partKey]struct{}, len(v.Partitions))}
	for _, tp := range v.Partitions {
		tv.parts[partKey{tp.TopicID, tp.Partition}] = struct{}{}
	}
	c.commit.txnViews[pid] = tv
}
