package rpc

import (
	"context"
	"fmt"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/coordinator"
)

// object_states request: n, n × key (str). Reply: n, n × (known (bool),
// garbage since ms (varint)). forget_objects request: the same keys; reply:
// the keys kept (live), n, n × key (str).
func encObjectStates(e *encoder, states []coordapi.ObjectState) {
	e.uvarint(uint64(len(states)))
	for _, s := range states {
		e.bool(s.Known)
		e.varint(s.GarbageSinceMs)
	}
}

func decObjectStates(d *decoder) []coordapi.ObjectState {
	n := d.count(2)
	if n == 0 {
		return nil
	}
	out := make([]coordapi.ObjectState, n)
	for i := range out {
		out[i].Known = d.bool()
		out[i].GarbageSinceMs = d.varint()
	}
	return out
}

// ObjectStates asks the shard what it knows of each object; see
// coordinator.Coordinator.ObjectStates. Client implements
// coordinator.ObjectPeer.
func (c *Client) ObjectStates(ctx context.Context, keys []string) ([]coordapi.ObjectState, error) {
	out, err := call(c, ctx, opObjectStates, func(e *encoder) { encStrings(e, keys) }, decObjectStates)
	if err == nil && len(out) != len(keys) {
		return nil, &clientError{opObjectStates, ErrInternal, fmt.Errorf("%w: %d states for %d keys", errMalformed, len(out), len(keys))}
	}
	return out, err
}

// ForgetObjects has the shard drop its garbage rows of keys, and returns
// the keys it kept, live there; see coordinator.Coordinator.ForgetObjects.
func (c *Client) ForgetObjects(ctx context.Context, keys []string) ([]string, error) {
	return call(c, ctx, opForgetObjects, func(e *encoder) { encStrings(e, keys) }, decStrings)
}

// txnViewResp is txn_view's reply: producer id's view, when found.
type txnViewResp struct {
	View  coordapi.TxnView
	Found bool
}

// txn_view request: producer id (varint). Reply: found (bool), then the
// transactional id (str), epoch (varint), ongoing (bool), n, n × (topic id
// (16), partition (varint)).
func encTxnViewResp(e *encoder, r txnViewResp) {
	e.bool(r.Found)
	if !r.Found {
		return
	}
	e.str(r.View.TransactionalID)
	e.varint(int64(r.View.Epoch))
	e.bool(r.View.Ongoing)
	e.uvarint(uint64(len(r.View.Partitions)))
	for _, tp := range r.View.Partitions {
		e.id(tp.TopicID)
		e.varint(int64(tp.Partition))
	}
}

func decTxnViewResp(d *decoder) txnViewResp {
	var r txnViewResp
	if r.Found = d.bool(); !r.Found {
		return r
	}
	r.View.TransactionalID = d.str()
	r.View.Epoch = int16(d.varint())
	r.View.Ongoing = d.bool()
	n := d.count(17)
	if n > 0 {
		r.View.Partitions = make([]coordapi.TopicPartition, n)
		for i := range r.View.Partitions {
			r.View.Partitions[i] = coordapi.TopicPartition{TopicID: d.id(), Partition: int32(d.varint())}
		}
	}
	return r
}

// txnView serves txn_view.
func txnView(c *coordinator.Coordinator, ctx context.Context, pid int64) (txnViewResp, error) {
	v, ok, err := c.TxnView(ctx, pid)
	return txnViewResp{View: v, Found: ok}, err
}

// TxnView asks shard 0 for producer id pid's transaction view; see
// coordinator.Coordinator.TxnView. Client implements coordinator.TxnOwner.
func (c *Client) TxnView(ctx context.Context, pid int64) (coordapi.TxnView, bool, error) {
	r, err := call(c, ctx, opTxnView, func(e *encoder) { e.varint(pid) }, decTxnViewResp)
	return r.View, r.Found, err
}

// cluster_info request: empty. Reply: shards (uvarint), shard (uvarint).
func encClusterInfo(e *encoder, ci coordapi.ClusterInfo) {
	e.uvarint(uint64(ci.Shards))
	e.uvarint(uint64(ci.Shard))
}

func decClusterInfo(d *decoder) coordapi.ClusterInfo {
	return coordapi.ClusterInfo{Shards: int(d.uvarint()), Shard: int(d.uvarint())}
}

// ClusterInfo asks the coordinator for the cluster's layout; see
// coordinator.Coordinator.ClusterInfo. A coordinator too old to know the
// op answers an error, as for any unknown op.
func (c *Client) ClusterInfo(ctx context.Context) (coordapi.ClusterInfo, error) {
	ci, err := call(c, ctx, opClusterInfo, func(e *encoder) { encEmpty(e, empty{}) }, decClusterInfo)
	if err == nil && (ci.Shards < 1 || ci.Shard >= ci.Shards) {
		return ci, &clientError{opClusterInfo, ErrInternal, fmt.Errorf("%w: shard %d of %d", errMalformed, ci.Shard, ci.Shards)}
	}
	return ci, err
}
