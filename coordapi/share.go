package coordapi

// Share groups' record acquisition (KIP-932; docs/design/share-groups.md,
// "The ShareFetch path"): a broker serving ShareFetch or ShareAcknowledge
// makes one ShareAcquire call to the group coordinator, which applies the
// acknowledgements, acquires records under a lock and answers where their
// batches live; the broker reads the bytes itself. ShareRelease gives back
// what a member acquired through one broker when its share session ends.

// Share acquire modes of ShareFetch v2 (KIP-1206).
const (
	// ShareAcquireBatchOptimized acquires whole log batches, so a call may
	// take a little more than MaxRecords (Kafka's default mode).
	ShareAcquireBatchOptimized int8 = 0
	// ShareAcquireRecordLimit acquires at most MaxRecords records, cutting
	// a batch if it must.
	ShareAcquireRecordLimit int8 = 1
)

// Internal acknowledgement types: a broker's own, sent alone in a
// ShareAcquire without Fetch, never taken from a client (a broker answers
// a client's type outside 0-4 INVALID_REQUEST). They are applied offset by
// offset and never fail.
const (
	// ShareAckArchiveAborted archives offsets of an aborted transaction that
	// a read_committed share group acquired, whoever holds them, as Kafka's
	// SharePartition.filterAbortedTransactionalAcquiredRecords does.
	ShareAckArchiveAborted int8 = 5
	// ShareAckReturnUnread makes offsets the member acquired through the
	// broker available again, their delivery count down by one: the broker
	// could not read their bytes, so they never reached the member.
	ShareAckReturnUnread int8 = 6
)

// ShareAckBatch is one acknowledgement batch of a share-partition: one
// type for all of [First, Last], or one per offset (Kafka's
// AcknowledgeType ids: 0 gap, 1 accept, 2 release, 3 reject, 4 renew; or
// an internal type, 5 or 6).
type ShareAckBatch struct {
	First, Last int64
	Types       []int8
}

// ShareAcquirePartition is one share-partition of a ShareAcquireRequest.
type ShareAcquirePartition struct {
	Topic     TopicID
	Partition int32
	// Acks are applied before anything is acquired, all or nothing.
	Acks []ShareAckBatch
	// Fetch acquires records of the partition; false only acknowledges.
	Fetch bool
}

// ShareAcquireRequest is one ShareFetch (or ShareAcknowledge, without
// Fetch) as the group coordinator serves it.
type ShareAcquireRequest struct {
	Group  string
	Member string
	// Via is the node id of the broker the records go out through: a
	// share session closing there releases only those.
	Via int32
	// Renew marks a renew-only call (IsRenewAck): acknowledgements only.
	Renew bool
	// MaxRecords bounds the records acquired per call; BatchSize is the
	// client's preferred acquisition batch; Mode is a ShareAcquire mode.
	MaxRecords int32
	BatchSize  int32
	Mode       int8
	// MaxBytes bounds the batch bytes answered over all partitions (the
	// first batch always goes whole).
	MaxBytes int32
	// MaxWaitMs is how long the call may wait when there is nothing to
	// acquire: until records are committed, released or expire.
	MaxWaitMs int32
	// Partitions are the share-partitions to acknowledge and fetch. The
	// isolation level is the group's (share.isolation.level), which the
	// coordinator reads.
	Partitions []ShareAcquirePartition
}

// ShareAcquiredRecords is a run of records acquired with one delivery
// count.
type ShareAcquiredRecords struct {
	First, Last   int64
	DeliveryCount int16
}

// ShareAcquired is one partition's answer to ShareAcquire.
type ShareAcquired struct {
	Topic     TopicID
	Partition int32
	// ErrorCode is the partition's fetch failure (0: none), for instance
	// KAFKA_STORAGE_ERROR when its batches could not be found.
	ErrorCode int16
	// AckErrorCode and AckErrorMessage are the acknowledgements' outcome:
	// INVALID_RECORD_STATE or INVALID_REQUEST fail all of the partition's.
	AckErrorCode    int16
	AckErrorMessage string
	// Acquired are the records given to the member, ascending.
	Acquired []ShareAcquiredRecords
	// Batches hold the Acquired records (a segment coordinate for the
	// partition's tiered part), ascending.
	Batches []BatchCoord
	// Aborted are the aborted transactions among Batches, under
	// read_committed.
	Aborted []AbortedTxn
	PartitionState
}

// ShareAcquireResponse answers a ShareAcquireRequest.
type ShareAcquireResponse struct {
	// LockDurationMs is the group's record lock duration
	// (AcquisitionLockTimeoutMs).
	LockDurationMs int32
	// Partitions answer the request's, in its order.
	Partitions []ShareAcquired
}

// ShareReleaseRequest gives back the records Member acquired through
// broker Via, on Partitions (every partition of the group when nil): a
// share session closed, its connection dropped, or partitions forgotten.
type ShareReleaseRequest struct {
	Group      string
	Member     string
	Via        int32
	Partitions []TopicPartition
}
