package broker

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
// here, through b.segments, before it goes on as with batches of the WAL.

// errNoSegmentReader fails reads of segments by a broker without a Reader.
var errNoSegmentReader = errors.New("broker: no reader for tiered segments")

// segmentBatches returns the batches inside segment seg from the one holding
// offset on, within maxBytes, as FindBatches answers batches.
func (b *Broker) segmentBatches(ctx context.Context, seg coordapi.BatchCoord, offset int64, maxBytes int32) ([]coordapi.BatchCoord, error) {
	if b.segments == nil {
		return nil, errNoSegmentReader
	}
	batches, err := b.segments.Batches(ctx, seg, offset, maxBytes)
	if err != nil {
		return nil, fmt.Errorf("find offset %d in segment %s: %w", offset, seg.ObjectKey, err)
	}
	return batches, nil
}

// batchInSegment returns the batch of segment seg a ListOffsets answer is
// exact within: for a timestamp search (target >= 0), the first batch from
// offset on whose max timestamp is at least target; for TimestampMax, the
// batch holding offset (the coordinator's answer lies in the right batch).
func (b *Broker) batchInSegment(ctx context.Context, seg coordapi.BatchCoord, offset, target int64) (coordapi.BatchCoord, error) {
	if target < 0 {
		batches, err := b.segmentBatches(ctx, seg, offset, 1)
		if err != nil {
			return coordapi.BatchCoord{}, err
		}
		return batches[0], nil
	}
	if b.segments == nil {
		return coordapi.BatchCoord{}, errNoSegmentReader
	}
	bc, ok, err := b.segments.BatchAtTimestamp(ctx, seg, offset, target)
	switch {
	case err != nil:
		return coordapi.BatchCoord{}, fmt.Errorf("find timestamp %d from offset %d in segment %s: %w", target, offset, seg.ObjectKey, err)
	case !ok:
		return coordapi.BatchCoord{}, fmt.Errorf("no batch of segment %s from offset %d has a timestamp at or above %d", seg.ObjectKey, offset, target)
	}
	return bc, nil
}

// logSegmentError logs a segment read that failed on a corrupt segment: the
// partition answers a retriable error, but retrying does not mend it.
func (b *Broker) logSegmentError(ctx context.Context, op string, err error) {
	if errors.Is(err, tiered.ErrCorrupt) {
		b.log.ErrorContext(ctx, "corrupt tiered segment", "op", op, "err", err)
	}
}
