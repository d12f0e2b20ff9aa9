package tiered

// Table jobs, the broker's side of a table job (issue 41,
// docs/design/iceberg-tables.md):
//
//	ClaimTierJob (Tables: the broker runs them) ─> Kind TierJobTable
//	  ─> TableJobRunner.RunTableJob: each range's segments, read in windows of whole
//	     checked batches, and WAL batches (TableWAL), read one by one and stamped with
//	     their offsets ─> decode (read_committed) ─> one Iceberg snapshot (package table)
//	  ─> CompleteTierJob (Partition -1, or -3 to -5 for a topic's further jobs; Table: the covered offsets) ─> done
//	failure: AbandonTierJob; the table's snapshot summary keeps a retried job exactly once,
//	and files of a commit that died are the table maintenance's orphans
//
//	ClaimTierJob (TableMaintain) ─> Kind TierJobTableMaintain (Partition -2, at most daily)
//	  ─> TableJobRunner.MaintainTable: table.retention.ms, snapshot expiry, orphan files
//	  ─> CompleteTierJob (Table: the retention's delete snapshot and rows) ─> done
//
// The writer sits behind TableJobRunner so that this package does not link
// the Iceberg and Parquet libraries (the node adapts package table to it).

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/record"
)

// SegmentBatches calls fn with each whole batch of segment seg's data part
// in offset order, each checked (header, length, CRC, offsets within the
// segment's). The batch aliases bytes the reader may share: fn must not
// modify it or keep it past its return. A WAL batch (seg.Segment false,
// ClaimTierJobRequest.TableWAL) is read alone, checked, and given to fn
// with its offsets (and a LogAppendTime topic's time) stamped, as Fetch
// serves it.
type SegmentBatches func(ctx context.Context, seg coordapi.BatchCoord, fn func(batch []byte) error) error

// TableJobRunner writes a table job's records to its table. The node
// implements it over package table.
type TableJobRunner interface {
	// RunTableJob commits job (Kind TierJobTable, Table set) to its
	// table, reading each range's segments with read, and returns what
	// the job reports. It is exactly once by the table's own covered
	// offsets: a range the table covers adds nothing.
	RunTableJob(ctx context.Context, job coordapi.TierJob, read SegmentBatches) (coordapi.TableResult, error)
	// MaintainTable maintains job's table (Kind TierJobTableMaintain,
	// Maintain set): it removes the rows older than its retention,
	// expires old snapshots and deletes orphan files, and returns what
	// the job reports (SnapshotID the delete snapshot, Rows the rows
	// removed). A topic whose table does not exist yet has nothing to
	// maintain.
	MaintainTable(ctx context.Context, job coordapi.TierJob) (coordapi.TableResult, error)
}

// checkTableJob checks what runTableJob relies on: ranges of distinct
// partitions, each with segments that hold it.
func checkTableJob(job coordapi.TierJob) error {
	tj := job.Table
	if tj == nil || tj.TopicName == "" || len(tj.Ranges) == 0 {
		return fmt.Errorf("%w: table job without a table or ranges", ErrBadJob)
	}
	seen := map[int32]bool{}
	for _, r := range tj.Ranges {
		switch {
		case seen[r.Partition]:
			return fmt.Errorf("%w: partition %d twice", ErrBadJob, r.Partition)
		case r.From >= r.To || len(r.Segments) == 0:
			return fmt.Errorf("%w: partition %d range %d-%d with %d segments", ErrBadJob, r.Partition, r.From, r.To, len(r.Segments))
		case r.Segments[0].BaseOffset > r.From || r.Segments[len(r.Segments)-1].LastOffset < r.To-1:
			return fmt.Errorf("%w: partition %d's segments %d-%d do not hold %d-%d", ErrBadJob, r.Partition,
				r.Segments[0].BaseOffset, r.Segments[len(r.Segments)-1].LastOffset, r.From, r.To-1)
		}
		seen[r.Partition] = true
		for i, sg := range r.Segments {
			if sg.ObjectKey == "" || (!sg.Segment && sg.ByteLength < record.HeaderSize) || (i > 0 && sg.BaseOffset != r.Segments[i-1].LastOffset+1) {
				return fmt.Errorf("%w: partition %d segment %d (%q %d-%d) is not the next segment", ErrBadJob, r.Partition, i, sg.ObjectKey, sg.BaseOffset, sg.LastOffset)
			}
		}
	}
	return nil
}

// runTableJob runs table job job, claimed at start, through the table
// runner and reports it.
func (c *Consolidator) runTableJob(ctx context.Context, job coordapi.TierJob, start time.Time) (outcome int, res coordapi.TableResult, err error) {
	if err := checkTableJob(job); err != nil {
		c.abandon(ctx, job, err)
		return outcomeFailed, res, err
	}
	jctx, cancel, err := c.leaseContext(ctx, job, start)
	if err != nil {
		c.abandon(ctx, job, err)
		return outcomeFailed, res, err
	}
	defer cancel()
	// The job's reads: one window at a time.
	window := max(c.opts.MaxReadBytes, record.HeaderSize)
	reserved, err := c.budget.acquire(jctx, window)
	if err != nil {
		err = fmt.Errorf("wait for job buffers: %w", err)
		c.abandon(ctx, job, err)
		return outcomeFailed, res, err
	}
	defer c.budget.release(reserved)
	r := &compactRun{c: c, job: job, window: window, reserved: reserved}
	read := func(ctx context.Context, seg coordapi.BatchCoord, fn func([]byte) error) error {
		if !seg.Segment {
			b, err := r.walBatch(ctx, seg)
			if err != nil {
				return err
			}
			return fn(b)
		}
		return r.scanSegment(ctx, seg, func(batches []segBatch) error {
			for _, sb := range batches {
				if err := fn(sb.b); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if res, err = c.opts.Tables.RunTableJob(jctx, job, read); err != nil {
		c.abandon(ctx, job, err)
		return outcomeFailed, res, err
	}
	err = c.jobs.CompleteTierJob(jctx, coordapi.CompleteTierJobRequest{JobID: job.ID, TopicID: job.TopicID, Partition: job.Partition, Table: &res})
	switch {
	case err == nil:
		c.log.Info("tiered: table job completed", "job", job.ID, "topic", job.Table.TopicName, "ranges", len(job.Table.Ranges),
			"snapshot", res.SnapshotID, "rows", res.Rows, "elapsed", c.opts.Now().Sub(start))
		return outcomeCompleted, res, nil
	case errors.Is(err, kerr.StaleBrokerEpoch):
		// Refused (a lease that ended): the snapshot stands, and the
		// next job skips what it covers.
		return outcomeRefused, res, fmt.Errorf("complete: refused as stale: %w", err)
	default:
		c.abandon(ctx, job, err)
		return outcomeFailed, res, fmt.Errorf("complete: %w", err)
	}
}

// walBatch reads WAL batch bc, checks it (header, length, CRC, its
// offsets' count) and returns a copy stamped with its offsets and, on a
// LogAppendTime topic, its append time.
func (r *compactRun) walBatch(ctx context.Context, bc coordapi.BatchCoord) ([]byte, error) {
	data, err := r.read(ctx, bc, bc.ByteOffset, int64(bc.ByteLength))
	if err != nil {
		return nil, err
	}
	h, err := record.ParseHeader(data)
	switch {
	case err != nil:
		return nil, fmt.Errorf("%w: WAL batch %s@%d: %w", ErrCorrupt, bc.ObjectKey, bc.ByteOffset, err)
	case h.Size() != len(data):
		return nil, corruptf("WAL batch %s@%d: %d bytes, its header says %d", bc.ObjectKey, bc.ByteOffset, len(data), h.Size())
	case int64(h.LastOffsetDelta) != bc.LastOffset-bc.BaseOffset:
		return nil, corruptf("WAL batch %s@%d: %d offsets, its row says %d", bc.ObjectKey, bc.ByteOffset, h.LastOffsetDelta+1, bc.LastOffset-bc.BaseOffset+1)
	}
	if err := checkStored(data, h); err != nil {
		return nil, fmt.Errorf("WAL batch %s@%d: %w", bc.ObjectKey, bc.ByteOffset, err)
	}
	b := slices.Clone(data) // the cache's bytes are shared
	record.SetBaseOffset(b, bc.BaseOffset)
	if bc.LogAppendTime {
		record.SetLogAppendTime(b, bc.MaxTimestamp)
	}
	return b, nil
}

// runTableMaintainJob runs table maintenance job job, claimed at start,
// through the table runner and reports it.
func (c *Consolidator) runTableMaintainJob(ctx context.Context, job coordapi.TierJob, start time.Time) (int, error) {
	if job.Maintain == nil || job.Maintain.TopicName == "" {
		err := fmt.Errorf("%w: table maintenance job without a table", ErrBadJob)
		c.abandon(ctx, job, err)
		return outcomeFailed, err
	}
	jctx, cancel, err := c.leaseContext(ctx, job, start)
	if err != nil {
		c.abandon(ctx, job, err)
		return outcomeFailed, err
	}
	defer cancel()
	res, err := c.opts.Tables.MaintainTable(jctx, job)
	if err != nil {
		c.abandon(ctx, job, err)
		return outcomeFailed, err
	}
	err = c.jobs.CompleteTierJob(jctx, coordapi.CompleteTierJobRequest{JobID: job.ID, TopicID: job.TopicID, Partition: job.Partition, Table: &res})
	switch {
	case err == nil:
		c.log.Info("tiered: table maintenance completed", "job", job.ID, "topic", job.Maintain.TopicName,
			"delete_snapshot", res.SnapshotID, "rows_removed", res.Rows, "elapsed", c.opts.Now().Sub(start))
		return outcomeCompleted, nil
	case errors.Is(err, kerr.StaleBrokerEpoch):
		return outcomeRefused, fmt.Errorf("complete: refused as stale: %w", err)
	default:
		c.abandon(ctx, job, err)
		return outcomeFailed, fmt.Errorf("complete: %w", err)
	}
}
