package coordinator

import (
	"context"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/coordinator/markers"
)

// WriteTxnMarkers writes a transaction's markers, commit or abort, into
// every partition of parts (package markers): one object holding a
// control batch per partition, put in the object store and committed
// like a broker's (each marker gets its offset, and closes its
// partition's open transaction). On a sharded coordinator (shard 0) the
// markers of another shard's partitions are committed on it, through
// ShardPeers.
func (p txnPartitions) WriteTxnMarkers(ctx context.Context, pid int64, epoch int16, parts []coordapi.TopicPartition, commit bool) error {
	c := p.c
	if c.markers == nil {
		return errNoMarkerStore
	}
	w := markers.Writer{Store: c.markers, Prefix: c.markerPrefix, Shard: c.opts.Shard,
		Shards: func() int { return c.place.Load().shards }, Local: c.commitMarkers, Peers: c.opts.ShardPeers}
	return w.Write(ctx, pid, epoch, parts, commit, c.now().UnixMilli())
}

// commitMarkers commits the markers of this shard's partitions, as a
// broker's commit.
func (c *Coordinator) commitMarkers(req *coordapi.CommitRequest) (*coordapi.CommitResponse, error) {
	c.commit.Lock()
	resp, notices, wait, err := c.commitObjectLocked(req)
	c.commit.Unlock()
	if err == nil {
		err = wait()
	}
	if err == nil {
		c.notify(notices)
	}
	return resp, err
}
