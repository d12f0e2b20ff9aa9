package coordinator

import (
	"fmt"

	"github.com/cockroachdb/pebble"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-io/floe/coordapi"
)

// txnRows keeps the transaction coordinator's rows (txn.Rows) in the
// coordinator's database, family 'x', written through its log like every
// other row.
type txnRows struct{ c *Coordinator }

func txnRowKey(id string) []byte { return append([]byte{prefixTxn}, id...) }

// SetTxnRow writes one transactional id's row, synced.
func (r txnRows) SetTxnRow(id string, row []byte) error { return r.c.set(txnRowKey(id), row) }

// DeleteTxnRows deletes transactional ids' rows in one synced write.
func (r txnRows) DeleteTxnRows(ids []string) error {
	b := r.c.db.NewBatch()
	defer b.Close()
	for _, id := range ids {
		_ = b.Delete(txnRowKey(id), nil)
	}
	return r.c.write(b, pebble.Sync)
}

// ScanTxnRows calls fn with every transactional id's row.
func (r txnRows) ScanTxnRows(fn func(id string, row []byte) error) error {
	return r.c.scan(prefixTxn, func(k, v []byte) error { return fn(string(k[1:]), v) })
}

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
		if _, _, err := p.c.partitionLocked(tp.TopicID, tp.Partition); err != nil {
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
		delete(c.commit.txnViews, pid)
		return
	}
	tv := &txnView{id: v.TransactionalID, epoch: v.Epoch, ongoing: v.Ongoing, parts: make(map[partKey]struct{}, len(v.Partitions))}
	for _, tp := range v.Partitions {
		tv.parts[partKey{tp.TopicID, tp.Partition}] = struct{}{}
	}
	c.commit.txnViews[pid] = tv
}
