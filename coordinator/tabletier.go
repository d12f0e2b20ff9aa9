package coordinator

import (
	"context"
	"fmt"
	"time"

	"github.com/floe-io/floe/coordapi"
)

// Table jobs (issue 41, docs/design/iceberg-tables.md): every
// Options.TableInterval, a table.enabled topic with new records in
// segments gets one job (TierJobTable) covering each partition this shard
// owns from its covered offset to the segment tier's end or the last
// stable offset, whichever is lower. The job is keyed in tierState.active
// by the topic and partition -1, so that it never waits for, nor blocks,
// a partition's consolidation or compaction. The covered offsets are a
// planning copy in memory, learned from completions: the table's
// snapshot summary is the authority, and a job re-reads it, so after a
// restart the first job starts at the log start and skips what the table
// holds.

// Table job defaults and bounds.
const (
	defaultTableInterval = time.Minute
	// maxTableJobBytes bounds the segment bytes one table job reads: the
	// broker holds its decoded records until the commit (a job that
	// streams them to its data files is later work).
	maxTableJobBytes = 64 << 20
	// maxTableJobSegments bounds its segments, so that its claim reply
	// stays well within a NATS message.
	maxTableJobSegments = 4096
)

// tableTopicPart is the partition key of a topic's table job.
const tableTopicPart = -1

// tableState is the planner's memory of one table topic.
type tableState struct {
	// plannedMs is when its last job was built.
	plannedMs int64
	// covered is the planning copy of each partition's covered offset.
	covered map[int32]int64
}

// tableStateLocked returns id's table state, creating it. c.tier must be
// held.
func (c *Coordinator) tableStateLocked(id coordapi.TopicID) *tableState {
	ts := c.tier.tables[id]
	if ts == nil {
		ts = &tableState{covered: map[int32]int64{}}
		if c.tier.tables == nil {
			c.tier.tables = map[coordapi.TopicID]*tableState{}
		}
		c.tier.tables[id] = ts
	}
	return ts
}

// tablePart is a partition's offsets as the table planner sees them.
type tablePart struct {
	partition                  int32
	logStart, walStart, stable int64
}

// tableTopicsSnapshot returns each table.enabled topic's owned
// partitions.
func (c *Coordinator) tableTopicsSnapshot() map[coordapi.TopicID][]tablePart {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := map[coordapi.TopicID][]tablePart{}
	for id, t := range c.mu.topicsByID {
		if !coordapi.IsTableEnabled(t.configs) {
			continue
		}
		for p := range t.parts {
			if !c.owns(id, int32(p)) {
				continue
			}
			st := &t.parts[p]
			out[id] = append(out[id], tablePart{partition: int32(p), logStart: st.logStart, walStart: st.walStart, stable: st.lso()})
		}
	}
	return out
}

// planTables queues the table job of each table topic whose interval
// passed and that has records in segments its table does not cover.
func (c *Coordinator) planTables(ctx context.Context) error {
	nowMs := c.now().UnixMilli()
	topics := c.tableTopicsSnapshot()
	c.tier.Lock()
	defer c.tier.Unlock()
	for id := range c.tier.tables {
		if topics[id] == nil {
			delete(c.tier.tables, id) // deleted, or its table turned off
		}
	}
	for id, parts := range topics {
		if err := ctx.Err(); err != nil {
			return err
		}
		ts := c.tableStateLocked(id)
		if ts.plannedMs != 0 && nowMs-ts.plannedMs < c.opts.TableInterval.Milliseconds() {
			continue
		}
		for _, p := range parts {
			from, to := tableSpan(ts, p)
			if from < to {
				c.queueLocked(partKey{id, tableTopicPart}, coordapi.TierJobTable)
				break
			}
		}
	}
	return nil
}

// tableSpan is the offsets of p a table job would cover: from the
// covered offset (not below the log start) to the segment tier's end or
// the last stable offset.
func tableSpan(ts *tableState, p tablePart) (from, to int64) {
	from = p.logStart
	if cov, ok := ts.covered[p.partition]; ok {
		from = max(from, cov)
	}
	return from, min(p.walStart, p.stable)
}

// buildTableJob builds the table job of topic pk.topic; ok is false when
// nothing is to be written.
func (c *Coordinator) buildTableJob(pk partKey, nowMs int64) (*tierJob, bool, error) {
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
	lat := t.logAppendTime
	c.mu.RUnlock()
	parts := c.tableTopicsSnapshot()[pk.topic]

	c.tier.Lock()
	ts := c.tableStateLocked(pk.topic)
	spans := make([][2]int64, len(parts))
	for i, p := range parts {
		spans[i][0], spans[i][1] = tableSpan(ts, p)
	}
	c.tier.Unlock()

	budget, segments := int64(maxTableJobBytes), maxTableJobSegments
	for i, p := range parts {
		from, to := spans[i][0], spans[i][1]
		if from >= to || segments <= 0 {
			continue
		}
		r := coordapi.TableRange{Partition: p.partition, From: from, To: to}
		err := c.scanRows(batchKey(pk.topic, p.partition, from), batchKey(pk.topic, p.partition, p.walStart),
			func(_, _ []byte, object uint64, bc coordapi.BatchCoord) error {
				if bc.BaseOffset >= to {
					return errStopScan
				}
				if !bc.Segment {
					return fmt.Errorf("WAL batch %d-%d below the WAL start %d", bc.BaseOffset, bc.LastOffset, p.walStart)
				}
				if len(r.Segments) > 0 && (budget < int64(bc.ByteLength) || segments <= 0) {
					r.To = r.Segments[len(r.Segments)-1].LastOffset + 1 // the job is full
					return errStopScan
				}
				c.mu.RLock()
				o := c.mu.objects[object]
				c.mu.RUnlock()
				if o == nil {
					return fmt.Errorf("segment %d-%d references unknown object %d", bc.BaseOffset, bc.LastOffset, object)
				}
				bc.ObjectKey, bc.ObjectSize = o.key, o.size
				r.Segments = append(r.Segments, bc)
				budget -= int64(bc.ByteLength)
				segments--
				return nil
			})
		if err != nil {
			return nil, false, fmt.Errorf("table job of %s/%d: %w", tj.TopicName, p.partition, err)
		}
		if len(r.Segments) == 0 {
			continue
		}
		c.mu.RLock()
		r.Aborted = c.abortedLocked(partKey{pk.topic, p.partition}, r.From, r.To)
		c.mu.RUnlock()
		tj.Ranges = append(tj.Ranges, r)
	}
	if len(tj.Ranges) == 0 {
		return nil, false, nil
	}
	c.tier.Lock()
	c.tableStateLocked(pk.topic).plannedMs = nowMs
	c.tier.Unlock()
	job := &tierJob{}
	job.Kind, job.Table = coordapi.TierJobTable, tj
	job.TopicID, job.Partition, job.LogAppendTime = pk.topic, tableTopicPart, lat
	job.LeaseMs = c.opts.TierJobLease.Milliseconds()
	job.deadline = nowMs + job.LeaseMs
	return job, true, nil
}

// completeTable is CompleteTierJob for a table job: the job committed its
// ranges to the table (or found them covered), and the planner's copy of
// the covered offsets moves. Nothing is written: the table's snapshot is
// the record. c.commit is held; job is pk's active job.
func (c *Coordinator) completeTable(req coordapi.CompleteTierJobRequest, job *tierJob, refuse func(string, ...any) error) error {
	if job.Kind != coordapi.TierJobTable || job.Table == nil || req.Table == nil {
		return refuse("job %d: a table job's report and a table job go together", job.ID)
	}
	for _, cov := range req.Table.Covered {
		i := -1
		for j, r := range job.Table.Ranges {
			if r.Partition == cov.Partition {
				i = j
			}
		}
		if i < 0 {
			continue // a partition the job did not write: the snapshot's, not ours to learn here
		}
		if r := job.Table.Ranges[i]; cov.Next < r.To {
			return refuse("job %d covers %s/%d to %d, short of its range's end %d", job.ID, job.Table.TopicName, cov.Partition, cov.Next, r.To)
		}
	}
	c.tier.Lock()
	defer c.tier.Unlock()
	ts := c.tableStateLocked(req.TopicID)
	for _, cov := range req.Table.Covered {
		ts.covered[cov.Partition] = cov.Next
	}
	if c.tier.active[partKey{req.TopicID, tableTopicPart}] == job {
		delete(c.tier.active, partKey{req.TopicID, tableTopicPart})
	}
	c.tier.stats.JobsCompleted++
	c.log.Debug("table job completed", "job", job.ID, "topic", job.Table.TopicName, "snapshot", req.Table.SnapshotID, "rows", req.Table.Rows)
	return nil
}

// TableCovered returns this shard's planning copy of a table topic's
// covered offsets, by partition (tests, and the lag metric).
func (c *Coordinator) TableCovered(id coordapi.TopicID) map[int32]int64 {
	c.tier.Lock()
	defer c.tier.Unlock()
	out := map[int32]int64{}
	if ts := c.tier.tables[id]; ts != nil {
		for p, n := range ts.covered {
			out[p] = n
		}
	}
	return out
}

// tableLags returns each table topic's lag on this shard, by topic name:
// the offsets its partitions hold past their table's covered offsets
// (the high watermark less the planner's copy, or the log start before
// the first job of this run reports one).
func (c *Coordinator) tableLags() map[string]int64 {
	type part struct {
		id        coordapi.TopicID
		name      string
		partition int32
		logStart  int64
		hwm       int64
	}
	var parts []part
	c.mu.RLock()
	for id, t := range c.mu.topicsByID {
		if !coordapi.IsTableEnabled(t.configs) {
			continue
		}
		for p := range t.parts {
			if c.owns(id, int32(p)) {
				parts = append(parts, part{id, t.name, int32(p), t.parts[p].logStart, t.parts[p].hwm})
			}
		}
	}
	c.mu.RUnlock()
	out := map[string]int64{}
	c.tier.Lock()
	defer c.tier.Unlock()
	for _, p := range parts {
		covered := p.logStart
		if ts := c.tier.tables[p.id]; ts != nil {
			if cov, ok := ts.covered[p.partition]; ok {
				covered = max(covered, cov)
			}
		}
		out[p.name] += max(p.hwm-covered, 0)
	}
	return out
}

// tableHold returns how far retention may move a table topic's partition's
// log start: to the table's covered offset, so that retention never
// deletes records its table has not taken (the design's table hold). ok
// is false for a topic without a table. Before this run of the
// coordinator learns the covered offset from a job's completion, the hold
// is -1: nothing is deleted. c.commit is held; c.tier is taken.
func (c *Coordinator) tableHold(t *topicState, partition int32) (hold int64, ok bool) {
	if !coordapi.IsTableEnabled(t.configs) {
		return 0, false
	}
	c.tier.Lock()
	defer c.tier.Unlock()
	if ts := c.tier.tables[t.id]; ts != nil {
		if cov, known := ts.covered[partition]; known {
			return cov, true
		}
	}
	return -1, true
}
