package coordinator

import (
	"context"
	"fmt"

	"github.com/cockroachdb/pebble"
	"github.com/twmb/franz-go/pkg/kerr"
)

// DeleteRecords moves a partition's log start up to offset (Kafka's
// DeleteRecords) and returns the new low watermark. offset -1 means the
// high watermark; an offset at or below the current log start changes
// nothing. Batches wholly below the new log start are deleted and their
// bytes counted dead in their objects; the batch containing the new log
// start stays (fetches skip its earlier records). Kafka-level failures:
// UnknownTopicID, UnknownTopicOrPartition, OffsetOutOfRange (above the
// high watermark or negative).
func (c *Coordinator) DeleteRecords(ctx context.Context, id TopicID, partition int32, offset int64) (lowWatermark int64, err error) {
	if err := c.enter(ctx); err != nil {
		return -1, err
	}
	defer c.leave()
	c.commit.Lock()
	defer c.commit.Unlock()
	t, st, err := c.partitionLocked(id, partition)
	if err != nil {
		return -1, fmt.Errorf("delete records: %w", err)
	}
	if offset == -1 {
		offset = st.hwm
	}
	if offset < 0 || offset > st.hwm {
		return -1, fmt.Errorf("delete records of %q/%d: %w", t.name, partition,
			kafkaErrorf(kerr.OffsetOutOfRange, "offset %d is outside [0, %d]", offset, st.hwm))
	}
	if offset <= st.logStart {
		return st.logStart, nil
	}

	b := c.db.NewBatch()
	defer b.Close()
	lower, _ := batchPartitionBounds(id, partition)
	upper := batchKey(id, partition, offset) // batches whose last offset is below offset
	dead := map[uint64]int64{}
	var batches int
	err = c.scanRange(lower, upper, func(_, v []byte) error {
		bv, err := decodeBatchValue(v)
		if err != nil {
			return err
		}
		dead[bv.object] += int64(bv.byteLength)
		batches++
		return nil
	})
	if err != nil {
		return -1, fmt.Errorf("delete records: %w", err)
	}
	_ = b.DeleteRange(lower, upper, nil)

	st.logStart = offset
	if st.maxTimestampLast >= 0 && st.maxTimestampLast < offset {
		// The max-timestamp batch is gone: find the new one among the rest.
		if err := c.recomputeMaxTimestampLocked(id, partition, &st); err != nil {
			return -1, fmt.Errorf("delete records: %w", err)
		}
	}
	_ = b.Set(partitionKey(id, partition), encodePartition(&st), nil)
	objects := c.deadBytesLocked(b, dead, c.now().UnixMilli())
	if err := b.Commit(pebble.Sync); err != nil {
		return -1, fmt.Errorf("delete records: commit: %w", err)
	}
	c.mu.Lock()
	t.parts[partition] = st
	c.installObjectsLocked(objects)
	c.mu.Unlock()
	c.log.Info("records deleted", "topic", t.name, "partition", partition, "log_start", offset, "batches", batches)
	return offset, nil
}

// recomputeMaxTimestampLocked rebuilds st's max-timestamp tracking from the
// batches at or above st.logStart. c.commit must be held.
func (c *Coordinator) recomputeMaxTimestampLocked(id TopicID, partition int32, st *partState) error {
	fresh := newPartState()
	lower := batchKey(id, partition, st.logStart)
	upper := batchKey(id, partition, st.hwm)
	err := c.scanRange(lower, upper, func(k, v []byte) error {
		last, err := decodeBatchKey(k)
		if err != nil {
			return err
		}
		bv, err := decodeBatchValue(v)
		if err != nil {
			return err
		}
		fresh.noteBatch(last-int64(bv.lastOffsetDelta), last, bv.maxTimestamp, bv.logAppendTime)
		return nil
	})
	if err != nil {
		return err
	}
	st.maxTimestamp, st.maxTimestampOffset, st.maxTimestampLast = fresh.maxTimestamp, fresh.maxTimestampOffset, fresh.maxTimestampLast
	return nil
}
