package kvindex

import (
	"context"
	"errors"
)

// Sentinel errors a Service returns, checked with errors.Is; the handler turns them into
// 404s. Any other Service error answers 500.
var (
	// ErrUnknownTopic reports that no topic has the requested name.
	ErrUnknownTopic = errors.New("kvindex: unknown topic")
	// ErrUnknownPartition reports a partition the topic does not have.
	ErrUnknownPartition = errors.New("kvindex: unknown partition")
	// ErrOffsetOutOfRange reports that the offset an index entry points at is no longer
	// in the log (below the log start after DeleteRecords or retention): the key is gone.
	ErrOffsetOutOfRange = errors.New("kvindex: offset out of range")
)

// TopicInfo is what a lookup needs to know about a topic.
type TopicInfo struct {
	// ID is the topic id the index is keyed by.
	ID [16]byte
	// Partitions is the topic's partition count; lookups without ?partition=N hash the
	// key over it.
	Partitions int32
	// Indexed is set when the topic has kv.index.enabled=true.
	Indexed bool
	// Ready is false while the topic's index is being built from the log (Index.Ready):
	// lookups answer 503 with Retry-After rather than a wrong 404.
	Ready bool
}

// Batch is a record batch read back to serve a lookup.
type Batch struct {
	// Data is exactly one whole batch, as stored. The handler never modifies it, and
	// does not keep it after the request.
	Data []byte
	// BaseOffset is the Kafka offset of the batch's first record. The stored bytes may
	// carry another value (producers send 0): this one is used.
	BaseOffset int64
	// LogAppendTime, when positive, is the batch's log append time in milliseconds, the
	// timestamp of every record in it, for batches of LogAppendTime topics whose stored
	// bytes still carry the producer's create times (the coordinator's batch coordinates
	// have it). Zero or negative: the timestamp comes from Data.
	LogAppendTime int64
	// Remote is set when the batch lives only in tiered storage.
	Remote bool
}

// Service is what the lookup handler needs from the rest of the broker: topic metadata,
// the index, high watermarks and batches. The broker implements it with the coordinator
// (in process or over NATS) and its object cache. Its methods are called concurrently,
// once each per request at most, with the request's context.
type Service interface {
	// Topic returns the named topic's metadata, or ErrUnknownTopic.
	Topic(ctx context.Context, name string) (TopicInfo, error)
	// Lookup returns the offset the index holds for key in the partition (Index.Lookup).
	// key must not be modified or kept after the call.
	Lookup(ctx context.Context, topicID [16]byte, partition int32, key []byte) (offset int64, found bool, err error)
	// HighWatermark returns the partition's high watermark: offsets at or past it are
	// not served.
	HighWatermark(ctx context.Context, topicID [16]byte, partition int32) (int64, error)
	// ReadBatch returns the batch containing offset, or ErrOffsetOutOfRange when the
	// log no longer holds it. When the batch lives only in tiered storage and
	// allowRemote is false, ReadBatch returns Batch{Remote: true} without reading it:
	// the remote-read gate exists to avoid that cold read.
	ReadBatch(ctx context.Context, topicID [16]byte, partition int32, offset int64, allowRemote bool) (Batch, error)
}
