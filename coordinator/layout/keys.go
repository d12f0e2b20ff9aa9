package layout

import (
	"encoding/binary"
	"fmt"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/internal/keyspan"
)

// Key family prefixes. Each key starts with one byte naming its family;
// numbers that follow are big-endian so that Pebble's byte order is numeric
// order (offsets are never negative). The package doc draws each family.
const (
	PrefixMeta          byte = 'm' // m <name>                          -> meta value
	PrefixTopicName     byte = 'n' // n <name>                          -> topic id
	PrefixTopic         byte = 't' // t <topic id>                      -> topic value
	PrefixPartition     byte = 'p' // p <topic id> <partition>          -> partition value
	PrefixBatch         byte = 'b' // b <topic id> <partition> <last>   -> run or segment row
	PrefixObject        byte = 'o' // o <object number>                 -> object value
	PrefixProducer      byte = 'r' // r <producer id> <topic id> <part> -> producer value
	PrefixProducerEpoch byte = 'i' // i <producer id>                   -> producer id value
	PrefixStaged        byte = 's' // s <object key>                    -> an inline object's bytes
	PrefixView          byte = 'v' // v <view id>                       -> view value
	PrefixBaseView      byte = 'w' // w <base topic id> <view id>       -> format byte only
	PrefixTxn           byte = 'x' // package txn's rows (lent)
	PrefixTxnOpen       byte = 'y' // y <topic id> <part> <pid>         -> offset value
	PrefixAborted       byte = 'q' // q <topic id> <part> <last> <pid>  -> offset value
	PrefixTxnKeys       byte = 'z' // z <topic id> <part> <pid> <base>  -> transaction keys value
	PrefixUser          byte = 'u' // package users' rows (lent)
	PrefixACL           byte = 'a' // package acls' rows (lent)
	PrefixTable         byte = 'l' // package tables' rows (lent)
	PrefixTableCovered  byte = 'c' // c <topic id>                      -> table covered value
	PrefixKV            byte = 'k' // kvindex.Index's rows
	PrefixPostings      byte = 'h' // kvindex.Postings' rows
	PrefixHandover      byte = 'e' // e <topic id> <partition>         -> handover value
)

// Meta keys: rows of the meta family, each an 8-byte big-endian counter
// (EncodeUint64).
var (
	// KeyFormatVersion is the on-disk format version (FormatVersion).
	KeyFormatVersion = []byte("mformat")
	// KeyNextProducerID is the next producer id to hand out.
	KeyNextProducerID = []byte("mnext-producer-id")
	// KeyNextObject is the next object number.
	KeyNextObject = []byte("mnext-object")
	// KeyShards and KeyShard are the shard count and the shard this state
	// is, written at its first open and checked at every later one, so
	// that a state is never opened as another shard.
	KeyShards = []byte("mshards")
	KeyShard  = []byte("mshard")
	// KeyMapVersion is the version of the shard map this shard serves
	// by: written with KeyShards when a growth commits (absent: 0).
	KeyMapVersion = []byte("mmap-version")
	// KeyACLVersion is the ACL change counter (package acls).
	KeyACLVersion = []byte("macl-version")
)

// Format versions of the whole state (KeyFormatVersion). FormatVersion is
// the one this package writes: 3 adds segment rows to the batch family and
// the tier fields to partition checkpoints; 2 keyed batches by run. The
// coordinator migrates formats 1 (one key per batch) and 2 at open and
// refuses anything else.
const (
	FormatVersion  = 3
	FormatVersion2 = 2
	FormatVersion1 = 1
)

// TopicNameKey is the key mapping a topic's name to its id.
func TopicNameKey(name string) []byte {
	k := make([]byte, 0, 1+len(name))
	k = append(k, PrefixTopicName)
	return append(k, name...)
}

// TopicKey is the key of a topic's value (EncodeTopic).
func TopicKey(id coordapi.TopicID) []byte {
	k := make([]byte, 0, 17)
	k = append(k, PrefixTopic)
	return append(k, id[:]...)
}

// PartitionKey is the key of a partition's checkpoint (EncodePartition).
func PartitionKey(id coordapi.TopicID, partition int32) []byte {
	k := make([]byte, 0, 21)
	k = append(k, PrefixPartition)
	k = append(k, id[:]...)
	return binary.BigEndian.AppendUint32(k, uint32(partition))
}

// PartitionsPrefix bounds every partition key of one topic.
func PartitionsPrefix(id coordapi.TopicID) []byte {
	k := make([]byte, 0, 17)
	k = append(k, PrefixPartition)
	return append(k, id[:]...)
}

// AppendBatchKey appends the key of the row of (id, partition) whose last
// offset is lastOffset. Callers building many keys reuse one buffer.
func AppendBatchKey(k []byte, id coordapi.TopicID, partition int32, lastOffset int64) []byte {
	k = append(k, PrefixBatch)
	k = append(k, id[:]...)
	k = binary.BigEndian.AppendUint32(k, uint32(partition))
	return binary.BigEndian.AppendUint64(k, uint64(lastOffset))
}

// BatchKey is the key of the row (a batch run or a segment row) of (id,
// partition) whose last offset is lastOffset: the row holding offset o is
// the first key at or after BatchKey(id, partition, o).
func BatchKey(id coordapi.TopicID, partition int32, lastOffset int64) []byte {
	return AppendBatchKey(make([]byte, 0, BatchKeyLen), id, partition, lastOffset)
}

// BatchKeyLen is the length of every key of the batch family.
const BatchKeyLen = 1 + 16 + 4 + 8

// BatchPartitionBounds returns [lower, upper) covering every batch key of
// one partition.
func BatchPartitionBounds(id coordapi.TopicID, partition int32) (lower, upper []byte) {
	lower = make([]byte, 0, 21)
	lower = append(lower, PrefixBatch)
	lower = append(lower, id[:]...)
	lower = binary.BigEndian.AppendUint32(lower, uint32(partition))
	return lower, keyspan.PrefixEnd(lower)
}

// BatchTopicBounds returns [lower, upper) covering every batch key of one
// topic.
func BatchTopicBounds(id coordapi.TopicID) (lower, upper []byte) {
	lower = make([]byte, 0, 17)
	lower = append(lower, PrefixBatch)
	lower = append(lower, id[:]...)
	return lower, keyspan.PrefixEnd(lower)
}

// DecodeBatchKey returns the last offset of a batch key.
func DecodeBatchKey(k []byte) (lastOffset int64, err error) {
	if len(k) != BatchKeyLen || k[0] != PrefixBatch {
		return 0, fmt.Errorf("coordinator: bad batch key %x", k)
	}
	return int64(binary.BigEndian.Uint64(k[21:])), nil
}

// ObjectKey is the key of object number num's row (EncodeObject).
func ObjectKey(num uint64) []byte {
	k := make([]byte, 0, 9)
	k = append(k, PrefixObject)
	return binary.BigEndian.AppendUint64(k, num)
}

// DecodeObjectKey returns the object number of an object key.
func DecodeObjectKey(k []byte) (uint64, error) {
	if len(k) != 9 || k[0] != PrefixObject {
		return 0, fmt.Errorf("coordinator: bad object key %x", k)
	}
	return binary.BigEndian.Uint64(k[1:]), nil
}

// ProducerKey is the key of a producer's checkpoint on one partition
// (EncodeProducer).
func ProducerKey(producerID int64, topic coordapi.TopicID, partition int32) []byte {
	return AppendProducerKey(make([]byte, 0, 29), producerID, topic, partition)
}

// AppendProducerKey appends ProducerKey's key to k.
func AppendProducerKey(k []byte, producerID int64, topic coordapi.TopicID, partition int32) []byte {
	k = append(k, PrefixProducer)
	k = binary.BigEndian.AppendUint64(k, uint64(producerID))
	k = append(k, topic[:]...)
	return binary.BigEndian.AppendUint32(k, uint32(partition))
}

// DecodeProducerKey splits a producer key.
func DecodeProducerKey(k []byte) (producerID int64, topic coordapi.TopicID, partition int32, err error) {
	if len(k) != 29 || k[0] != PrefixProducer {
		return 0, topic, 0, fmt.Errorf("coordinator: bad producer key %x", k)
	}
	copy(topic[:], k[9:25])
	return int64(binary.BigEndian.Uint64(k[1:])), topic, int32(binary.BigEndian.Uint32(k[25:])), nil
}

// ProducerEpochKey is the key of a producer id whose epoch was bumped
// (EncodeProducerID).
func ProducerEpochKey(producerID int64) []byte {
	k := make([]byte, 0, 9)
	k = append(k, PrefixProducerEpoch)
	return binary.BigEndian.AppendUint64(k, uint64(producerID))
}

// StagedKey is the row of an inline object committed and not yet persisted
// (its value: the object's bytes).
func StagedKey(objectKey string) []byte {
	return append([]byte{PrefixStaged}, objectKey...)
}

// ViewKey is the row naming a hierarchical view (EncodeView).
func ViewKey(id coordapi.TopicID) []byte {
	return append([]byte{PrefixView}, id[:]...)
}

// BaseViewKey is the row of view id on base topic base: its value is the
// format byte alone. The rows of one base share BaseViewsPrefix(base).
func BaseViewKey(base, id coordapi.TopicID) []byte {
	return append(BaseViewsPrefix(base), id[:]...)
}

// BaseViewsPrefix bounds the BaseViewKey rows of base.
func BaseViewsPrefix(base coordapi.TopicID) []byte {
	return append([]byte{PrefixBaseView}, base[:]...)
}

// TableCoveredKey is the row of a table topic's covered offsets
// (EncodeTableCovered).
func TableCoveredKey(id coordapi.TopicID) []byte {
	return append([]byte{PrefixTableCovered}, id[:]...)
}

// TxnFamilyKey is a key of the transaction families: prefix, topic id,
// partition, then each number (8 bytes, big-endian).
func TxnFamilyKey(prefix byte, topic coordapi.TopicID, partition int32, nums ...int64) []byte {
	k := make([]byte, 0, 21+8*len(nums))
	k = append(k, prefix)
	k = append(k, topic[:]...)
	k = binary.BigEndian.AppendUint32(k, uint32(partition))
	for _, n := range nums {
		k = binary.BigEndian.AppendUint64(k, uint64(n))
	}
	return k
}

// DecodeTxnPartKey splits a key of the transaction families: prefix(1),
// topic id(16), partition(4), a number(8), and the rest, the key being
// size bytes long.
func DecodeTxnPartKey(what string, k []byte, size int) (topic coordapi.TopicID, partition int32, n int64, rest []byte, err error) {
	if len(k) != size || size < 29 {
		return topic, 0, 0, nil, fmt.Errorf("coordinator: bad %s key %x", what, k)
	}
	copy(topic[:], k[1:17])
	return topic, int32(binary.BigEndian.Uint32(k[17:21])), int64(binary.BigEndian.Uint64(k[21:29])), k[29:], nil
}

// FamilyBounds returns [lower, upper) covering a whole key family.
func FamilyBounds(prefix byte) (lower, upper []byte) {
	return []byte{prefix}, []byte{prefix + 1}
}
