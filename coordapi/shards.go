package coordapi

import (
	"encoding/binary"
	"hash/fnv"
)

// ShardOf returns the coordinator shard, of shards, that owns a partition:
// Lamping and Veach's jump consistent hash ("A Fast, Minimal Memory,
// Consistent Hash Algorithm", 2014) of the FNV-1a hash of the topic id and
// the partition (big-endian). Every broker and coordinator computes it
// from the shard count alone, with no table to distribute; growing the
// count from n to n+1 moves about 1/(n+1) of the partitions, all of them
// to the new shard. The mapping is part of the cluster's durable layout:
// it must never change for a given (topic, partition, shards).
func ShardOf(id TopicID, partition int32, shards int) int {
	if shards <= 1 {
		return 0
	}
	h := fnv.New64a()
	_, _ = h.Write(id[:])
	var p [4]byte
	binary.BigEndian.PutUint32(p[:], uint32(partition))
	_, _ = h.Write(p[:])
	return jump(h.Sum64(), shards)
}

// jump is the jump consistent hash of key into buckets buckets.
func jump(key uint64, buckets int) int {
	b, j := int64(-1), int64(0)
	for j < int64(buckets) {
		b = j
		key = key*2862933555777941757 + 1
		j = int64(float64(b+1) * (float64(int64(1)<<31) / float64((key>>33)+1)))
	}
	return int(b)
}

// ObjectState is what one coordinator shard knows of an object, for the
// collection across shards (docs/design/coordinator-shards.md): shard 0
// deletes an object only when no shard has it live, nor garbage for less
// than the grace.
type ObjectState struct {
	// Known says the shard has a row for the object: some of its
	// partitions' batches were committed in it.
	Known bool
	// GarbageSinceMs is when the last of the shard's batches in the
	// object stopped being referenced; 0 while some still is (live).
	GarbageSinceMs int64
}

// ClusterInfo is what a coordinator shard says of the cluster's layout
// (the cluster_info call): brokers learn from it how many shards to route
// over, instead of each being told (--coordinator-shards).
type ClusterInfo struct {
	// Shards is the cluster's shard count (its coordinators' --shards),
	// at least 1.
	Shards int
	// Shard is the answering shard's index.
	Shard int
	// MapVersion is the version of the shard map the shard serves by: 0
	// before any growth, one more at each (coordinator.Grow).
	MapVersion uint64
}

// PartitionChunk is one part of a partition's rows on its way from the
// shard it leaves to the shard it joins (the handover of
// docs/design/coordinator-shards.md, "Adding shards"): the old shard's
// ExportPartition answers chunks in key order, each the next after
// Cursor, and the new shard's ImportPartition writes them through its log.
// Rows are the coordinator's own encoding (package coordinator/layout),
// moved as they are but for the object numbers of batch rows, which are
// per shard: Objects names each that Rows use.
type PartitionChunk struct {
	TopicID   TopicID
	Partition int32
	// First is set on a partition's first chunk: the import drops
	// whatever rows of the partition it holds (an import a crash
	// interrupted) before it writes the chunk's, so that an export
	// started again from the beginning imports the same rows.
	First bool
	// Rows are the partition's rows of the families keyed by partition
	// (batch runs and segments, postings, key index, aborted, open and
	// held-keys transaction rows), key and value, in key order.
	Rows []ChunkRow
	// Objects are the objects the batch rows of Rows name, by the old
	// shard's object number.
	Objects []ChunkObject
	// Cursor is the last key of Rows, where the next export starts; nil
	// with Done.
	Cursor []byte
	// Done is set on the last chunk, which also carries the partition's
	// checkpoint, its producer states and its table's covered offset: the
	// import makes the partition the new shard's once it has them.
	Done bool
	// Checkpoint is the partition's checkpoint value ('p' row).
	Checkpoint []byte
	// Producers are the partition's producer state rows ('r'), key and
	// value.
	Producers []ChunkRow
	// TableCovered is the table planner's covered offset of the
	// partition, -1 for none.
	TableCovered int64
	// Gone is set, alone, when the exporting shard dropped the partition
	// after an earlier handover: its rows are where it moved.
	Gone bool
}

// ChunkRow is one row of a PartitionChunk.
type ChunkRow struct {
	Key, Value []byte
}

// ChunkObject is an object a PartitionChunk's batch rows name: its number
// on the exporting shard, its key and what its row records.
type ChunkObject struct {
	Num       uint64
	Key       string
	Size      int64
	CreatedMs int64
	BrokerID  int32
}
