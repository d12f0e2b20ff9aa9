package coordapi

// TierJobKind says what a tier job does.
type TierJobKind uint8

// Tier job kinds.
const (
	// TierJobConsolidate copies WAL batches into one segment (the zero
	// value: every job before compaction existed was one).
	TierJobConsolidate TierJobKind = iota
	// TierJobCompact rewrites a compacted topic's segments (Compact).
	TierJobCompact
	// TierJobTable writes a table.enabled topic's committed records to
	// its Iceberg table (Table; docs/design/iceberg-tables.md). Only
	// brokers that claim with ClaimTierJobRequest.Tables get one.
	TierJobTable
	// TierJobTableMaintain maintains a table.enabled topic's Iceberg
	// table (Maintain): table.retention.ms, snapshot expiry, orphan
	// files. Only brokers that claim with
	// ClaimTierJobRequest.TableMaintain get one.
	TierJobTableMaintain
)

// TierJob is a job the coordinator assigned to one broker. A consolidation
// job (Kind TierJobConsolidate): copy the WAL batches of one partition's offset range [BaseOffset,
// LastOffset], in offset order, into one segment object (tiered/doc.go),
// upload it under SegmentKey, and report it with CompleteTierJob before
// the lease ends. The coordinator plans jobs once batches are older than
// the partition's WAL retention (local.retention.ms, local.retention.bytes).
type TierJob struct {
	// ID names this assignment of the range, and is its epoch: the range
	// assigned again (the lease ended, or the job was abandoned) gets a new
	// ID, and the coordinator accepts the completion of the newest only.
	ID        uint64
	TopicID   TopicID
	Partition int32
	// BaseOffset is the first batch's base offset (the partition's WAL
	// start offset when the job was planned); LastOffset the last batch's
	// last offset.
	BaseOffset, LastOffset int64
	// LeaseMs is how long after the assignment the coordinator accepts
	// the job's completion.
	LeaseMs int64
	// LogAppendTime is set for a topic with message.timestamp.type
	// LogAppendTime: each batch is written with its append time (its
	// MaxTimestamp), as a fetch would patch it.
	LogAppendTime bool
	// Batches are the batches to copy, in offset order, each with its
	// object: BaseOffset of the first is BaseOffset, LastOffset of the last
	// LastOffset, with no gaps. Empty for a compaction job.
	Batches []BatchCoord
	// Kind is the job's kind; Compact is set for TierJobCompact, Table
	// for TierJobTable (whose Partition is -1 and BaseOffset and
	// LastOffset 0: its ranges say what it covers).
	Kind     TierJobKind
	Compact  *CompactJob
	Table    *TableJob
	Maintain *TableMaintainJob
}

// TableMaintainJob maintains one topic's table (TierJobTableMaintain,
// Partition -2), at most once per the coordinator's maintenance interval
// (a day by default): it removes the rows older than table.retention.ms
// (table.Tables.ApplyRetention), expires old snapshots and deletes orphan
// files. It reports with CompleteTierJob and a TableResult whose
// SnapshotID is the retention's delete snapshot (0: none) and Rows the
// rows it removed.
type TableMaintainJob struct {
	// TopicName names the table.
	TopicName string
	// NowMs is the coordinator's clock at planning; RetentionMs the
	// topic's table.retention.ms (-1: rows are kept forever). Rows older
	// than NowMs - RetentionMs go.
	NowMs, RetentionMs int64
	// OrphanGraceMs is how old an unreferenced file must be to be
	// collected: longer than any table job's lease, so that a commit in
	// flight keeps its files.
	OrphanGraceMs int64
}

// TableJob writes a table.enabled topic's records to its Iceberg table
// <namespace>.<TopicName>: one job per topic at a time (per coordinator
// shard, of the partitions it owns), a range per partition with new
// records, all committed as one snapshot (table.Tables.Commit). Ranges
// read segments only and never reach the last stable offset, so no open
// transaction is in them.
type TableJob struct {
	// TopicName names the table. The TierJob's TopicID is its
	// floe.topic-id.
	TopicName string
	// Partitioning is the topic's table.partitioning, ValueSchema its
	// table.value.schema.definition when table.value.schema is json, else
	// empty: how the table is created, or evolved.
	Partitioning, ValueSchema string
	// Compacted is set when the topic's cleanup.policy includes compact:
	// the table is created as one of the latest value per key
	// (table.Spec.Compacted), or converted to one.
	Compacted bool
	// Ranges are in partition order, at most one per partition.
	Ranges []TableRange
}

// TableRange is one partition's records [From, To) for a table job.
type TableRange struct {
	Partition int32
	// From is the coordinator's copy of the partition's covered offset
	// (the table snapshot's floe.next-offset, or the log start): a job
	// re-reads the snapshot and skips what it already covers.
	From, To int64
	// Segments hold [From, To), in offset order, as FindBatches answers
	// them (Segment set): the first holds From, the last To-1.
	Segments []BatchCoord
	// Aborted are the aborted transactions with records in the range:
	// their records are not written.
	Aborted []AbortedTxn
}

// TableResult is what a table job reports with CompleteTierJob.
type TableResult struct {
	// SnapshotID is the snapshot the job committed (0: it committed
	// none, every range already covered).
	SnapshotID int64
	// Covered are the partitions' covered offsets as of that snapshot,
	// the job's ranges' at least.
	Covered []TableCovered
	// Rows counts the rows the job added.
	Rows int64
}

// TableCovered is a partition's covered offset: the table holds every
// committed record of it below Next.
type TableCovered struct {
	Partition int32
	Next      int64
}

// CompactJob is a compaction pass over one partition of a compacted topic
// (cleanup.policy compact or compact,delete): rewrite its segments from
// the log start on, keeping the latest record of each key, into new
// segments that replace them in one coordinator write (tiered/doc.go,
// Compaction). The TierJob's BaseOffset and LastOffset are the first
// segment's base and the last one's last offset.
type CompactJob struct {
	// Segments are the segments to rewrite, in offset order, contiguous
	// (each base offset the previous one's last plus one), as FindBatches
	// answers them (Segment set).
	Segments []BatchCoord
	// DirtyOffset is the cleaner checkpoint: the records from it on were
	// never cleaned. A pass without the key index builds its key map from
	// them; the records below it are known to be each key's latest or
	// already gone over.
	DirtyOffset int64
	// KeyIndex says the topic's key index is ready and names each key's
	// latest offset (KvLatestOffsets): no key map is built.
	KeyIndex bool
	// NowMs is the coordinator's clock at planning. A tombstone in a batch
	// whose delete horizon (KIP-534) is at or below it is dropped; a
	// tombstone kept for the first time gets the horizon NowMs +
	// DeleteRetentionMs.
	NowMs             int64
	DeleteRetentionMs int64
	// SegmentBytes is the topic's segment.bytes: the rewritten segments are
	// grouped up to it.
	SegmentBytes int64
	// ProducerLastOffsets are the last offsets of the last batch of each
	// producer the partition keeps idempotence state for, sorted: a batch
	// ending at one is kept as a bare header when compaction empties it, as
	// Kafka's cleaner keeps a producer's last sequence.
	ProducerLastOffsets []int64
	// Aborted are the aborted transactions with records in the job's
	// range: their records are removed and never count as a key's latest
	// (Kafka's cleaner). Transaction markers are kept. The job never
	// reaches the last stable offset: open transactions are not cleaned.
	Aborted []AbortedTxn
}

// CompactedSegment is one segment a compaction job wrote. A job's
// segments cover the offsets of the input segments they replace without a
// gap, in order: the first from the job's BaseOffset, each next from the
// previous one's LastOffset+1, the last to the last replaced input's
// LastOffset. A segment may start or end inside an input.
type CompactedSegment struct {
	ObjectKey  string
	ObjectSize int64
	DataLength int64
	// BaseOffset and LastOffset are the segment's offset range, which its
	// trailer says too (its first batch may start after BaseOffset).
	BaseOffset, LastOffset int64
	// Batches counts the segment's batches.
	Batches int64
	// MaxTimestamp is the largest batch MaxTimestamp (-1: none);
	// MaxTimestampOffset the offset ListOffsets answers for it and
	// MaxTimestampLast the last offset of the batch that holds it.
	MaxTimestamp, MaxTimestampOffset, MaxTimestampLast int64
}

// CompactResult is what a compaction job reports with CompleteTierJob.
type CompactResult struct {
	// CleanedThrough is the last offset the pass's key map covered: the
	// cleaner checkpoint moves to CleanedThrough+1. It is the last input
	// segment's last offset unless the key map filled up first.
	CleanedThrough int64
	// Segments replace the job's input segments from the job's BaseOffset
	// through the last one's LastOffset (the CompleteTierJobRequest's
	// LastOffset), in offset order and contiguous; input segments after it
	// (past a full key map) stay as they are.
	Segments []CompactedSegment
	// TombstoneHorizonMs is the earliest delete horizon of a batch holding
	// a tombstone, or of a transaction marker waiting to go, in Segments,
	// -1 when none: the next pass is due then.
	TombstoneHorizonMs int64
	// BytesIn and RecordsIn count what the pass read of the replaced
	// segments; BytesOut and RecordsOut what it wrote.
	BytesIn, BytesOut, RecordsIn, RecordsOut int64
}

// ClaimTierJobRequest asks for a job for one broker.
type ClaimTierJobRequest struct {
	// BrokerID is the claiming broker's node id, for logs and metrics.
	BrokerID int32
	// Tables says the broker runs table jobs (TierJobTable): it links
	// the table writer and knows where tables go.
	Tables bool
	// TableMaintain says the broker runs table maintenance jobs
	// (TierJobTableMaintain).
	TableMaintain bool
	// TableWAL says the broker's table jobs read WAL batches as well as
	// segments (a TableRange's Segments may then hold batches of WAL
	// objects, Segment false): its table jobs do not wait for
	// consolidation. Brokers of earlier builds get segments only.
	TableWAL bool
}

// CompleteTierJobRequest reports the segment object a job wrote. The
// coordinator checks it against the job: the range, and DataLength equal
// to the job's batches' summed lengths (the data part is exactly them).
type CompleteTierJobRequest struct {
	JobID                  uint64
	TopicID                TopicID
	Partition              int32
	BaseOffset, LastOffset int64
	// ObjectKey and ObjectSize name the uploaded segment object.
	ObjectKey  string
	ObjectSize int64
	// DataLength is the size of the segment's data part.
	DataLength int64
	// Compacted is set for a compaction job, whose segments it lists; the
	// fields of one object above are then unused, and LastOffset is that of
	// the last input segment replaced.
	Compacted *CompactResult
	// Table is set for a table job (Partition -1, or -3 and below for a
	// topic's further concurrent jobs); the fields of one
	// object above are then unused.
	Table *TableResult
}

// KvOffsetsRequest asks the key index for the latest offsets of keys in
// one partition, for compaction.
type KvOffsetsRequest struct {
	TopicID   TopicID
	Partition int32
	Keys      [][]byte
}
