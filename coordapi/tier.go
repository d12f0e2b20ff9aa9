package coordapi

// TierJob is a consolidation job the coordinator assigned to one broker:
// copy the WAL batches of one partition's offset range [BaseOffset,
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
	// LastOffset, with no gaps.
	Batches []BatchCoord
}

// ClaimTierJobRequest asks for a job for one broker.
type ClaimTierJobRequest struct {
	// BrokerID is the claiming broker's node id, for logs and metrics.
	BrokerID int32
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
}
