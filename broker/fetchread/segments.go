package fetchread

import (
	"context"
	"errors"
	"fmt"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/tiered"
)

// The coordinator answers an offset in the partition's tiered part with one
// coordinate of a whole segment object (coordapi.BatchCoord.Segment), never
// followed by batches. Every path that gets coordinates from the coordinator
// (Fetch, ListOffsets by timestamp, /kv) finds the batches inside the segment
// here, through rd.segments, before it goes on as with batches of the WAL.

// errNoSegmentReader fails reads of segments by a broker without a Reader.
var errNoSegmentReader = errors.New("fetchread: no reader for tiered segments")

// segmentBatches returns the batches inside segment seg from the one holding
// offset on, within maxBytes, as FindBatches answers batches.
func (rd *Reader) segmentBatches(ctx context.Context, seg coordapi.BatchCoord, offset int64, maxBytes int32) ([]coordapi.BatchCoord, error) {
	if rd.segments == nil {
		return nil, errNoSegmentReader
	}
	batches, err := rd.segments.Batches(ctx, seg, offset, maxBytes)
	if err != nil {
		return nil, fmt.Errorf("find offset %d in segment %s: %w", offset, seg.ObjectKey, err)
	}
	return batches, nil
}

// batchInSegment returns the batch of segment seg a ListOffsets answer is
// exact within: for a timestamp search (target >= 0), the first batch from
// offset on whose max timestamp is at least target; for TimestampMax, the
// batch holding offset (the coordinator's answer lies in the right batch).
func (rd *Reader) batchInSegment(ctx context.Context, seg coordapi.BatchCoord, offset, target int64) (coordapi.BatchCoord, error) {
	if target < 0 {
		batches, err := rd.segmentBatches(ctx, seg, offset, 1)
		if err != nil {
			return coordapi.BatchCoord{}, err
		}
		return batches[0], nil
	}
	if rd.segments == nil {
		return coordapi.BatchCoord{}, errNoSegmentReader
	}
	bc, ok, err := rd.segments.BatchAtTimestamp(ctx, seg, offset, target)
	switch {
	case err != nil:
		return coordapi.BatchCoord{}, fmt.Errorf("find timestamp %d from offset %d in segment %s: %w", target, offset, seg.ObjectKey, err)
	case !ok:
		return coordapi.BatchCoord{}, fmt.Errorf("segment %s from offset %d: %w", seg.ObjectKey, offset, errNoneInSegment)
	}
	return bc, nil
}

// errNoneInSegment: no batch of a segment from the offset asked on reaches
// the timestamp. The coordinator picks a segment by its max timestamp, which
// a batch below the log start (a cut into the segment) may hold: the answer
// is then in a later row.
var errNoneInSegment = errors.New("no batch at or above the timestamp")

// errNoSuchRecord: no record from the offset asked on reaches the
// timestamp; ListOffsets answers -1.
var errNoSuchRecord = errors.New("no record at or above the timestamp")

// maxTimestampPages bounds the coordinator lookups of batchAtTimestamp.
const maxTimestampPages = 1000

// batchAtTimestamp finds, from offset on, the first batch whose max
// timestamp reaches target, across rows: segments through their time index,
// WAL batches by their coordinates (no reads). It serves the rare
// ListOffsets whose segment the log start cut past its qualifying batches.
func (rd *Reader) batchAtTimestamp(ctx context.Context, id coordapi.TopicID, partition int32, offset, target int64) (coordapi.BatchCoord, error) {
	for range maxTimestampPages {
		found, err := rd.coord.FindBatches(ctx, coordapi.FindBatchesRequest{TopicID: id, Partition: partition, Offset: offset, MaxBytes: 1 << 20})
		if err != nil {
			return coordapi.BatchCoord{}, err
		}
		if len(found.Batches) == 0 {
			return coordapi.BatchCoord{}, errNoSuchRecord
		}
		if seg := found.Batches[0]; seg.Segment {
			bc, err := rd.batchInSegment(ctx, seg, offset, target)
			if !errors.Is(err, errNoneInSegment) {
				return bc, err
			}
			offset = seg.LastOffset + 1
			continue
		}
		for _, bc := range found.Batches {
			if bc.LastOffset >= offset && bc.MaxTimestamp >= target {
				return bc, nil
			}
		}
		offset = found.Batches[len(found.Batches)-1].LastOffset + 1
	}
	return coordapi.BatchCoord{}, fmt.Errorf("no batch at timestamp %d within %d lookups from offset %d", target, maxTimestampPages, offset)
}

// SegmentBatch returns the batch of the tiered segment seg that holds
// offset, found through the segment's index (loaded once per segment) and
// batch headers read through the cache. A corrupt segment is logged, op
// naming the reader (GET /kv: "kv").
func (rd *Reader) SegmentBatch(ctx context.Context, op string, seg coordapi.BatchCoord, offset int64) (coordapi.BatchCoord, error) {
	batches, err := rd.segmentBatches(ctx, seg, offset, 1)
	if err != nil {
		rd.logSegmentError(ctx, op, err)
		return coordapi.BatchCoord{}, err
	}
	return batches[0], nil
}

// logSegmentError logs a segment read that failed on a corrupt segment: the
// partition answers a retriable error, but retrying does not mend it.
func (rd *Reader) logSegmentError(ctx context.Context, op string, err error) {
	if errors.Is(err, tiered.ErrCorrupt) {
		rd.opts.Logger.ErrorContext(ctx, "corrupt tiered segment", "op", op, "err", err)
	}
}
