package coordapi

import (
	"encoding/hex"
	"net"
	"strconv"
)

// TopicID is a topic's UUID, as Kafka's Metadata v10+ returns it. A
// recreated topic gets a new id.
type TopicID [16]byte

// String formats the id as Kafka's tools do (hex, for logs and keys).
func (id TopicID) String() string { return hex.EncodeToString(id[:]) }

// IsZero reports whether id is the all-zero (unset) id.
func (id TopicID) IsZero() bool { return id == TopicID{} }

// Topic is a topic's metadata.
type Topic struct {
	ID         TopicID
	Name       string
	Partitions int32
	// Configs holds only the configs set explicitly on the topic; see
	// TopicConfigDefs for the defaults of the rest. A view has its base
	// topic's.
	Configs map[string]string
	// View is set when the topic is a hierarchical view ("base/KEY",
	// views.go): Partitions and Configs are the base topic's, and its data
	// is the base topic's records whose key is the view's.
	View *TopicView
}

// CreateTopicRequest asks for a new topic.
type CreateTopicRequest struct {
	Name string
	// Partitions -1 means the cluster default (num.partitions); 0 and other
	// negative values are INVALID_PARTITIONS, as in Kafka.
	Partitions int32
	// ReplicationFactor is accepted for compatibility: -1 or 1..3 are fine,
	// since object storage replicates the data.
	ReplicationFactor int16
	Configs           map[string]string
	ValidateOnly      bool
}

// ConfigOp is one change to a topic config, as IncrementalAlterConfigs
// sends it.
type ConfigOp struct {
	Name string
	// Op is Kafka's op code: 0 SET, 1 DELETE, 2 APPEND, 3 SUBTRACT.
	Op    int8
	Value *string
}

// Config op codes, as IncrementalAlterConfigs encodes them.
const (
	OpSet      int8 = 0
	OpDelete   int8 = 1
	OpAppend   int8 = 2
	OpSubtract int8 = 3
)

// PartitionState is a partition's offsets.
type PartitionState struct {
	LogStartOffset int64
	HighWatermark  int64
	// LastStableOffset is the first offset of the partition's oldest open
	// transaction, the high watermark when none is open: read_committed
	// consumers read below it (txn.go).
	LastStableOffset int64
}

// CommitRequest commits one uploaded (or inline) object: every batch in it, in the order
// the broker appended them. The coordinator assigns offsets to all batches
// in one durable write.
type CommitRequest struct {
	ObjectKey  string
	ObjectSize int64
	BrokerID   int32
	Batches    []CommitBatch
	// Inline, when set, is the object itself (ObjectSize bytes, at most
	// MaxInlineObject), not uploaded by the broker: the coordinator stages
	// it in the store, keeps it in the commit's own durable write and puts
	// it durably in the background, so the produce waits for one device
	// round trip instead of two. Only for a coordinator in the broker's
	// process that writes to its store (the embedded default's directory):
	// others refuse it with INVALID_REQUEST, and the rpc client does not
	// send it. The coordinator keeps the slice until the
	// object is put: the caller must not change it.
	Inline []byte
}

// MaxInlineObject is the largest object a commit may carry inline
// (CommitRequest.Inline).
const MaxInlineObject = 256 << 10

// CommitBatch is one record batch inside a committed object.
type CommitBatch struct {
	TopicID   TopicID
	Partition int32
	// ByteOffset and ByteLength locate the batch in the object.
	ByteOffset int64
	ByteLength int32
	// LastOffsetDelta+1 offsets are assigned to the batch.
	LastOffsetDelta int32
	// MaxTimestamp is the batch header's max timestamp (CreateTime).
	MaxTimestamp int64
	// Idempotence fields from the batch header; ProducerID -1 if none.
	ProducerID    int64
	ProducerEpoch int16
	BaseSequence  int32
	// Keys is set only for topics with kv.index.enabled (one entry per
	// record with a non-null key, for the key index) or
	// hierarchical.enabled (for the posting index; without
	// kv.index.enabled, one entry per distinct key, OffsetDelta that of its
	// first record).
	Keys []KeyEntry
	// Transactional is the batch header's transactional bit: the batch
	// belongs to its producer's ongoing transaction, which must hold the
	// partition (AddPartitionsToTxn) or the batch is refused.
	Transactional bool
	// TransactionalID is the transactional id of the request that carried
	// a transactional batch: it must be its producer id's.
	TransactionalID string
	// Control marks a transaction marker. Only the coordinator writes
	// them (brokers refuse control batches from clients); never sent over
	// the rpc.
	Control bool
	// Commit is a control batch's marker type: commit, else abort.
	Commit bool
}

// KeyEntry is one record's key, as the key index needs it.
type KeyEntry struct {
	Key         []byte
	OffsetDelta int32
	Tombstone   bool
}

// CommitResponse answers a CommitRequest, one result per batch in order.
type CommitResponse struct {
	Results []BatchResult
}

// BatchResult is the outcome for one committed batch.
type BatchResult struct {
	// ErrorCode is a Kafka error code; 0 on success.
	ErrorCode int16
	// BaseOffset is the offset assigned to the batch's first record (for a
	// duplicate idempotent batch, the offset it was first given).
	BaseOffset int64
	// LogAppendTime is the broker time for LogAppendTime topics, else -1.
	LogAppendTime  int64
	LogStartOffset int64
}

// FindBatchesRequest asks where the batches from Offset on live.
type FindBatchesRequest struct {
	TopicID   TopicID
	Partition int32
	Offset    int64
	// MaxBytes bounds the summed batch lengths; the first batch is always
	// returned whole even if larger (Kafka's fetch semantics).
	MaxBytes int32
	// ReadCommitted stops the batches at the last stable offset and lists
	// the aborted transactions of the range (read_committed).
	ReadCommitted bool
}

// BatchCoord is where one committed batch lives.
type BatchCoord struct {
	ObjectKey string
	// ObjectSize is the whole object's size, so that readers know its
	// chunk bounds.
	ObjectSize int64
	ByteOffset int64
	ByteLength int32
	BaseOffset int64
	LastOffset int64
	// MaxTimestamp is the batch's max timestamp: the producer's for
	// CreateTime topics, the append time for LogAppendTime topics.
	MaxTimestamp int64
	// LogAppendTime is true when the batch must be patched to
	// LogAppendTime (timestamp type bit, max timestamp, CRC) on the wire.
	LogAppendTime bool
	// Segment is set when the coordinate is not one batch but a whole
	// segment object of the partition's tiered part (tiered/doc.go):
	// ByteOffset is 0, ByteLength the segment's data length, BaseOffset
	// and LastOffset its offset range, MaxTimestamp its largest batch max
	// timestamp. Its batches carry their real offsets and, on
	// LogAppendTime topics, their append time already. A reader finds the
	// batch holding an offset through the segment's index
	// (tiered.Reader); FindBatches answers a segment alone, never with
	// batches after it.
	Segment bool
}

// FindBatchesResponse lists the batches covering the requested offset on,
// with the partition's offsets at the time of the read.
type FindBatchesResponse struct {
	Batches []BatchCoord
	PartitionState
	// Aborted, for a ReadCommitted request, are the aborted transactions
	// whose records may be among Batches (their abort marker at or after
	// the requested offset), by first offset.
	Aborted []AbortedTxn
}

// FindBatchesResult is one partition's answer to FindBatchesMulti.
type FindBatchesResult struct {
	// ErrorCode is the partition's Kafka-level failure, 0 when it was
	// answered: UNKNOWN_TOPIC_ID, UNKNOWN_TOPIC_OR_PARTITION,
	// OFFSET_OUT_OF_RANGE (PartitionState is then set, so that the fetch
	// can report the log start and high watermark), or
	// KAFKA_STORAGE_ERROR when the coordinator could not read the
	// partition's batches (retriable).
	ErrorCode int16
	FindBatchesResponse
}

// Special timestamps of ListOffsets.
const (
	TimestampLatest   int64 = -1
	TimestampEarliest int64 = -2
	TimestampMax      int64 = -3
)

// InitProducerIDRequest mirrors Kafka's InitProducerId.
type InitProducerIDRequest struct {
	TransactionalID *string
	TimeoutMs       int32
	// ProducerID and ProducerEpoch are -1 for a new producer; set for an
	// epoch bump (KIP-360).
	ProducerID    int64
	ProducerEpoch int16
}

// InitProducerIDResponse is the producer id and epoch to use.
type InitProducerIDResponse struct {
	ProducerID    int64
	ProducerEpoch int16
}

// CommitNotice says a partition's high watermark advanced, and where the
// batches that advanced it live, so that brokers serve consumers at the head
// of the log without asking the coordinator.
type CommitNotice struct {
	TopicID        TopicID
	Partition      int32
	HighWatermark  int64
	LogStartOffset int64
	// LastStableOffset is the partition's after the commit.
	LastStableOffset int64
	// HasAborted says the partition has aborted transactions above its
	// log start: a read_committed fetch must get them from the
	// coordinator (a tail cache may answer it only without them).
	HasAborted bool
	// Batches are the committed batches, in offset order, ending at
	// HighWatermark-1: WAL batches, just committed (never Segment).
	// Empty when the notice only reports offsets.
	Batches []BatchCoord
}

// Special timestamps of ListOffsets beyond TimestampLatest,
// TimestampEarliest and TimestampMax.
const (
	// TimestampEarliestLocal (KIP-405) is the earliest offset kept locally;
	// in floe that is the log start.
	TimestampEarliestLocal int64 = -4
	// TimestampLatestTiered (KIP-1005) is the highest offset in tiered
	// storage; floe has none in Kafka's sense, so it answers offset -1.
	TimestampLatestTiered int64 = -5
)

// BrokerInfo is one broker as the registry knows it: what Metadata returns
// for it.
type BrokerInfo struct {
	NodeID int32
	// Host and Port are the broker's advertised Kafka address.
	Host string
	Port int32
	// Rack is the broker's rack (availability zone); "" for none.
	Rack string
	// InternalAddr is the host:port of the broker's HTTP listener that
	// the other brokers of its zone read cached chunks from
	// (GET /internal/chunk, package zone); "" when unknown, and then no
	// peer asks it for chunks.
	InternalAddr string
}

// Addr returns the advertised address as host:port.
func (b BrokerInfo) Addr() string {
	return net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port)))
}

// TopicNotice says a topic was created, deleted or changed (its partitions
// or configs), so that brokers drop what they cached of it at once instead
// of at their cache's expiry.
type TopicNotice struct {
	ID   TopicID
	Name string
}

// KvGetRequest asks for the index entry of a key in one partition of an
// indexed topic, with everything a GET /kv lookup needs to serve it.
type KvGetRequest struct {
	TopicID   TopicID
	Partition int32
	// Key is the record key, as the producer sent it. Callers must not
	// modify it during the call.
	Key []byte
}

// KvGetResult answers a KvGetRequest in one round trip: the topic's index
// state, the key's offset, the partition's offsets read after the index
// entry (so that the entry's record is committed when Offset is below
// HighWatermark), and where the batch holding Offset lives.
type KvGetResult struct {
	// Indexed is false when the topic does not have kv.index.enabled (it
	// was turned off since the caller read the topic's configs); nothing
	// else is set then.
	Indexed bool
	// Ready is false while the topic's index is being built from the log
	// (and when not Indexed): the lookup was not made, and nothing below is
	// set.
	Ready bool
	// Found reports an index entry for the key (never written or
	// tombstoned: false).
	Found bool
	// Offset is the offset of the latest record with the key, when Found.
	Offset int64
	// PartitionState holds the partition's log start and high watermark.
	PartitionState
	// Batch is the batch holding Offset, set (ObjectKey not empty) when
	// Found and LogStartOffset <= Offset < HighWatermark.
	Batch BatchCoord
}

// HasBatch reports whether r.Batch is set.
func (r *KvGetResult) HasBatch() bool { return r.Batch.ObjectKey != "" }

// FindKeyBatchesRequest asks which batches of one partition of a
// hierarchical topic (hierarchical.enabled) hold records with Key, from
// Offset on.
type FindKeyBatchesRequest struct {
	TopicID   TopicID
	Partition int32
	// Key is the record key, as the producer sent it. Callers must not
	// modify it during the call.
	Key    []byte
	Offset int64
	// MaxBytes bounds the summed lengths of the batches answered, as
	// FindBatches' does; the first is always answered, however large.
	MaxBytes int32
	// ReadCommitted stops the answer at the last stable offset and lists
	// the aborted transactions of its range, as FindBatches does.
	ReadCommitted bool
}

// KeyBatch is one batch holding the key of a FindKeyBatches request.
type KeyBatch struct {
	// Coord is where the batch lives: the batch itself, or, with
	// Segment set, the whole tiered segment holding it (find the batch
	// holding BaseOffset inside it, tiered.Reader).
	Coord BatchCoord
	// BaseOffset and LastOffset are the batch's own offsets, as the
	// posting index recorded them; for a batch (not a segment) they are
	// Coord's.
	BaseOffset int64
	LastOffset int64
}

// FindKeyBatchesResponse answers a FindKeyBatchesRequest.
type FindKeyBatchesResponse struct {
	// Ready is false when the topic's postings cannot answer: it is not
	// hierarchical, or its postings are being built from the log after
	// hierarchical.enabled was turned on. Only PartitionState is set then;
	// the caller reads the whole partition.
	Ready bool
	// Batches are the batches holding the key, in offset order, from the
	// one holding Offset (or the first after it).
	Batches []KeyBatch
	// Through is the offset the answer covers up to: no batch in
	// [Offset, Through) holds the key but those in Batches. It is the
	// high watermark when every posting was read, else the offset after
	// the last batch answered (MaxBytes was reached).
	Through int64
	PartitionState
	// Aborted, for a ReadCommitted request, are the aborted transactions
	// whose abort marker is at or after Offset, by first offset.
	Aborted []AbortedTxn
}
