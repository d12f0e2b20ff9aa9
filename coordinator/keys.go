package coordinator

import (
	"encoding/binary"
	"fmt"

	"github.com/floe-io/floe/coordapi"
)

// Key family prefixes. Each key starts with one byte naming its family;
// numbers that follow are big-endian so that Pebble's byte order is numeric
// order (offsets are never negative). See the package doc for the layout.
const (
	prefixMeta          byte = 'm' // m <name>                          -> meta value
	prefixTopicName     byte = 'n' // n <name>                          -> topic id
	prefixTopic         byte = 't' // t <topic id>                      -> topic value
	prefixPartition     byte = 'p' // p <topic id> <partition>          -> partition value
	prefixBatch         byte = 'b' // b <topic id> <partition> <last>   -> batch value
	prefixObject        byte = 'o' // o <object number>                 -> object value
	prefixProducer      byte = 'r' // r <producer id> <topic id> <part> -> producer value
	prefixProducerEpoch byte = 'i' // i <producer id>                   -> producer id value
	// prefixKV (kv.go), prefixView (views.go), prefixStaged (inline.go)
	// and prefixACL (acls.go) are declared with their families.
)

// Meta keys.
var (
	keyFormatVersion  = []byte("mformat")
	keyNextProducerID = []byte("mnext-producer-id")
	keyNextObject     = []byte("mnext-object")
	// keyShards and keyShard are the shard count and the shard this state
	// is (Options.Shards, Shard), written at its first open and checked
	// at every later one (checkShardLayout).
	keyShards = []byte("mshards")
	keyShard  = []byte("mshard")
)

// formatVersion is the on-disk format this package writes: 3 adds segment
// rows to the batch family and the tier fields to partition checkpoints
// (values.go); 2 keyed batches by run (runs.go). Open migrates formats 1
// (one key per batch) and 2 and refuses anything else.
const (
	formatVersion  = 3
	formatVersion2 = 2
	formatVersion1 = 1
)

func topicNameKey(name string) []byte {
	k := make([]byte, 0, 1+len(name))
	k = append(k, prefixTopicName)
	return append(k, name...)
}

func topicKey(id coordapi.TopicID) []byte {
	k := make([]byte, 0, 17)
	k = append(k, prefixTopic)
	return append(k, id[:]...)
}

func partitionKey(id coordapi.TopicID, partition int32) []byte {
	k := make([]byte, 0, 21)
	k = append(k, prefixPartition)
	k = append(k, id[:]...)
	return binary.BigEndian.AppendUint32(k, uint32(partition))
}

// partitionsPrefix bounds every partition key of one topic.
func partitionsPrefix(id coordapi.TopicID) []byte {
	k := make([]byte, 0, 17)
	k = append(k, prefixPartition)
	return append(k, id[:]...)
}

// appendBatchKey appends the key of the batch of (id, partition) whose last
// offset is lastOffset. Callers building many keys reuse one buffer.
func appendBatchKey(k []byte, id coordapi.TopicID, partition int32, lastOffset int64) []byte {
	k = append(k, prefixBatch)
	k = append(k, id[:]...)
	k = binary.BigEndian.AppendUint32(k, uint32(partition))
	return binary.BigEndian.AppendUint64(k, uint64(lastOffset))
}

func batchKey(id coordapi.TopicID, partition int32, lastOffset int64) []byte {
	return appendBatchKey(make([]byte, 0, batchKeyLen), id, partition, lastOffset)
}

const batchKeyLen = 1 + 16 + 4 + 8

// batchPartitionBounds returns [lower, upper) covering every batch key of
// one partition.
func batchPartitionBounds(id coordapi.TopicID, partition int32) (lower, upper []byte) {
	lower = make([]byte, 0, 21)
	lower = append(lower, prefixBatch)
	lower = append(lower, id[:]...)
	lower = binary.BigEndian.AppendUint32(lower, uint32(partition))
	return lower, prefixEnd(lower)
}

// batchTopicBounds returns [lower, upper) covering every batch key of one
// topic.
func batchTopicBounds(id coordapi.TopicID) (lower, upper []byte) {
	lower = make([]byte, 0, 17)
	lower = append(lower, prefixBatch)
	lower = append(lower, id[:]...)
	return lower, prefixEnd(lower)
}

// decodeBatchKey returns the last offset of a batch key.
func decodeBatchKey(k []byte) (lastOffset int64, err error) {
	if len(k) != batchKeyLen || k[0] != prefixBatch {
		return 0, fmt.Errorf("coordinator: bad batch key %x", k)
	}
	return int64(binary.BigEndian.Uint64(k[21:])), nil
}

func objectKey(num uint64) []byte {
	k := make([]byte, 0, 9)
	k = append(k, prefixObject)
	return binary.BigEndian.AppendUint64(k, num)
}

func decodeObjectKey(k []byte) (uint64, error) {
	if len(k) != 9 || k[0] != prefixObject {
		return 0, fmt.Errorf("coordinator: bad object key %x", k)
	}
	return binary.BigEndian.Uint64(k[1:]), nil
}

func producerKey(pk producerStateKey) []byte {
	return appendProducerKey(make([]byte, 0, 29), pk)
}

func appendProducerKey(k []byte, pk producerStateKey) []byte {
	k = append(k, prefixProducer)
	k = binary.BigEndian.AppendUint64(k, uint64(pk.producerID))
	k = append(k, pk.topic[:]...)
	return binary.BigEndian.AppendUint32(k, uint32(pk.partition))
}

func decodeProducerKey(k []byte) (producerStateKey, error) {
	if len(k) != 29 || k[0] != prefixProducer {
		return producerStateKey{}, fmt.Errorf("coordinator: bad producer key %x", k)
	}
	var pk producerStateKey
	pk.producerID = int64(binary.BigEndian.Uint64(k[1:]))
	copy(pk.topic[:], k[9:25])
	pk.partition = int32(binary.BigEndian.Uint32(k[25:]))
	return pk, nil
}

func producerEpochKey(producerID int64) []byte {
	k := make([]byte, 0, 9)
	k = append(k, prefixProducerEpoch)
	return binary.BigEndian.AppendUint64(k, uint64(producerID))
}

// familyBounds returns [lower, upper) covering a whole key family.
func familyBounds(prefix byte) (lower, upper []byte) {
	return []byte{prefix}, []byte{prefix + 1}
}

// prefixEnd returns the smallest key greater than every key with prefix p.
func prefixEnd(p []byte) []byte {
	end := append([]byte(nil), p...)
	for i := len(end) - 1; i >= 0; i-- {
		end[i]++
		if end[i] != 0 {
			return end[:i+1]
		}
	}
	return nil // p is all 0xff: no upper bound
}
