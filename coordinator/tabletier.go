package coordinator

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/cockroachdb/pebble"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/coordinator/layout"
)

// Table jobs (issue 41, docs/design/iceberg-tables.md): every
// Options.TableInterval, a table.enabled topic with new records in
// segments gets one job (TierJobTable) covering each partition this shard
// owns from its covered offset to the segment tier's end or the last
// stable offset, whichever is lower. The job is keyed in tierState.active
// by the topic and a negative partition (tableJobPart), so that it never
// waits for, nor blocks, a partition's consolidation or compaction. Up to
// maxTableJobs jobs of one topic run at once, on disjoint sets of
// partitions (tableBusyLocked): a partition's segment can be larger than
// a job's budget, and a topic's partitions are then written side by side
// rather than one after the other; their commits race for the table's
// pointer, and a lost race re-does only the metadata. The covered offsets are a
// planning copy, learned from completions and kept in a row of family
// 'c' per topic (prefixTableCovered), so that a restarted or promoted
// coordinator plans from them and holds retention at them at once: the
// table's snapshot summary is the authority, and a job re-reads it.

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
	// maxTableJobs bounds the table jobs of one topic (and shard) that
	// run at once, each on partitions no other holds: a broker runs four
	// tier jobs at once by default (--tier-job-concurrency), and each
	// holds its decoded records, up to a budget, until its commit.
	maxTableJobs = 4
)

// tableTopicPart is the partition key of a topic's table job,
// tableMaintainPart that of its table maintenance job: a job of each kind
// may run at once (their commits race for the table's pointer, and each
// retries a lost race).
const (
	tableTopicPart    = -1
	tableMaintainPart = -2
)

// tableJobPart is the partition key of a topic's table job in slot i (0 ≤
// i < maxTableJobs): tableTopicPart for the first, as in builds before
// there were several, then -3, -4 and on.
func tableJobPart(slot int) int32 {
	if slot == 0 {
		return tableTopicPart
	}
	return tableMaintainPart - int32(slot)
}

// tableBusyLocked returns the partitions of topic id that its active
// table jobs but except's hold. c.tier must be held.
func (c *Coordinator) tableBusyLocked(id coordapi.TopicID, except partKey) map[int32]bool {
	busy := map[int32]bool{}
	for pk, j := range c.tier.active {
		if pk.topic != id || pk == except || j.Kind != coordapi.TierJobTable || j.Table == nil {
			continue
		}
		for _, r := range j.Table.Ranges {
			busy[r.Partition] = true
		}
	}
	return busy
}

// tableOverlaps says whether table job job has a partition of busy.
func tableOverlaps(job *tierJob, busy map[int32]bool) bool {
	return slices.ContainsFunc(job.Table.Ranges, func(r coordapi.TableRange) bool { return busy[r.Partition] })
}

// tableJobsLocked is how many table jobs of one topic may run at once.
// c.tier must be held.
func (c *Coordinator) tableJobsLocked() int {
	return cmp.Or(c.tier.tableJobs, maxTableJobs)
}

// Table maintenance defaults.
const (
	defaultTableMaintainInterval = 24 * time.Hour
	// minOrphanGrace is the least age of a file orphan collection takes:
	// the design's 2 × the tier job lease, at least an hour.
	minOrphanGrace = time.Hour
)

// tableState is the planner's memory of one table topic.
type tableState struct {
	// plannedMs is when its last job was built, maintainedMs its last
	// maintenance job (0: none in this run).
	plannedMs, maintainedMs int64
	// full says the last job stopped short of what was there to take
	// (maxTableJobBytes, maxTableJobSegments): the next is queued as it
	// completes, without waiting for the interval, so that a table keeps
	// up with a topic writing more than a job a interval.
	full bool
	// covered is the planning copy of each partition's covered offset.
	covered map[int32]int64
	// grew are each partition's high watermarks as the tier passes saw
	// them grow, oldest first, from the first one past the covered offset
	// on: the first says since when the oldest record the table lacks
	// has been waiting (floe.table.lag.seconds, to a tier interval).
	grew map[int32][]hwmSeen
}

// hwmSeen is a high watermark and when a tier pass saw it.
type hwmSeen struct{ ms, hwm int64 }

// maxHWMSeen bounds a partition's grew: past it, every other one but the
// first goes (the ages read from them coarsen, the oldest stays exact).
const maxHWMSeen = 512

// sawHWMLocked records p's high watermark at nowMs and drops what the
// covered offset passed. c.tier must be held.
func (ts *tableState) sawHWMLocked(p tablePart, nowMs int64) {
	if ts.grew == nil {
		ts.grew = map[int32][]hwmSeen{}
	}
	g := ts.grew[p.partition]
	if n := len(g); n == 0 || g[n-1].hwm < p.hwm {
		g = append(g, hwmSeen{nowMs, p.hwm})
	}
	covered := max(p.logStart, ts.covered[p.partition])
	i := 0
	for i < len(g) && g[i].hwm <= covered {
		i++
	}
	g = g[i:]
	if len(g) > maxHWMSeen {
		kept := g[:1]
		for j := 2; j < len(g); j += 2 {
			kept = append(kept, g[j])
		}
		g = kept
	}
	ts.grew[p.partition] = g
}

// tableStateLocked returns id's table state, creating it with the
// covered offsets its row keeps (a restarted or promoted coordinator
// plans from them, and holds retention at them, before a job reports).
// c.tier must be held.
func (c *Coordinator) tableStateLocked(id coordapi.TopicID) *tableState {
	ts := c.tier.tables[id]
	if ts == nil {
		ts = &tableState{covered: map[int32]int64{}}
		if err := c.readTableCovered(id, ts.covered); err != nil {
			// The planner then starts from the log start, as before
			// the row existed: the job re-reads the table's summary.
			c.log.Warn("table covered offsets unreadable", "topic", id, "err", err)
			clear(ts.covered)
		}
		if c.tier.tables == nil {
			c.tier.tables = map[coordapi.TopicID]*tableState{}
		}
		c.tier.tables[id] = ts
	}
	return ts
}

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

// tablePart is a partition's offsets as the table planner sees them.
type tablePart struct {
	partition                       int32
	logStart, walStart, stable, hwm int64
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
			out[id] = append(out[id], tablePart{partition: int32(p), logStart: st.logStart, walStart: st.walStart, stable: st.lso(), hwm: st.hwm})
		}
	}
	return out
}

// planTables queues the table job of each table topic whose interval
// passed and that has records in segments its table does not cover.
func (c *Coordinator) planTables(ctx context.Context) error {
	nowMs := c.now().UnixMilli()
	topics := c.tableTopicsSnapshot()
	var dropped []coordapi.TopicID
	c.tier.Lock()
	for id := range c.tier.tables {
		if topics[id] == nil {
			delete(c.tier.tables, id) // deleted, or its table turned off
			dropped = append(dropped, id)
		}
	}
	c.tier.Unlock()
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
	c.tier.Lock()
	defer c.tier.Unlock()
	for id, parts := range topics {
		if err := ctx.Err(); err != nil {
			return err
		}
		ts := c.tableStateLocked(id)
		for _, p := range parts {
			ts.sawHWMLocked(p, nowMs)
		}
		if ts.maintainedMs == 0 || nowMs-ts.maintainedMs >= c.opts.TableMaintainInterval.Milliseconds() {
			c.queueLocked(partKey{id, tableMaintainPart}, coordapi.TierJobTableMaintain)
		}
		if ts.plannedMs != 0 && !ts.full && nowMs-ts.plannedMs < c.opts.TableInterval.Milliseconds() {
			continue
		}
		// A job for each partition waiting that no job holds, up to the
		// free slots (a job built finds how many it can take).
		busy := c.tableBusyLocked(id, partKey{})
		waiting := 0
		for _, p := range parts {
			// Planned as for brokers whose jobs read WAL batches: a job
			// built for one of an earlier build finds less, or nothing.
			if from, to := tableSpan(ts, p, true); from < to && !busy[p.partition] {
				waiting++
			}
		}
		for slot := 0; slot < c.tableJobsLocked() && waiting > 0; slot++ {
			pk := partKey{id, tableJobPart(slot)}
			if c.tier.active[pk] != nil {
				continue
			}
			c.queueLocked(pk, coordapi.TierJobTable)
			waiting--
		}
	}
	return nil
}

// tableSpan is the offsets of p a table job would cover: from the
// covered offset (not below the log start) to the last stable offset,
// or to the segment tier's end if lower, unless wal (a job that reads
// WAL batches too: ClaimTierJobRequest.TableWAL).
func tableSpan(ts *tableState, p tablePart, wal bool) (from, to int64) {
	from = p.logStart
	if cov, ok := ts.covered[p.partition]; ok {
		from = max(from, cov)
	}
	if wal {
		return from, p.stable
	}
	return from, min(p.walStart, p.stable)
}

// buildTableJob builds the table job of topic pk.topic; ok is false when
// nothing is to be written. With wal its ranges run to the last stable
// offset through WAL batches (for a broker that reads them); without, to
// the segment tier's end.
func (c *Coordinator) buildTableJob(pk partKey, nowMs int64, wal bool) (*tierJob, bool, error) {
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
	_, tj.Compacted = cleanupPolicy(t.configs)
	lat := t.logAppendTime
	c.mu.RUnlock()
	parts := c.tableTopicsSnapshot()[pk.topic]

	c.tier.Lock()
	ts := c.tableStateLocked(pk.topic)
	// Partitions another job of the topic holds are not this one's.
	busy := c.tableBusyLocked(pk.topic, pk)
	parts = slices.DeleteFunc(parts, func(p tablePart) bool { return busy[p.partition] })
	// The partitions whose oldest uncovered record has waited longest
	// first: with a job's budget shared, the table's lag (the longest
	// wait) falls fastest, and no partition waits behind the others'.
	waiting := func(p tablePart) int64 {
		if g := ts.grew[p.partition]; len(g) > 0 {
			return g[0].ms
		}
		return math.MaxInt64
	}
	slices.SortStableFunc(parts, func(a, b tablePart) int { return cmp.Compare(waiting(a), waiting(b)) })
	spans := make([][2]int64, len(parts))
	for i, p := range parts {
		spans[i][0], spans[i][1] = tableSpan(ts, p, wal)
	}
	jobBytes := cmp.Or(c.tier.tableJobBytes, int64(maxTableJobBytes))
	c.tier.Unlock()

	budget, segments := jobBytes, maxTableJobSegments
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
		r := coordapi.TableRange{Partition: p.partition, From: from, To: to}
		// Rows are keyed by their last offset: every row starting below
		// to (a segment may end past it; a WAL batch never does, the LSO
		// and the high watermark being batch bounds).
		err := c.scanRows(layout.BatchKey(pk.topic, p.partition, from), layout.BatchKey(pk.topic, p.partition, max(p.walStart, to)),
			func(_, _ []byte, object uint64, bc coordapi.BatchCoord) error {
				if bc.BaseOffset >= to {
					return errStopScan
				}
				if !bc.Segment && !wal {
					return fmt.Errorf("WAL batch %d-%d below the WAL start %d", bc.BaseOffset, bc.LastOffset, p.walStart)
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
			return nil, false, fmt.Errorf("table job of %s/%d: %w", tj.TopicName, p.partition, err)
		}
		if len(r.Segments) == 0 {
			if from < to {
				full = true // none fit: the next job
			}
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
	slices.SortFunc(tj.Ranges, func(a, b coordapi.TableRange) int { return cmp.Compare(a.Partition, b.Partition) })
	c.tier.Lock()
	ts = c.tableStateLocked(pk.topic)
	ts.plannedMs, ts.full = nowMs, full
	c.tier.Unlock()
	job := &tierJob{tableFull: full}
	job.Kind, job.Table = coordapi.TierJobTable, tj
	job.TopicID, job.Partition, job.LogAppendTime = pk.topic, pk.partition, lat
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
	ts := c.tableStateLocked(req.TopicID)
	var row map[int32]int64
	for _, cov := range req.Table.Covered {
		if !slices.ContainsFunc(job.Table.Ranges, func(r coordapi.TableRange) bool { return r.Partition == cov.Partition }) {
			// Not the job's: another job of the topic may hold it, and
			// learns it when it completes.
			continue
		}
		if old, ok := ts.covered[cov.Partition]; !ok || old != cov.Next {
			row = ts.covered
		}
		ts.covered[cov.Partition] = cov.Next
	}
	if row != nil {
		row = maps.Clone(row)
	}
	if pk := (partKey{req.TopicID, job.Partition}); c.tier.active[pk] == job {
		delete(c.tier.active, pk)
		if job.tableFull || ts.full {
			c.queueLocked(pk, coordapi.TierJobTable)
		}
	}
	c.tier.stats.JobsCompleted++
	c.tier.Unlock()
	if row != nil {
		// Best effort, outside c.tier (c.commit orders the writes): a
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
func (c *Coordinator) buildTableMaintainJob(pk partKey, nowMs int64) (*tierJob, bool, error) {
	c.mu.RLock()
	t := c.mu.topicsByID[pk.topic]
	if t == nil || !coordapi.IsTableEnabled(t.configs) {
		c.mu.RUnlock()
		return nil, false, nil
	}
	mj := &coordapi.TableMaintainJob{TopicName: t.name, NowMs: nowMs, RetentionMs: -1,
		OrphanGraceMs: max(2*c.opts.TierJobLease, minOrphanGrace).Milliseconds()}
	if v, err := strconv.ParseInt(t.configs[coordapi.ConfigTableRetentionMs], 10, 64); err == nil && v >= 0 {
		mj.RetentionMs = v
	}
	c.mu.RUnlock()
	c.tier.Lock()
	c.tableStateLocked(pk.topic).maintainedMs = nowMs
	c.tier.Unlock()
	job := &tierJob{}
	job.Kind, job.Maintain = coordapi.TierJobTableMaintain, mj
	job.TopicID, job.Partition = pk.topic, tableMaintainPart
	job.LeaseMs = c.opts.TierJobLease.Milliseconds()
	job.deadline = nowMs + job.LeaseMs
	return job, true, nil
}

// completeTableMaintain is CompleteTierJob for a table maintenance job:
// nothing is written, the table's snapshots are the record. c.commit is
// held; job is pk's active job.
func (c *Coordinator) completeTableMaintain(req coordapi.CompleteTierJobRequest, job *tierJob, refuse func(string, ...any) error) error {
	if job.Maintain == nil || req.Table == nil {
		return refuse("job %d: a table maintenance job's report and a table maintenance job go together", job.ID)
	}
	c.tier.Lock()
	defer c.tier.Unlock()
	if c.tier.active[partKey{req.TopicID, tableMaintainPart}] == job {
		delete(c.tier.active, partKey{req.TopicID, tableMaintainPart})
	}
	c.tier.stats.JobsCompleted++
	c.log.Debug("table maintenance completed", "job", job.ID, "topic", job.Maintain.TopicName,
		"delete_snapshot", req.Table.SnapshotID, "rows_removed", req.Table.Rows)
	return nil
}

// TableCovered returns this shard's planning copy of a table topic's
// covered offsets, by partition (tests, and the lag metric).
func (c *Coordinator) TableCovered(id coordapi.TopicID) map[int32]int64 {
	c.tier.Lock()
	defer c.tier.Unlock()
	return maps.Clone(c.tableStateLocked(id).covered)
}

// tableLag is a table topic's lag on this shard.
type tableLag struct {
	// offsets are its partitions' offsets past their table's covered
	// offsets (the high watermark less the planner's copy, or the log
	// start before a job ever reported one), summed.
	offsets int64
	// ms is how long the oldest record its table lacks has been waiting,
	// as the tier passes saw the high watermarks grow (0: none waits, or
	// no pass saw it yet).
	ms int64
}

// tableLags returns each table topic's lag on this shard, by topic name.
func (c *Coordinator) tableLags() map[string]tableLag {
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
	nowMs := c.now().UnixMilli()
	out := map[string]tableLag{}
	c.tier.Lock()
	defer c.tier.Unlock()
	for _, p := range parts {
		ts := c.tableStateLocked(p.id)
		covered := p.logStart
		if cov, ok := ts.covered[p.partition]; ok {
			covered = max(covered, cov)
		}
		l := out[p.name]
		l.offsets += max(p.hwm-covered, 0)
		if p.hwm > covered {
			for _, g := range ts.grew[p.partition] {
				if g.hwm > covered {
					l.ms = max(l.ms, nowMs-g.ms)
					break
				}
			}
		}
		out[p.name] = l
	}
	return out
}

// tableHold returns how far retention may move a table topic's partition's
// log start: to the table's covered offset, so that retention never
// deletes records its table has not taken (the design's table hold). ok
// is false for a topic without a table. Before the covered offset is
// known (no job of the topic ever completed, or its row was written by
// none), the hold is -1: nothing is deleted. c.commit is held; c.tier is
// taken.
func (c *Coordinator) tableHold(t *topicState, partition int32) (hold int64, ok bool) {
	if !coordapi.IsTableEnabled(t.configs) {
		return 0, false
	}
	c.tier.Lock()
	defer c.tier.Unlock()
	if cov, known := c.tableStateLocked(t.id).covered[partition]; known {
		return cov, true
	}
	return -1, true
}
