package kvindex

import (
	"context"
	"errors"
)

// Sentinel errors a Service returns, checked with errors.Is; the handler turns them into
// 404s. Any other Service error answers 500.
var (
	// ErrUnknownTopic reports that no topic has the requested name (or, from Lookup and
	// ReadBatch, that the topic was deleted since Topic answered).
	ErrUnknownTopic = errors.New("kvindex: unknown topic")
	// ErrUnknownPartition reports a partition the topic does not have.
	ErrUnknownPartition = errors.New("kvindex: unknown partition")
	// ErrOffsetOutOfRange reports that the record an index entry points at is no longer
	// in the log (its batch was deleted after DeleteRecords or retention): the key is
	// gone.
	ErrOffsetOutOfRange = errors.New("kvindex: offset out of range")
)

// TopicInfo is what a lookup needs to know about a topic before it asks the index.
type TopicInfo struct {
	// ID is the topic id the index is keyed by.
	ID [16]byte
	// Partitions is the topic's partition count; lookups without ?partition=N hash the
	// key over it.
	Partitions int32
	// Indexed is set when the topic has kv.index.enabled=true.
	Indexed bool
}

// LookupResult is the index's answer for one key, with everything needed to read the
// record back: the Service gets it in one coordinator round trip.
type LookupResult struct {
	// Indexed is false when the topic no longer has kv.index.enabled (TopicInfo, read
	// from a cache, said it had): the lookup answers 404 topic not indexed.
	Indexed bool
	// Ready is false while the topic's index is being built from the log
	// (Index.Ready): the lookup answers 503 with Retry-After rather than a wrong 404.
	// Nothing below is set then.
	Ready bool
	// Found reports that the index holds an entry for the key (Index.Lookup).
	Found bool
	// Offset is the entry's offset: that of the latest record with the key, unless
	// compaction has removed it since.
	Offset int64
	// LogStartOffset and HighWatermark are the partition's offsets, read after the
	// entry: the record is committed when Offset < HighWatermark, and still in the log
	// when LogStartOffset <= Offset.
	LogStartOffset, HighWatermark int64
	// Batch locates the batch holding Offset, or the tiered segment holding it
	// (Batch.Segment). It is set (Object not empty) whenever Found and
	// LogStartOffset <= Offset < HighWatermark.
	Batch BatchRef
}

// BatchRef locates one committed batch. Committed batches never change, so Object and
// ByteOffset name the batch's bytes for good: the handler's batch cache is keyed by
// them.
type BatchRef struct {
	// Object is the key of the object holding the batch, ObjectSize its size (for the
	// Service's reader; the handler does not use it).
	Object     string
	ObjectSize int64
	// ByteOffset and ByteLength locate the batch in the object.
	ByteOffset int64
	ByteLength int32
	// BaseOffset is the Kafka offset of the batch's first record. The stored bytes may
	// carry another value (producers send 0): this one is used.
	BaseOffset int64
	// LogAppendTime, when positive, is the batch's log append time in milliseconds, the
	// timestamp of every record in it, for batches of LogAppendTime topics whose stored
	// bytes still carry the producer's create times (the coordinator's batch coordinates
	// have it). Zero or negative: the timestamp comes from the stored bytes.
	LogAppendTime int64
	// Remote is set when the batch lives only in tiered storage: unless remote reads are
	// enabled the handler answers 404 without reading it, the cold read against the
	// object store being what the gate is for.
	Remote bool
	// Segment is set when the ref does not locate the batch yet but the tiered segment
	// object holding it: Object and ObjectSize name the segment, ByteOffset and
	// ByteLength its data part, BaseOffset its base offset. It implies Remote. Past the
	// remote-read gate the handler asks Service.ResolveSegment for the batch, so that a
	// gated lookup reads nothing.
	Segment bool
}

// Service is what the lookup handler needs from the rest of the broker: topic metadata,
// the index, and batches. The broker implements it with its topic cache, the
// coordinator (in process or over NATS) and its chunk cache. Its methods are called
// concurrently, once each per request at most, with the request's context.
type Service interface {
	// Topic returns the named topic's metadata, or ErrUnknownTopic. It is called on
	// every request, so it should be answered from memory.
	Topic(ctx context.Context, name string) (TopicInfo, error)
	// Lookup returns the index's answer for key in the partition: the entry, the
	// partition's offsets and the batch holding the entry's offset, as of one moment
	// (one coordinator call). It returns ErrUnknownPartition for a partition the topic
	// does not have. key must not be modified or kept after the call.
	Lookup(ctx context.Context, topicID [16]byte, partition int32, key []byte) (LookupResult, error)
	// ReadBatch returns length bytes of the stored batch ref locates, from byte from of
	// it: the whole batch (0, ref.ByteLength) the first time the handler sees it, then
	// one record of it (the handler's batch cache knows where the records of an
	// uncompressed batch start). The handler never modifies the bytes and does not keep
	// them after the request. It may return ErrOffsetOutOfRange when the log no longer
	// holds the batch.
	ReadBatch(ctx context.Context, ref BatchRef, from, length int32) ([]byte, error)
	// ResolveSegment returns the ref of the batch holding offset inside the segment seg
	// locates (a Lookup answer with Segment set), or of the first batch after offset
	// when none holds it (compaction removed it). The ref it returns locates a batch:
	// Segment is not set, Remote is. It may return ErrOffsetOutOfRange when the log no
	// longer holds the segment. The handler calls it only when remote reads are
	// enabled.
	ResolveSegment(ctx context.Context, seg BatchRef, offset int64) (BatchRef, error)
}
