package coordinator

import (
	"context"
	"fmt"

	"github.com/cockroachdb/pebble"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-io/floe/coordapi"
)

// partitionLocked returns a partition's topic and state. c.mu (or
// c.commit) must be held.
func (c *Coordinator) partitionLocked(id coordapi.TopicID, partition int32) (*topicState, partState, error) {
	t := c.mu.topicsByID[id]
	if t == nil {
		return nil, partState{}, fmt.Errorf("topic %s: %w", id, kerr.UnknownTopicID)
	}
	if partition < 0 || int(partition) >= len(t.parts) {
		return nil, partState{}, fmt.Errorf("topic %q partition %d: %w", t.name, partition, kerr.UnknownTopicOrPartition)
	}
	return t, t.parts[partition], nil
}

// PartitionState returns a partition's log start offset and high
// watermark. Kafka-level failures: UnknownTopicID,
// UnknownTopicOrPartition.
func (c *Coordinator) PartitionState(ctx context.Context, id coordapi.TopicID, partition int32) (coordapi.PartitionState, error) {
	if err := c.enter(ctx); err != nil {
		return coordapi.PartitionState{}, err
	}
	defer c.leave()
	c.mu.RLock()
	defer c.mu.RUnlock()
	_, st, err := c.partitionLocked(id, partition)
	if err != nil {
		return coordapi.PartitionState{}, err
	}
	return st.public(), nil
}

func (p *partState) public() coordapi.PartitionState {
	return coordapi.PartitionState{LogStartOffset: p.logStart, HighWatermark: p.hwm}
}

// FindBatches returns the coordinates of the batches from req.Offset on:
// the batch containing Offset first (whole: the client skips the records
// before Offset), then following batches while their summed length stays
// within MaxBytes; the first batch is returned even if larger than MaxBytes.
// Offset equal to the high watermark returns no batches and no error.
// Kafka-level failures: UnknownTopicID, UnknownTopicOrPartition,
// OffsetOutOfRange (Offset below the log start or above the high
// watermark).
func (c *Coordinator) FindBatches(ctx context.Context, req coordapi.FindBatchesRequest) (coordapi.FindBatchesResponse, error) {
	if err := c.enter(ctx); err != nil {
		return coordapi.FindBatchesResponse{}, err
	}
	defer c.leave()

	// The state and the iterator are taken together under mu: memory is
	// installed only after Pebble commits, so the iterator sees at least
	// every batch below the high watermark read here.
	c.mu.RLock()
	_, st, err := c.partitionLocked(req.TopicID, req.Partition)
	if err != nil {
		c.mu.RUnlock()
		return coordapi.FindBatchesResponse{}, err
	}
	resp := coordapi.FindBatchesResponse{PartitionState: st.public()}
	if req.Offset < st.logStart || req.Offset > st.hwm {
		c.mu.RUnlock()
		return resp, c.outOfRange(req.TopicID, req.Partition, req.Offset, st)
	}
	if req.Offset == st.hwm {
		c.mu.RUnlock()
		return resp, nil
	}
	it, err := c.db.NewIter(&pebble.IterOptions{
		LowerBound: batchKey(req.TopicID, req.Partition, req.Offset),
		UpperBound: batchKey(req.TopicID, req.Partition, st.hwm),
	})
	c.mu.RUnlock()
	if err != nil {
		return resp, fmt.Errorf("find batches: new iterator: %w", err)
	}

	var (
		nums  []uint64 // object of each batch
		total int64
	)
scan:
	for valid := it.First(); valid; valid = it.Next() {
		last, err := decodeBatchKey(it.Key())
		if err != nil {
			_ = it.Close()
			return resp, err
		}
		v, err := it.ValueAndErr()
		if err != nil {
			_ = it.Close()
			return resp, fmt.Errorf("find batches: read: %w", err)
		}
		r, err := newRunReader(last, v)
		for err == nil {
			var (
				bc coordapi.BatchCoord
				ok bool
			)
			if bc, ok, err = r.next(); !ok || err != nil {
				break
			}
			if bc.LastOffset < req.Offset {
				continue // before the batch holding Offset, in the first run
			}
			if len(resp.Batches) > 0 && total+int64(bc.ByteLength) > int64(req.MaxBytes) {
				break scan
			}
			total += int64(bc.ByteLength)
			resp.Batches = append(resp.Batches, bc)
			nums = append(nums, r.h.object)
		}
		if err != nil {
			_ = it.Close()
			return resp, err
		}
	}
	if err := it.Close(); err != nil {
		return resp, fmt.Errorf("find batches: iterate: %w", err)
	}

	c.mu.RLock()
	defer c.mu.RUnlock()
	// DeleteRecords or DeleteTopic may have removed batches between the two
	// looks; answer as of now if the requested offset went away.
	if len(resp.Batches) == 0 || resp.Batches[0].BaseOffset > req.Offset {
		_, now, err := c.partitionLocked(req.TopicID, req.Partition)
		if err != nil {
			return coordapi.FindBatchesResponse{}, err
		}
		if req.Offset < now.logStart {
			return coordapi.FindBatchesResponse{PartitionState: now.public()}, c.outOfRange(req.TopicID, req.Partition, req.Offset, now)
		}
	}
	for i, num := range nums {
		o := c.mu.objects[num]
		if o == nil {
			return resp, fmt.Errorf("find batches: batch at offset %d references unknown object %d", resp.Batches[i].BaseOffset, num)
		}
		resp.Batches[i].ObjectKey = o.key
		resp.Batches[i].ObjectSize = o.size
	}
	return resp, nil
}

func (c *Coordinator) outOfRange(id coordapi.TopicID, partition int32, offset int64, st partState) error {
	return coordapi.Errorf(kerr.OffsetOutOfRange, "offset %d of %s/%d is outside [%d, %d]", offset, id, partition, st.logStart, st.hwm)
}

// ListOffset answers ListOffsets for one partition with an offset and the
// timestamp that goes with it:
//
//   - TimestampEarliest, TimestampEarliestLocal: the log start, timestamp -1.
//   - TimestampLatest: the high watermark, timestamp -1.
//   - TimestampLatestTiered: -1, -1 (no Kafka tiered storage).
//   - TimestampMax: the batch with the largest max timestamp (the earliest
//     on ties). Kafka answers the offset of the record holding it; the
//     coordinator knows batches only, so it answers the batch's last offset
//     for CreateTime batches (the record is at or before it) and its base
//     offset for LogAppendTime batches (every record has that timestamp),
//     never below the log start. An empty partition answers -1, -1.
//   - Any other timestamp: the first batch (from the log start) whose max
//     timestamp is >= it; the answer is its base offset, or the log start if
//     that is higher, with the batch's max timestamp. None: -1, -1 without
//     error. This scans the partition's batches from the log start.
//
// Kafka-level failures: UnknownTopicID, UnknownTopicOrPartition.
func (c *Coordinator) ListOffset(ctx context.Context, id coordapi.TopicID, partition int32, timestamp int64) (offset int64, ts int64, err error) {
	if err := c.enter(ctx); err != nil {
		return -1, -1, err
	}
	defer c.leave()
	c.mu.RLock()
	_, st, err := c.partitionLocked(id, partition)
	if err != nil {
		c.mu.RUnlock()
		return -1, -1, err
	}
	switch timestamp {
	case coordapi.TimestampEarliest, coordapi.TimestampEarliestLocal:
		c.mu.RUnlock()
		return st.logStart, -1, nil
	case coordapi.TimestampLatest:
		c.mu.RUnlock()
		return st.hwm, -1, nil
	case coordapi.TimestampLatestTiered:
		c.mu.RUnlock()
		return -1, -1, nil
	case coordapi.TimestampMax:
		c.mu.RUnlock()
		if st.maxTimestampOffset < 0 || st.logStart == st.hwm {
			return -1, -1, nil
		}
		return max(st.maxTimestampOffset, st.logStart), st.maxTimestamp, nil
	}
	if st.logStart == st.hwm {
		c.mu.RUnlock()
		return -1, -1, nil
	}
	it, err := c.db.NewIter(&pebble.IterOptions{
		LowerBound: batchKey(id, partition, st.logStart),
		UpperBound: batchKey(id, partition, st.hwm),
	})
	c.mu.RUnlock()
	if err != nil {
		return -1, -1, fmt.Errorf("list offset: new iterator: %w", err)
	}
	defer it.Close()
	n := 0
	var run []coordapi.BatchCoord
	for valid := it.First(); valid; valid = it.Next() {
		if n++; n%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return -1, -1, err
			}
		}
		last, err := decodeBatchKey(it.Key())
		if err != nil {
			return -1, -1, err
		}
		v, err := it.ValueAndErr()
		if err != nil {
			return -1, -1, fmt.Errorf("list offset: read: %w", err)
		}
		if _, run, _, err = decodeBatchRun(last, v, run[:0]); err != nil {
			return -1, -1, err
		}
		for _, bc := range run {
			if bc.LastOffset >= st.logStart && bc.MaxTimestamp >= timestamp {
				return max(bc.BaseOffset, st.logStart), bc.MaxTimestamp, nil
			}
		}
	}
	if err := it.Error(); err != nil {
		return -1, -1, fmt.Errorf("list offset: iterate: %w", err)
	}
	return -1, -1, nil
}
