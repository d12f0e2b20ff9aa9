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

// cluster_info request: empty. Reply: shards (uvarint), shard (uvarint),
// map version (uvarint; absent from coordinators before the handover:
// 0).
func encClusterInfo(e *encoder, ci coordapi.ClusterInfo) {
	e.uvarint(uint64(ci.Shards))
	e.uvarint(uint64(ci.Shard))
	e.uvarint(ci.MapVersion)
}

func decClusterInfo(d *decoder) coordapi.ClusterInfo {
	ci := coordapi.ClusterInfo{Shards: int(d.uvarint()), Shard: int(d.uvarint())}
	if d.left() > 0 {
		ci.MapVersion = d.uvarint()
	}
	return ci
}

// ClusterInfo asks the coordinator for the cluster's layout; see
// coordinator.Coordinator.ClusterInfo. A coordinator too old to know the
// op answers an error, as for any unknown op. A new shard's Shard is not
// below its Shards until the growth that adds it commits.
func (c *Client) ClusterInfo(ctx context.Context) (coordapi.ClusterInfo, error) {
	ci, err := call(c, ctx, opClusterInfo, func(e *encoder) { encEmpty(e, empty{}) }, decClusterInfo)
	// A shard may be above the count it serves by: a new shard waits for
	// the growth that adds it (coordinator.Grow).
	if err == nil && ci.Shards < 1 {
		return ci, &clientError{opClusterInfo, ErrInternal, fmt.Errorf("%w: shard %d of %d", errMalformed, ci.Shard, ci.Shards)}
	}
	return ci, err
}

// fenceReq is fence_partition's request.
type fenceReq struct {
	ID        coordapi.TopicID
	Partition int32
	Version   uint64
}

// fence_partition request: topic id (16), partition (varint), map version
// (uvarint). Reply: empty. drop_partition request: topic id (16),
// partition (varint). Reply: empty.
func encFenceReq(e *encoder, r fenceReq) {
	e.id(r.ID)
	e.varint(int64(r.Partition))
	e.uvarint(r.Version)
}

func decFenceReq(d *decoder) fenceReq {
	return fenceReq{ID: d.id(), Partition: d.int32(), Version: d.uvarint()}
}

// exportReq is export_partition's request.
type exportReq struct {
	ID        coordapi.TopicID
	Partition int32
	Cursor    []byte
	MaxBytes  int
}

// export_partition request: topic id (16), partition (varint), cursor
// (bytes), max bytes (uvarint). Reply: a partition chunk.
func encExportReq(e *encoder, r exportReq) {
	e.id(r.ID)
	e.varint(int64(r.Partition))
	e.bytes(r.Cursor)
	e.uvarint(uint64(max(r.MaxBytes, 0)))
}

func decExportReq(d *decoder) exportReq {
	r := exportReq{ID: d.id(), Partition: d.int32(), Cursor: d.bytes()}
	if n := d.uvarint(); n > 1<<30 {
		d.fail("max bytes %d", n)
	} else {
		r.MaxBytes = int(n)
	}
	if len(r.Cursor) == 0 {
		r.Cursor = nil
	}
	return r
}

// Partition chunk flags.
const (
	chunkFirst = 1 << 0
	chunkDone  = 1 << 1
	chunkGone  = 1 << 2
)

// A partition chunk (import_partition's request, export_partition's
// reply): topic id (16), partition (varint), flags (first 1, done 2, gone
// 4), n, n × row (key bytes, value bytes), n, n × object (number
// (uvarint), key (str), size (varint), created ms (varint), broker id
// (varint)), cursor (bytes), checkpoint (bytes), n, n × producer row (key
// bytes, value bytes), table covered offset (varint).
func encPartitionChunk(e *encoder, ch coordapi.PartitionChunk) {
	e.id(ch.TopicID)
	e.varint(int64(ch.Partition))
	var flags byte
	if ch.First {
		flags |= chunkFirst
	}
	if ch.Done {
		flags |= chunkDone
	}
	if ch.Gone {
		flags |= chunkGone
	}
	e.byte(flags)
	encChunkRows(e, ch.Rows)
	e.uvarint(uint64(len(ch.Objects)))
	for _, o := range ch.Objects {
		e.uvarint(o.Num)
		e.str(o.Key)
		e.varint(o.Size)
		e.varint(o.CreatedMs)
		e.varint(int64(o.BrokerID))
	}
	e.bytes(ch.Cursor)
	e.bytes(ch.Checkpoint)
	encChunkRows(e, ch.Producers)
	e.varint(ch.TableCovered)
}

func encChunkRows(e *encoder, rows []coordapi.ChunkRow) {
	e.uvarint(uint64(len(rows)))
	for _, r := range rows {
		e.bytes(r.Key)
		e.bytes(r.Value)
	}
}

func decChunkRows(d *decoder) []coordapi.ChunkRow {
	n := d.count(2)
	if n == 0 {
		return nil
	}
	rows := make([]coordapi.ChunkRow, n)
	for i := range rows {
		rows[i] = coordapi.ChunkRow{Key: d.bytes(), Value: d.bytes()}
	}
	return rows
}

// optBytes is d.bytes with an empty value as nil.
func optBytes(d *decoder) []byte {
	if b := d.bytes(); len(b) > 0 {
		return b
	}
	return nil
}

func decPartitionChunk(d *decoder) coordapi.PartitionChunk {
	ch := coordapi.PartitionChunk{TopicID: d.id(), Partition: d.int32()}
	flags := d.byte()
	if flags&^(chunkFirst|chunkDone|chunkGone) != 0 {
		d.fail("chunk flags %#x", flags)
	}
	ch.First, ch.Done, ch.Gone = flags&chunkFirst != 0, flags&chunkDone != 0, flags&chunkGone != 0
	ch.Rows = decChunkRows(d)
	if n := d.count(5); n > 0 {
		ch.Objects = make([]coordapi.ChunkObject, n)
		for i := range ch.Objects {
			ch.Objects[i] = coordapi.ChunkObject{Num: d.uvarint(), Key: d.str(), Size: d.varint(), CreatedMs: d.varint(), BrokerID: d.int32()}
		}
	}
	ch.Cursor = optBytes(d)
	ch.Checkpoint = optBytes(d)
	ch.Producers = decChunkRows(d)
	ch.TableCovered = d.varint()
	return ch
}

// FencePartition has the shard fence a partition moving out of it; see
// coordinator.Coordinator.FencePartition. Client implements
// coordinator.HandoverPeer.
func (c *Client) FencePartition(ctx context.Context, id coordapi.TopicID, partition int32, version uint64) error {
	_, err := call(c, ctx, opFencePartition, func(e *encoder) {
		encFenceReq(e, fenceReq{ID: id, Partition: partition, Version: version})
	}, decEmpty)
	return err
}

// ExportPartition asks the shard for the chunk of a fenced partition's
// rows after cursor; see coordinator.Coordinator.ExportPartition.
func (c *Client) ExportPartition(ctx context.Context, id coordapi.TopicID, partition int32, cursor []byte, maxBytes int) (coordapi.PartitionChunk, error) {
	return call(c, ctx, opExportPartition, func(e *encoder) {
		encExportReq(e, exportReq{ID: id, Partition: partition, Cursor: cursor, MaxBytes: maxBytes})
	}, decPartitionChunk)
}

// ImportPartition has the shard write a chunk of a partition moving to
// it; see coordinator.Coordinator.ImportPartition.
func (c *Client) ImportPartition(ctx context.Context, ch *coordapi.PartitionChunk) error {
	_, err := call(c, ctx, opImportPartition, func(e *encoder) { encPartitionChunk(e, *ch) }, decEmpty)
	return err
}

// DropPartition has the shard drop the rows of a partition it handed
// over; see coordinator.Coordinator.DropPartition.
func (c *Client) DropPartition(ctx context.Context, id coordapi.TopicID, partition int32) error {
	_, err := call(c, ctx, opDropPartition, func(e *encoder) {
		encTopicPartitionReq(e, topicPartitionReq{ID: id, Partition: partition})
	}, decEmpty)
	return err
}

// commitShardsReq is commit_shards' request.
type commitShardsReq struct {
	Shards  int
	Version uint64
}

// commit_shards request: shards (uvarint), map version (uvarint). Reply:
// empty.
func encCommitShardsReq(e *encoder, r commitShardsReq) {
	e.uvarint(uint64(max(r.Shards, 0)))
	e.uvarint(r.Version)
}

func decCommitShardsReq(d *decoder) commitShardsReq {
	var r commitShardsReq
	if n := d.uvarint(); n > 1<<16 {
		d.fail("shard count %d", n)
	} else {
		r.Shards = int(n)
	}
	r.Version = d.uvarint()
	return r
}

// CommitShards has the shard serve by a grown shard count and map
// version; see coordinator.Coordinator.CommitShards. Client implements
// coordinator.ShardPeer.
func (c *Client) CommitShards(ctx context.Context, shards int, version uint64) error {
	_, err := call(c, ctx, opCommitShards, func(e *encoder) {
		encCommitShardsReq(e, commitShardsReq{Shards: shards, Version: version})
	}, decEmpty)
	return err
}
