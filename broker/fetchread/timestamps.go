package fetchread

import (
	"context"
	"errors"
	"fmt"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/record"
)

// errFound stops a record iteration early.
var errFound = errors.New("found")

// ListOffset resolves one ListOffsets timestamp to (offset, timestamp,
// leader epoch), all -1 when there is none. The coordinator knows every
// special timestamp (-1 latest, -2 earliest, -3 max, -4 earliest local, -5
// latest tiered); any other value searches by timestamp, as in Kafka.
//
// The leader epoch is the one of the returned offset: LeaderEpoch, except
// for a partition that never had a record, whose epoch history is empty
// (-1, as Kafka answers).
//
// The earliest and latest offsets, what a starting consumer asks for, come
// from the partition's state, which also says whether it ever had a record:
// one coordinator call, not a ListOffset and then a PartitionState. ps is
// that state when it was fetched, for the caller to reuse. err is the
// coordinator's.
func (rd *Reader) ListOffset(ctx context.Context, id coordapi.TopicID, partition int32, timestamp int64) (offset, ts int64, epoch int32, ps *coordapi.PartitionState, err error) {
	switch timestamp {
	case coordapi.TimestampEarliest, coordapi.TimestampEarliestLocal, coordapi.TimestampLatest:
		st, err := rd.coord.PartitionState(ctx, id, partition)
		if err != nil {
			return -1, -1, -1, nil, err
		}
		offset, epoch = st.LogStartOffset, LeaderEpoch
		if timestamp == coordapi.TimestampLatest {
			offset = st.HighWatermark
		}
		if st.HighWatermark == 0 {
			epoch = -1 // never written
		}
		return offset, -1, epoch, &st, nil
	}
	offset, ts, err = rd.coord.ListOffset(ctx, id, partition, timestamp)
	if err != nil {
		return -1, -1, -1, nil, err
	}
	if offset < 0 {
		return -1, -1, -1, nil, nil
	}
	if timestamp >= 0 || timestamp == coordapi.TimestampMax {
		if o, t, err := rd.exactTimestampOffset(ctx, id, partition, timestamp, offset); err == nil {
			offset, ts = o, t
		} else if errors.Is(err, errNoSuchRecord) {
			return -1, -1, -1, nil, nil // the segment's qualifying batches lie below the log start
		} else {
			// The batch could not be read back: the batch-granular answer
			// (at or before the exact one) still lets the client go on.
			rd.opts.Logger.Warn("list offsets by timestamp: answering the batch's offset", "offset", offset, "err", err)
		}
	}
	return offset, ts, LeaderEpoch, nil, nil
}

// readBatch returns the bytes of the batch that holds offset, with its
// coordinates. When offset lies in a tiered segment, the batch is found
// inside it (batchInSegment): for a timestamp search (target >= 0) the first
// batch from offset on whose max timestamp is at least target, which may
// start after offset.
func (rd *Reader) readBatch(ctx context.Context, id coordapi.TopicID, partition int32, offset, target int64) ([]byte, coordapi.BatchCoord, error) {
	found, err := rd.coord.FindBatches(ctx, coordapi.FindBatchesRequest{TopicID: id, Partition: partition, Offset: offset, MaxBytes: 1})
	if err != nil {
		return nil, coordapi.BatchCoord{}, err
	}
	if len(found.Batches) == 0 {
		return nil, coordapi.BatchCoord{}, fmt.Errorf("no batch holds offset %d", offset)
	}
	bc := found.Batches[0]
	if bc.Segment {
		seg := bc
		bc, err = rd.batchInSegment(ctx, seg, offset, target)
		if errors.Is(err, errNoneInSegment) {
			bc, err = rd.batchAtTimestamp(ctx, id, partition, seg.LastOffset+1, target)
		}
		if err != nil {
			rd.logSegmentError(ctx, "list offsets", err)
			return nil, coordapi.BatchCoord{}, err
		}
	}
	data, err := rd.ranges.GetRange(ctx, bc.ObjectKey, bc.ObjectSize, bc.ByteOffset, int64(bc.ByteLength))
	if err != nil {
		return nil, bc, fmt.Errorf("read batch at offset %d from %s: %w", bc.BaseOffset, bc.ObjectKey, err)
	}
	return data, bc, nil
}

// exactTimestampOffset narrows the coordinator's batch-granular ListOffsets
// answer to the record, as Kafka answers: for a timestamp search, the first
// record of the batch with timestamp >= target; for TimestampMax, the
// first record holding the batch's max timestamp. offset is the
// coordinator's answer: an offset within the right batch, or for a
// timestamp search in a tiered segment, the segment's start (or the log
// start), at or before the right batch. It returns the record's offset
// and timestamp, errNoSuchRecord when no record reaches target.
func (rd *Reader) exactTimestampOffset(ctx context.Context, id coordapi.TopicID, partition int32, target, offset int64) (int64, int64, error) {
	data, bc, err := rd.readBatch(ctx, id, partition, offset, target)
	if err != nil {
		return 0, 0, err
	}
	offset = max(offset, bc.BaseOffset) // the batch found inside a segment may start later
	if bc.LogAppendTime {
		// Every record carries the append time: the coordinator's answer
		// (the batch start, or the log start inside it) is exact.
		return offset, bc.MaxTimestamp, nil
	}
	h, err := record.ParseHeader(data)
	if err != nil {
		return 0, 0, err
	}
	if h.LogAppendTime() {
		return offset, h.MaxTimestamp, nil
	}
	want := target
	if target == coordapi.TimestampMax {
		want = h.MaxTimestamp
	}
	resOffset, resTS := int64(-1), int64(-1)
	err = record.Records(data, func(r *record.Record) error {
		ts := h.BaseTimestamp + r.TimestampDelta
		o := bc.BaseOffset + int64(r.OffsetDelta)
		if o < offset && target != coordapi.TimestampMax {
			// Below the coordinator's answer (the log start): skip.
			return nil
		}
		if (target == coordapi.TimestampMax && ts == want) || (target != coordapi.TimestampMax && ts >= want) {
			resOffset, resTS = o, ts
			return errFound
		}
		return nil
	})
	if err != nil && !errors.Is(err, errFound) {
		return 0, 0, err
	}
	if resOffset < 0 {
		// The batch header promised a record; trust the coordinator.
		return offset, h.MaxTimestamp, nil
	}
	return resOffset, resTS, nil
}
