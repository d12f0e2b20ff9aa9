package coordinator

import (
	"context"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/coordinator/layout"
	"github.com/floe-io/floe/coordinator/rowscan"
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
	if !c.owns(id, partition) {
		return nil, partState{}, c.notOwnedError(t, partition)
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
	c.settle(partKey{id, partition}, &st, true) // as FindBatches answers
	return st.public(), nil
}

func (p *partState) public() coordapi.PartitionState {
	return coordapi.PartitionState{LogStartOffset: p.logStart, HighWatermark: p.hwm, LastStableOffset: p.lso()}
}

// lso is the partition's last stable offset: the first offset of its
// oldest open transaction (not below the log start, as Kafka's first
// unstable offset), else its high watermark.
func (p *partState) lso() int64 {
	if p.hasOpen && p.firstOpen < p.hwm {
		return max(p.firstOpen, p.logStart)
	}
	return p.hwm
}

// FindBatches returns the coordinates of the batches from req.Offset on:
// the batch containing Offset first (whole: the client skips the records
// before Offset), then following batches while their summed length stays
// within MaxBytes; the first batch is returned even if larger than MaxBytes.
// Below the partition's WAL start the answer is the segment holding
// Offset, alone (BatchCoord.Segment).
// Offset equal to the high watermark returns no batches and no error.
// Kafka-level failures: UnknownTopicID, UnknownTopicOrPartition,
// OffsetOutOfRange (Offset below the log start or above the high
// watermark).
//
// It answers no further than the partition's durable high watermark
// (package durable), as Kafka's followers' replication bounds what its
// consumers read: the high watermark and last stable offset it reports
// are those.
func (c *Coordinator) FindBatches(ctx context.Context, req coordapi.FindBatchesRequest) (coordapi.FindBatchesResponse, error) {
	resp, _, err := c.FindBatchesSettled(ctx, req)
	return resp, err
}

// FindBatchesSettled is FindBatches, also saying whether its answer
// depends only on what the coordinator's log has (settled): then it may
// leave without waiting for the log (rpc.ServerOptions.SettledGate).
func (c *Coordinator) FindBatchesSettled(ctx context.Context, req coordapi.FindBatchesRequest) (_ coordapi.FindBatchesResponse, settled bool, _ error) {
	if err := c.enter(ctx); err != nil {
		return coordapi.FindBatchesResponse{}, false, err
	}
	defer c.leave()
	// Read at the end: a write whose change an answer saw counted itself
	// unsettled before it made the change.
	defer func() { settled = settled && c.unsettled.Load() == 0 }()

	// The state and the iterator are taken together under mu: partition
	// state is installed only after Pebble commits, so the iterator sees
	// at least every batch below the high watermark read here. A swap's
	// new objects go into memory before its write (writeWithNewObjects),
	// so every row the iterator sees resolves in finishLocked.
	c.mu.RLock()
	_, st, err := c.partitionLocked(req.TopicID, req.Partition)
	if err != nil {
		c.mu.RUnlock()
		return coordapi.FindBatchesResponse{}, false, err
	}
	if req.Offset < st.logStart || req.Offset > st.hwm {
		c.mu.RUnlock()
		return coordapi.FindBatchesResponse{PartitionState: st.public()}, false, c.outOfRange(req.TopicID, req.Partition, req.Offset, st)
	}
	// Within the high watermark, but maybe beyond the durable one: no
	// batches yet.
	settled = c.settle(partKey{req.TopicID, req.Partition}, &st, req.ReadCommitted)
	resp := coordapi.FindBatchesResponse{PartitionState: st.public()}
	limit := st.hwm
	if req.ReadCommitted {
		limit = st.lso()
	}
	if req.Offset >= limit {
		c.mu.RUnlock()
		return resp, settled, nil
	}
	it, err := c.db.NewIter(&pebble.IterOptions{
		LowerBound: layout.BatchKey(req.TopicID, req.Partition, req.Offset),
		UpperBound: layout.BatchKey(req.TopicID, req.Partition, st.hwm),
	})
	c.mu.RUnlock()
	if err != nil {
		return resp, false, fmt.Errorf("find batches: new iterator: %w", err)
	}

	var nums []uint64 // object of each batch
	resp.Batches, nums, err = rowscan.Batches(it, req, limit)
	if cerr := it.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("find batches: iterate: %w", cerr)
	}
	if err != nil {
		return resp, false, err
	}

	c.mu.RLock()
	defer c.mu.RUnlock()
	err = c.finishLocked(req, &resp, nums)
	if err == nil && req.ReadCommitted {
		resp.Aborted = c.abortedLocked(partKey{req.TopicID, req.Partition}, req.Offset, limit)
	}
	return resp, settled, err
}

// settle caps st, a partition's state read for an answer, at what the log
// has made durable (Tracker.ReadLimit): its high watermark, and so its
// last stable offset, at the durable high watermark (not below the log
// start). Where that cannot be told (its first commit here in flight, or,
// for an answer that depends on markers, one of them), it leaves st as it
// is and returns false: the answer waits for the log. c.mu must be held.
func (c *Coordinator) settle(pk partKey, st *partState, markers bool) bool {
	limit, ok := c.dur.ReadLimit(pk, st.hwm, markers)
	if ok {
		st.hwm = max(limit, st.logStart)
	}
	return ok
}

// finishLocked completes resp, the batches scanned for req (nums their
// objects), under c.mu: DeleteRecords or DeleteTopic may have removed
// batches since the state was read, so if the requested offset went away
// resp is answered as of now; then the batches get their objects' keys and
// sizes. c.mu must be held.
func (c *Coordinator) finishLocked(req coordapi.FindBatchesRequest, resp *coordapi.FindBatchesResponse, nums []uint64) error {
	if len(resp.Batches) == 0 || resp.Batches[0].BaseOffset > req.Offset {
		_, now, err := c.partitionLocked(req.TopicID, req.Partition)
		if err != nil {
			*resp = coordapi.FindBatchesResponse{}
			return err
		}
		if req.Offset < now.logStart {
			*resp = coordapi.FindBatchesResponse{PartitionState: now.public()}
			return c.outOfRange(req.TopicID, req.Partition, req.Offset, now)
		}
	}
	for i, num := range nums {
		o := c.mu.objects[num]
		if o == nil {
			return fmt.Errorf("find batches: batch at offset %d references unknown object %d", resp.Batches[i].BaseOffset, num)
		}
		resp.Batches[i].ObjectKey = o.key
		resp.Batches[i].ObjectSize = o.size
	}
	return nil
}

// FindBatchesMulti answers many FindBatches requests: one result per
// request, in order, each holding what FindBatches answers for it, its
// Kafka-level failure in ErrorCode (OffsetOutOfRange with the partition's
// state). A partition whose batches cannot be read (a storage failure)
// gets KAFKA_STORAGE_ERROR, and the failure is logged; an error is
// returned only when nothing could be answered (ctx done, the coordinator
// closed).
//
// It follows FindBatches's consistency rule with one hold of mu for all
// the partitions: every state is read, and one Pebble iterator taken,
// under the same hold, so that the iterator sees every batch below each
// high watermark read; a second hold settles offsets removed meanwhile.
//
// Like FindBatches it answers no further than each partition's durable
// high watermark.
func (c *Coordinator) FindBatchesMulti(ctx context.Context, reqs []coordapi.FindBatchesRequest) ([]coordapi.FindBatchesResult, error) {
	out, _, err := c.FindBatchesMultiSettled(ctx, reqs)
	return out, err
}

// FindBatchesMultiSettled is FindBatchesMulti, also saying whether its
// answer depends only on what the coordinator's log has (as
// FindBatchesSettled).
func (c *Coordinator) FindBatchesMultiSettled(ctx context.Context, reqs []coordapi.FindBatchesRequest) (_ []coordapi.FindBatchesResult, settled bool, _ error) {
	if err := c.enter(ctx); err != nil {
		return nil, false, err
	}
	defer c.leave()
	settled = true
	defer func() { settled = settled && c.unsettled.Load() == 0 }() // as FindBatchesSettled

	out := make([]coordapi.FindBatchesResult, len(reqs))
	scan := make([]bool, len(reqs))    // partitions with batches to read
	limits := make([]int64, len(reqs)) // where each one's batches stop
	scans := 0
	c.mu.RLock()
	for i, req := range reqs {
		_, st, err := c.partitionLocked(req.TopicID, req.Partition)
		if err != nil {
			out[i].ErrorCode = errorCode(err)
			settled = false
			continue
		}
		if req.Offset < st.logStart || req.Offset > st.hwm {
			out[i].PartitionState = st.public()
			out[i].ErrorCode = kerr.OffsetOutOfRange.Code
			settled = false
			continue
		}
		settled = c.settle(partKey{req.TopicID, req.Partition}, &st, req.ReadCommitted) && settled
		out[i].PartitionState = st.public()
		limits[i] = st.hwm
		if req.ReadCommitted {
			limits[i] = st.lso()
		}
		switch {
		case req.Offset < limits[i]:
			scan[i] = true
			scans++
		}
	}
	if scans == 0 {
		c.mu.RUnlock()
		return out, settled, nil
	}
	it, err := c.db.NewIter(&pebble.IterOptions{})
	c.mu.RUnlock()
	if err != nil {
		return nil, false, fmt.Errorf("find batches: new iterator: %w", err)
	}

	nums := make([][]uint64, len(reqs))
	for i, req := range reqs {
		if !scan[i] {
			continue
		}
		if err := ctx.Err(); err != nil {
			_ = it.Close()
			return nil, false, err
		}
		it.SetBounds(layout.BatchKey(req.TopicID, req.Partition, req.Offset), layout.BatchKey(req.TopicID, req.Partition, out[i].HighWatermark))
		batches, objs, err := rowscan.Batches(it, req, limits[i])
		if err != nil {
			c.log.Error("find batches", "topic", req.TopicID, "partition", req.Partition, "offset", req.Offset, "err", err)
			out[i].ErrorCode = kerr.KafkaStorageError.Code
			scan[i], settled = false, false
			continue
		}
		out[i].Batches, nums[i] = batches, objs
	}
	if err := it.Close(); err != nil {
		return nil, false, fmt.Errorf("find batches: iterate: %w", err)
	}

	c.mu.RLock()
	defer c.mu.RUnlock()
	for i, req := range reqs {
		if !scan[i] {
			continue
		}
		if err := c.finishLocked(req, &out[i].FindBatchesResponse, nums[i]); err != nil {
			out[i].ErrorCode, settled = errorCode(err), false
			if out[i].ErrorCode == kerr.KafkaStorageError.Code {
				c.log.Error("find batches", "topic", req.TopicID, "partition", req.Partition, "offset", req.Offset, "err", err)
				out[i].FindBatchesResponse = coordapi.FindBatchesResponse{}
			}
			continue
		}
		if req.ReadCommitted {
			out[i].Aborted = c.abortedLocked(partKey{req.TopicID, req.Partition}, req.Offset, limits[i])
		}
	}
	return out, settled, nil
}

// errorCode is err's Kafka error code, KAFKA_STORAGE_ERROR (retriable)
// for a failure that has none.
func errorCode(err error) int16 {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	return kerr.KafkaStorageError.Code
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
	c.settle(partKey{id, partition}, &st, true) // as FindBatches answers
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
		LowerBound: layout.BatchKey(id, partition, st.logStart),
		UpperBound: layout.BatchKey(id, partition, st.hwm),
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
		last, err := layout.DecodeBatchKey(it.Key())
		if err != nil {
			return -1, -1, err
		}
		v, err := it.ValueAndErr()
		if err != nil {
			return -1, -1, fmt.Errorf("list offset: read: %w", err)
		}
		if _, run, _, err = layout.DecodeBatchRun(last, v, run[:0]); err != nil {
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
