package coordinator

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/cockroachdb/pebble"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/coordinator/layout"
	"github.com/floe-io/floe/coordinator/tierplan"
)

// Table jobs (issue 41, docs/design/iceberg-tables.md): package
// tierplan plans them and keeps the covered offsets' planning copy; the
// coordinator reads the rows a job covers, and keeps that copy in a row
// of family 'c' per topic (prefixTableCovered), so that a restarted or
// promoted coordinator plans from it and holds retention at it at once.

// The table covered family ('c', drawn in package layout) holds the
// planner's covered offsets of each table topic, one row a topic. A completed table job writes its topic's row; the row goes with its
// topic. It is a planning copy (the table's snapshot summary is the
// authority), kept by topic id and on the shard owning the partitions,
// not in the table's 'l' row: that row is keyed by the table's name in a
// namespace only brokers know, and lives on shard 0.

// readTableCovered adds id's covered offsets row, if any, to covered.
func (c *Coordinator) readTableCovered(id coordapi.TopicID, covered map[int32]int64) error {
	v, closer, err := c.db.Get(layout.TableCoveredKey(id))
	if errors.Is(err, pebble.ErrNotFound) {
		return nil
	} else if err != nil {
		return err
	}
	defer closer.Close()
	return layout.DecodeTableCovered(v, covered)
}

// writeTableCovered writes id's covered offsets row, or deletes it when
// covered is nil, in one synced write.
func (c *Coordinator) writeTableCovered(id coordapi.TopicID, covered map[int32]int64) error {
	b := c.db.NewBatch()
	defer b.Close()
	if covered == nil {
		_ = b.Delete(layout.TableCoveredKey(id), nil)
	} else {
		_ = b.Set(layout.TableCoveredKey(id), layout.EncodeTableCovered(covered), nil)
	}
	return c.write(b, pebble.Sync)
}

// tableTopicsSnapshot returns each table.enabled topic's owned
// partitions.
func (c *Coordinator) tableTopicsSnapshot() map[coordapi.TopicID][]tierplan.TablePart {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := map[coordapi.TopicID][]tierplan.TablePart{}
	for id, t := range c.mu.topicsByID {
		if !coordapi.IsTableEnabled(t.configs) {
			continue
		}
		for p := range t.parts {
			if !c.owns(id, int32(p)) {
				continue
			}
			st := &t.parts[p]
			out[id] = append(out[id], tierplan.TablePart{Partition: int32(p), LogStart: st.logStart, WALStart: st.walStart, Stable: st.lso(), HWM: st.hwm})
		}
	}
	return out
}

// planTables queues the table job of each table topic whose interval
// passed and that has records in segments its table does not cover.
func (c *Coordinator) planTables(ctx context.Context) error {
	nowMs := c.now().UnixMilli()
	topics := c.tableTopicsSnapshot()
	// Deleted, or its table turned off.
	dropped := c.tier.DropTables(func(id coordapi.TopicID) bool { return topics[id] != nil })
	for _, id := range dropped {
		c.mu.RLock()
		gone := c.mu.topicsByID[id] == nil
		c.mu.RUnlock()
		if !gone {
			continue // its table turned off: kept for when it is on again
		}
		if err := c.writeTableCovered(id, nil); err != nil {
			return fmt.Errorf("drop the table covered offsets of topic %s: %w", id, err)
		}
	}
	return c.tier.PlanTables(ctx, topics, nowMs, c.opts.TableInterval, c.opts.TableMaintainInterval)
}

// buildTableJob builds the table job of topic pk.topic; ok is false when
// nothing is to be written. With wal its ranges run to the last stable
// offset through WAL batches (for a broker that reads them); without, to
// the segment tier's end.
func (c *Coordinator) buildTableJob(pk partKey, nowMs int64, wal bool) (*tierplan.Job, bool, error) {
	c.mu.RLock()
	t := c.mu.topicsByID[pk.topic]
	if t == nil || !coordapi.IsTableEnabled(t.configs) {
		c.mu.RUnlock()
		return nil, false, nil
	}
	tj := &coordapi.TableJob{TopicName: t.name, Partitioning: t.configs[coordapi.ConfigTablePartitioning]}
	if t.configs[coordapi.ConfigTableValueSchema] == "json" {
		tj.ValueSchema = t.configs[coordapi.ConfigTableValueSchemaDefinition]
	}
	_, tj.Compacted = tierplan.CleanupPolicy(t.configs)
	lat := t.logAppendTime
	c.mu.RUnlock()
	parts := c.tableTopicsSnapshot()[pk.topic]

	parts, spans, jobBytes := c.tier.TableSpans(pk, parts, wal)
	budget, segments := jobBytes, tierplan.MaxTableJobSegments
	full := false // a range stops short of its span
	for i, p := range parts {
		from, to := spans[i][0], spans[i][1]
		if from >= to {
			continue
		}
		if segments <= 0 {
			full = true
			continue
		}
		r := coordapi.TableRange{Partition: p.Partition, From: from, To: to}
		// Rows are keyed by their last offset: every row starting below
		// to (a segment may end past it; a WAL batch never does, the LSO
		// and the high watermark being batch bounds).
		err := c.scanRows(layout.BatchKey(pk.topic, p.Partition, from), layout.BatchKey(pk.topic, p.Partition, max(p.WALStart, to)),
			func(_, _ []byte, object uint64, bc coordapi.BatchCoord) error {
				if bc.BaseOffset >= to {
					return errStopScan
				}
				if !bc.Segment && !wal {
					return fmt.Errorf("WAL batch %d-%d below the WAL start %d", bc.BaseOffset, bc.LastOffset, p.WALStart)
				}
				// Only the job's first segment may be larger than the budget.
				if (len(r.Segments) > 0 || len(tj.Ranges) > 0) && (budget < int64(bc.ByteLength) || segments <= 0) {
					if len(r.Segments) > 0 {
						r.To = r.Segments[len(r.Segments)-1].LastOffset + 1 // the job is full
					}
					full = true
					return errStopScan
				}
				c.mu.RLock()
				o := c.mu.objects[object]
				c.mu.RUnlock()
				if o == nil {
					return fmt.Errorf("batch %d-%d references unknown object %d", bc.BaseOffset, bc.LastOffset, object)
				}
				bc.ObjectKey, bc.ObjectSize = o.key, o.size
				r.Segments = append(r.Segments, bc)
				budget -= int64(bc.ByteLength)
				segments--
				return nil
			})
		if err != nil {
			return nil, false, fmt.Errorf("table job of %s/%d: %w", tj.TopicName, p.Partition, err)
		}
		if len(r.Segments) == 0 {
			if from < to {
				full = true // none fit: the next job
			}
			continue
		}
		c.mu.RLock()
		r.Aborted = c.abortedLocked(partKey{pk.topic, p.Partition}, r.From, r.To)
		c.mu.RUnlock()
		tj.Ranges = append(tj.Ranges, r)
	}
	if len(tj.Ranges) == 0 {
		return nil, false, nil
	}
	slices.SortFunc(tj.Ranges, func(a, b coordapi.TableRange) int { return cmp.Compare(a.Partition, b.Partition) })
	c.tier.TablePlanned(pk.topic, nowMs, full)
	job := &tierplan.Job{TableFull: full}
	job.Kind, job.Table = coordapi.TierJobTable, tj
	job.TopicID, job.Partition, job.LogAppendTime = pk.topic, pk.partition, lat
	job.LeaseMs = c.opts.TierJobLease.Milliseconds()
	job.Deadline = nowMs + job.LeaseMs
	return job, true, nil
}

// completeTable is CompleteTierJob for a table job: the job committed its
// ranges to the table (or found them covered), and the planner's copy of
// the covered offsets moves. Nothing is written: the table's snapshot is
// the record. c.commit is held; job is pk's active job.
func (c *Coordinator) completeTable(req coordapi.CompleteTierJobRequest, job *tierplan.Job, refuse func(string, ...any) error) error {
	if err := tierplan.CheckTable(job, &req); err != nil {
		return refuse("%v", err)
	}
	row := c.tier.TableCompleted(partKey{req.TopicID, job.Partition}, job, req.Table.Covered)
	if row != nil {
		// Best effort, outside the planner's lock (c.commit orders the writes): a
		// lost write costs a restarted coordinator a job from the older
		// offsets, which the table's summary makes skip.
		if err := c.writeTableCovered(req.TopicID, row); err != nil {
			c.log.Warn("table covered offsets not written", "topic", job.Table.TopicName, "err", err)
		}
	}
	c.log.Debug("table job completed", "job", job.ID, "topic", job.Table.TopicName, "snapshot", req.Table.SnapshotID, "rows", req.Table.Rows)
	return nil
}

// buildTableMaintainJob builds the table maintenance job of topic
// pk.topic; ok is false when the topic has no table any more. The next
// one is due TableMaintainInterval after this one is built, whatever
// becomes of it.
func (c *Coordinator) buildTableMaintainJob(pk partKey, nowMs int64) (*tierplan.Job, bool, error) {
	c.mu.RLock()
	t := c.mu.topicsByID[pk.topic]
	if t == nil || !coordapi.IsTableEnabled(t.configs) {
		c.mu.RUnlock()
		return nil, false, nil
	}
	mj := &coordapi.TableMaintainJob{TopicName: t.name, NowMs: nowMs, RetentionMs: -1,
		OrphanGraceMs: max(2*c.opts.TierJobLease, tierplan.MinOrphanGrace).Milliseconds()}
	if v, err := strconv.ParseInt(t.configs[coordapi.ConfigTableRetentionMs], 10, 64); err == nil && v >= 0 {
		mj.RetentionMs = v
	}
	c.mu.RUnlock()
	c.tier.TableMaintained(pk.topic, nowMs)
	job := &tierplan.Job{}
	job.Kind, job.Maintain = coordapi.TierJobTableMaintain, mj
	job.TopicID, job.Partition = pk.topic, tierplan.TableMaintainPart
	job.LeaseMs = c.opts.TierJobLease.Milliseconds()
	job.Deadline = nowMs + job.LeaseMs
	return job, true, nil
}

// completeTableMaintain is CompleteTierJob for a table maintenance job:
// nothing is written, the table's snapshots are the record. c.commit is
// held; job is pk's active job.
func (c *Coordinator) completeTableMaintain(req coordapi.CompleteTierJobRequest, job *tierplan.Job, refuse func(string, ...any) error) error {
	if job.Maintain == nil || req.Table == nil {
		return refuse("job %d: a table maintenance job's report and a table maintenance job go together", job.ID)
	}
	c.tier.Completed(partKey{req.TopicID, tierplan.TableMaintainPart}, job, 0)
	c.log.Debug("table maintenance completed", "job", job.ID, "topic", job.Maintain.TopicName,
		"delete_snapshot", req.Table.SnapshotID, "rows_removed", req.Table.Rows)
	return nil
}

// TableCovered returns this shard's planning copy of a table topic's
// covered offsets, by partition (tests, and the lag metric).
func (c *Coordinator) TableCovered(id coordapi.TopicID) map[int32]int64 {
	return c.tier.TableCovered(id)
}

// tableLags returns each table topic's lag on this shard, by topic name.
func (c *Coordinator) tableLags() map[string]tierplan.TableLag {
	var parts []tierplan.LagPart
	c.mu.RLock()
	for id, t := range c.mu.topicsByID {
		if !coordapi.IsTableEnabled(t.configs) {
			continue
		}
		for p := range t.parts {
			if c.owns(id, int32(p)) {
				parts = append(parts, tierplan.LagPart{ID: id, Name: t.name, Partition: int32(p), LogStart: t.parts[p].logStart, HWM: t.parts[p].hwm})
			}
		}
	}
	c.mu.RUnlock()
	return c.tier.TableLags(parts, c.now().UnixMilli())
}

// tableHold returns how far retention may move a table topic's partition's
// log start: to the table's covered offset, so that retention never
// deletes records its table has not taken (the design's table hold). ok
// is false for a topic without a table. Before the covered offset is
// known (no job of the topic ever completed, or its row was written by
// none), the hold is -1: nothing is deleted. c.commit is held; the
// planner's lock is taken.
func (c *Coordinator) tableHold(t *topicState, partition int32) (hold int64, ok bool) {
	if !coordapi.IsTableEnabled(t.configs) {
		return 0, false
	}
	return c.tier.TableHold(t.id, partition), true
}
