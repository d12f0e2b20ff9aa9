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
	if err := c.deleteRecordsLocked(t, partition, st, offset, "delete records"); err != nil {
		return -1, fmt.Errorf("delete records: %w", err)
	}
	return offset, nil
}

// deleteRecordsLocked moves partition's log start from st.logStart up to
// offset (in (st.logStart, st.hwm]) in one synced batch: rows wholly below
// offset are deleted and their bytes counted dead in their objects; the
// run holding offset loses its batches wholly below it; a segment holding
// it stays whole (fetches start at the log start inside it). why names
// the cause in the log. c.commit must be held.
func (c *Coordinator) deleteRecordsLocked(t *topicState, partition int32, st partState, offset int64, why string) error {
	id := t.id
	b := c.db.NewBatch()
	defer b.Close()
	lower, _ := layout.BatchPartitionBounds(id, partition)
	upper := layout.BatchKey(id, partition, offset) // rows whose last offset is below offset
	rs, err := c.rowStats(lower, upper)
	if err != nil {
		return err
	}
	var run []coordapi.BatchCoord
	_ = b.DeleteRange(lower, upper, nil)
	// The run holding offset loses the batches wholly below it.
	err = c.scanRange(upper, layout.BatchKey(id, partition, st.hwm), func(k, v []byte) error {
		if layout.IsSegmentRow(v) {
			return errStopScan
		}
		last, err := layout.DecodeBatchKey(k)
		if err != nil {
			return err
		}
		var (
			h     layout.RunHeader
			prods []byte
		)
		if h, run, prods, err = layout.DecodeBatchRun(last, v, run[:0]); err != nil {
			return err
		}
		i := 0
		for i < len(run) && run[i].LastOffset < offset {
			rs.Dead[h.Object] += int64(run[i].ByteLength)
			rs.Bytes += int64(run[i].ByteLength)
			i++
		}
		if i > 0 {
			// Its producer states stay: they are not replayed (the run ends
			// below the checkpoint written here) but a trimmed run keeps
			// its encoding whole.
			nv := append(layout.AppendBatchRun(nil, &h, run[i:]), prods...)
			_ = b.Set(k, nv, nil)
			rs.Batches += int64(i)
			rs.RowBytes += int64(len(v) - len(nv))
		}
		return errStopScan
	})
	if err != nil && !errors.Is(err, errStopScan) {
		return err
	}

	if offset > st.walStart {
		// The cut reaches the WAL tier: a job planned before it covers
		// rows that changed. One wholly within segments leaves them be.
		st.gen++
	}
	st.logStart = offset
	st.walStart = max(st.walStart, offset)
	st.bytes -= rs.Bytes
	st.segBytes -= rs.SegBytes
	st.segments -= rs.Segments
	st.metaBytes -= rs.RowBytes
	if st.maxTimestampLast >= 0 && st.maxTimestampLast < offset {
		// The max-timestamp batch is gone: find the new one among the rest.
		if err := c.recomputeMaxTimestampLocked(id, partition, &st); err != nil {
			return err
		}
	}
	// A checkpoint: the runs replayed at Open start at its high watermark,
	// above the deleted ones.
	pk := partKey{id, partition}
	c.checkpointLocked(b, pk, &st, nil)
	objects := c.deadBytesLocked(b, rs.Dead, c.now().UnixMilli())
	if err := c.write(b, pebble.Sync); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	c.checkpointedLocked(pk)
	c.mu.Lock()
	t.parts[partition] = st
	c.installObjectsLocked(objects)
	c.mu.Unlock()
	c.log.Info("records deleted", "why", why, "topic", t.name, "partition", partition, "log_start", offset,
		"batches", rs.Batches, "segments", rs.Segments, "bytes", rs.Bytes)
	return nil
}

// errStopScan ends a scanRange, or a scanRows, early.
var errStopScan = rowscan.ErrStop

// recomputeMaxTimestampLocked rebuilds st's max-timestamp tracking from the
// batches whose last offset is at or above st.logStart. c.commit must be
// held.
func (c *Coordinator) recomputeMaxTimestampLocked(id coordapi.TopicID, partition int32, st *partState) error {
	fresh := newPartState()
	if err := c.noteRowsLocked(&fresh, id, partition, st.logStart, st.hwm, st.logStart); err != nil {
		return err
	}
	st.maxTimestamp, st.maxTimestampOffset, st.maxTimestampLast = fresh.maxTimestamp, fresh.maxTimestampOffset, fresh.maxTimestampLast
	return nil
}

// noteRowsLocked notes in p's max-timestamp tracking, in offset order, the
// batches of the rows keyed in [from, to) whose last offset is at or above
// logStart. c.commit must be held.
func (c *Coordinator) noteRowsLocked(p *partState, id coordapi.TopicID, partition int32, from, to, logStart int64) error {
	var run []coordapi.BatchCoord
	return c.scanRange(layout.BatchKey(id, partition, from), layout.BatchKey(id, partition, to), func(k, v []byte) error {
		last, err := layout.DecodeBatchKey(k)
		if err != nil {
			return err
		}
		if layout.IsSegmentRow(v) {
			seg, err := layout.DecodeSegmentRow(last, v)
			if err != nil {
				return err
			}
			p.noteSegment(&seg)
			return nil
		}
		if _, run, _, err = layout.DecodeBatchRun(last, v, run[:0]); err != nil {
			return err
		}
		for _, bc := range run {
			if bc.LastOffset >= logStart {
				p.noteBatch(bc.BaseOffset, bc.LastOffset, bc.MaxTimestamp, bc.LogAppendTime)
			}
		}
		return nil
	})
}

// noteSegment updates the max-timestamp tracking with a segment's, as
// noteBatch does for each of its batches.
func (p *partState) noteSegment(s *layout.SegmentRow) {
	if s.MaxTimestamp <= p.maxTimestamp {
		return
	}
	p.maxTimestamp, p.maxTimestampOffset, p.maxTimestampLast = s.MaxTimestamp, s.TSOffset, s.TSLast
}

// rowStats sums the rows keyed in [lower, upper) (rowscan.RowStats).
func (c *Coordinator) rowStats(lower, upper []byte) (rowscan.Stats, error) {
	return rowscan.RowStats(c.scanRange, lower, upper)
}

// scanRows calls fn for every batch of the rows keyed in [lower, upper),
// in offset order (rowscan.Rows); fn returning errStopScan ends the scan
// without error.
func (c *Coordinator) scanRows(lower, upper []byte, fn func(k, v []byte, object uint64, bc coordapi.BatchCoord) error) error {
	return rowscan.Rows(c.scanRange, lower, upper, fn)
}
