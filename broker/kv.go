package broker

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/kvindex"
	"github.com/floe-io/floe/objectstore"
)

// KVService returns the service behind GET /kv/{topic}/{key}: topics from
// the broker's topic cache, one coordinator call (KvGet) per lookup, and
// records read back through the chunk cache.
func (b *Broker) KVService() kvindex.Service { return kvService{b} }

type kvService struct{ b *Broker }

// Topic answers from the topic cache, which the coordinator's topic notices
// keep fresh; a stale answer is caught by the lookup's own (KvGet says
// whether the topic is still indexed).
func (s kvService) Topic(ctx context.Context, name string) (kvindex.TopicInfo, error) {
	t, err := s.b.topics.ByName(ctx, name)
	if errors.Is(err, kerr.UnknownTopicOrPartition) {
		return kvindex.TopicInfo{}, kvindex.ErrUnknownTopic
	}
	if err != nil {
		return kvindex.TopicInfo{}, err
	}
	return kvindex.TopicInfo{ID: t.ID, Partitions: t.Partitions,
		Indexed: strings.EqualFold(t.Config(coordapi.ConfigKVIndexEnabled), "true")}, nil
}

// Lookup is one KvGet. A topic deleted since the cache answered is
// ErrUnknownTopic.
func (s kvService) Lookup(ctx context.Context, id [16]byte, partition int32, key []byte) (kvindex.LookupResult, error) {
	r, err := s.b.coord.KvGet(ctx, coordapi.KvGetRequest{TopicID: id, Partition: partition, Key: key})
	switch {
	case errors.Is(err, kerr.UnknownTopicOrPartition):
		return kvindex.LookupResult{}, kvindex.ErrUnknownPartition
	case errors.Is(err, kerr.UnknownTopicID):
		return kvindex.LookupResult{}, kvindex.ErrUnknownTopic
	case err != nil:
		return kvindex.LookupResult{}, err
	}
	out := kvindex.LookupResult{Indexed: r.Indexed, Ready: r.Ready, Found: r.Found, Offset: r.Offset,
		LogStartOffset: r.LogStartOffset, HighWatermark: r.HighWatermark}
	if bc := r.Batch; r.HasBatch() {
		out.Batch = kvindex.BatchRef{Object: bc.ObjectKey, ObjectSize: bc.ObjectSize,
			ByteOffset: bc.ByteOffset, ByteLength: bc.ByteLength, BaseOffset: bc.BaseOffset}
		switch {
		case bc.Segment:
			// Only in a tiered segment: the handler's remote-read gate
			// answers before ResolveSegment reads the segment.
			out.Batch.Remote, out.Batch.Segment = true, true
		case bc.LogAppendTime:
			out.Batch.LogAppendTime = bc.MaxTimestamp
		}
	}
	return out, nil
}

// ResolveSegment finds the batch holding offset inside the tiered segment
// seg locates, through the segment's index (loaded once per segment) and
// batch headers read through the chunk cache. Segment batches carry their
// append time already, so the ref has no LogAppendTime. A segment gone from
// the store was collected after retention removed it since the lookup.
func (s kvService) ResolveSegment(ctx context.Context, seg kvindex.BatchRef, offset int64) (kvindex.BatchRef, error) {
	bc, err := s.b.reads.SegmentBatch(ctx, "kv", coordapi.BatchCoord{ObjectKey: seg.Object, ObjectSize: seg.ObjectSize,
		ByteOffset: seg.ByteOffset, ByteLength: seg.ByteLength, BaseOffset: seg.BaseOffset, Segment: true}, offset)
	if err != nil {
		if errors.Is(err, objectstore.ErrNotFound) {
			err = fmt.Errorf("%w: %w", kvindex.ErrOffsetOutOfRange, err)
		}
		return kvindex.BatchRef{}, err
	}
	return kvindex.BatchRef{Object: bc.ObjectKey, ObjectSize: bc.ObjectSize, ByteOffset: bc.ByteOffset,
		ByteLength: bc.ByteLength, BaseOffset: bc.BaseOffset, Remote: true}, nil
}

// ReadBatch reads a batch, or a record of it: from the chunk cache when its
// chunks are resident (a sub-slice of a cached chunk unless the bytes cross
// a chunk boundary), else, for a range small against a chunk, with an exact
// read that loads no chunk. Lookups of random keys miss: loading the whole
// chunk (a whole WAL object on the local directory) for a batch of a few
// KiB read and allocated about 30 MB/s in the lifecycle soak, for chunks
// hardly ever read again; the decoded batches /kv reuses are in its own
// batch cache. An object gone from the store was collected after
// DeleteRecords or retention removed its batches since the lookup: the
// record is gone.
func (s kvService) ReadBatch(ctx context.Context, ref kvindex.BatchRef, from, length int32) ([]byte, error) {
	data, err := s.b.reads.ReadRange(ctx, ref.Object, ref.ObjectSize, ref.ByteOffset+int64(from), int64(length))
	if err != nil {
		err = fmt.Errorf("read batch at offset %d from %s: %w", ref.BaseOffset, ref.Object, err)
		if errors.Is(err, objectstore.ErrNotFound) {
			err = fmt.Errorf("%w: %w", kvindex.ErrOffsetOutOfRange, err)
		}
		return nil, err
	}
	return data, nil
}
