package coordinator

import (
	"context"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-io/floe/coordapi"
)

// DeleteRecords moves a partition's log start up to offset (Kafka's
// DeleteRecords) and returns the new low watermark. offset -1 means the
// high watermark; an offset at or below the current log start changes
// nothing. Batches wholly below the new log start are deleted and their
// bytes counted dead in their objects; the batch containing the new log
// start stays (fetches skip its earlier records). Kafka-level failures:
// UnknownTopicID, UnknownTopicOrPartition, OffsetOutOfRange (above the
// high watermark or negative).
func (c *Coordinator) DeleteRecords(ctx context.Context, id coordapi.TopicID, partition int32, offset int64) (lowWatermark int64, err error) {
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
			coordapi.Errorf(kerr.OffsetOutOfRange, "offset %d is outside [0, %d]", offset, st.hwm))
	}
	if offset <= st.logStart {
		return st.logStart, nil
	}

	b := c.db.NewBatch()
	defer b.Close()
	lower, _ := batchPartitionBounds(id, partition)
	upper := batchKey(id, partition, offset) // runs whose last offset is below offset
	dead, batches, err := c.runBytes(lower, upper)
	if err != nil {
		return -1, fmt.Errorf("delete records: %w", err)
	}
	var run []coordapi.BatchCoord
	_ = b.DeleteRange(lower, upper, nil)
	// The run holding offset loses the batches wholly below it.
	err = c.scanRange(upper, batchKey(id, partition, st.hwm), func(k, v []byte) error {
		last, err := decodeBatchKey(k)
		if err != nil {
			return err
		}
		var (
			h     runHeader
			prods []byte
		)
		if h, run, prods, err = decodeBatchRun(last, v, run[:0]); err != nil {
			return err
		}
		i := 0
		for i < len(run) && run[i].LastOffset < offset {
			dead[h.object] += int64(run[i].ByteLength)
			i++
		}
		if i > 0 {
			// Its producer states stay: they are not replayed (the run ends
			// below the checkpoint written here) but a trimmed run keeps
			// its encoding whole.
			_ = b.Set(k, append(appendBatchRun(nil, &h, run[i:]), prods...), nil)
			batches += i
		}
		return errStopScan
	})
	if err != nil && !errors.Is(err, errStopScan) {
		return -1, fmt.Errorf("delete records: %w", err)
	}

	st.logStart = offset
	if st.maxTimestampLast >= 0 && st.maxTimestampLast < offset {
		// The max-timestamp batch is gone: find the new one among the rest.
		if err := c.recomputeMaxTimestampLocked(id, partition, &st); err != nil {
			return -1, fmt.Errorf("delete records: %w", err)
		}
	}
	// A checkpoint: the runs replayed at Open start at its high watermark,
	// above the deleted ones.
	pk := partKey{id, partition}
	c.checkpointLocked(b, pk, &st, nil)
	objects := c.deadBytesLocked(b, dead, c.now().UnixMilli())
	if err := b.Commit(pebble.Sync); err != nil {
		return -1, fmt.Errorf("delete records: commit: %w", err)
	}
	c.checkpointedLocked(pk)
	c.mu.Lock()
	t.parts[partition] = st
	c.installObjectsLocked(objects)
	c.mu.Unlock()
	c.log.Info("records deleted", "topic", t.name, "partition", partition, "log_start", offset, "batches", batches)
	return offset, nil
}

// errStopScan ends a scanRange early.
var errStopScan = errors.New("coordinator: stop scan")

// recomputeMaxTimestampLocked rebuilds st's max-timestamp tracking from the
// batches whose last offset is at or above st.logStart. c.commit must be
// held.
func (c *Coordinator) recomputeMaxTimestampLocked(id coordapi.TopicID, partition int32, st *partState) error {
	fresh := newPartState()
	lower := batchKey(id, partition, st.logStart)
	upper := batchKey(id, partition, st.hwm)
	var run []coordapi.BatchCoord
	err := c.scanRange(lower, upper, func(k, v []byte) error {
		last, err := decodeBatchKey(k)
		if err != nil {
			return err
		}
		if _, run, _, err = decodeBatchRun(last, v, run[:0]); err != nil {
			return err
		}
		for _, bc := range run {
			if bc.LastOffset >= st.logStart {
				fresh.noteBatch(bc.BaseOffset, bc.LastOffset, bc.MaxTimestamp, bc.LogAppendTime)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	st.maxTimestamp, st.maxTimestampOffset, st.maxTimestampLast = fresh.maxTimestamp, fresh.maxTimestampOffset, fresh.maxTimestampLast
	return nil
}

// runBytes sums, per object, the byte lengths of the batches of the runs
// keyed in [lower, upper), and counts those batches: what deleting the runs
// takes from their objects' live bytes.
func (c *Coordinator) runBytes(lower, upper []byte) (dead map[uint64]int64, batches int, err error) {
	dead = map[uint64]int64{}
	var run []coordapi.BatchCoord
	err = c.scanRange(lower, upper, func(k, v []byte) error {
		last, err := decodeBatchKey(k)
		if err != nil {
			return err
		}
		var h runHeader
		if h, run, _, err = decodeBatchRun(last, v, run[:0]); err != nil {
			return err
		}
		for _, bc := range run {
			dead[h.object] += int64(bc.ByteLength)
		}
		batches += len(run)
		return nil
	})
	return dead, batches, err
}
