package coordinator

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/cockroachdb/pebble"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/coordinator/layout"
	"github.com/floe-io/floe/coordinator/tierplan"
)

// Tiering: the coordinator plans consolidation jobs, brokers run them, and
// CompleteTierJob swaps a job's WAL runs for one segment row in one synced
// batch. Jobs live in memory only: a restart forgets them, and the segment
// a forgotten job wrote is an orphan under <prefix>/tiered/ that the
// collector deletes after its grace. See package layout for
// the rows.

// TierStats counts what tiering and retention did since Open.
type TierStats = tierplan.Stats

// newTier makes the planner's memory (package tierplan) for this
// coordinator's shards, reading table topics' covered offsets from its
// rows.
func (c *Coordinator) newTier() *tierplan.Registry[partKey] {
	return tierplan.NewRegistry(tierplan.Config[partKey]{
		Shards:      c.opts.Shards,
		Key:         func(id coordapi.TopicID, p int32) partKey { return partKey{id, p} },
		ReadCovered: c.readTableCovered,
		Log:         c.log,
	})
}

// settingsLocked reads t's tier settings. c.mu (or c.commit) must be held.
func (c *Coordinator) settingsLocked(t *topicState) tierplan.Settings {
	return tierplan.SettingsOf(t.configs, c.opts.WALRetention, c.opts.WALRetentionBytes)
}

// TierStats returns the tiering counters.
func (c *Coordinator) TierStats() TierStats { return c.tier.Stats() }

// runTier plans jobs and enforces retention every interval until ctx ends.
func (c *Coordinator) runTier(ctx context.Context) {
	t := time.NewTicker(c.opts.TierInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := c.TierTick(ctx); err != nil && ctx.Err() == nil {
			c.log.Warn("tier round failed", "err", err)
		}
	}
}

// TierTick runs one round of the planner: retention first (so that data
// past retention.ms is deleted rather than consolidated), then every
// partition past its WAL retention is queued for ClaimTierJob. Open runs
// it every Options.TierInterval; tests call it directly.
func (c *Coordinator) TierTick(ctx context.Context) error {
	if err := c.enter(ctx); err != nil {
		return err
	}
	defer c.leave()
	if err := c.enforceRetention(ctx); err != nil {
		return err
	}
	c.sweepPostings(ctx)
	if c.opts.ConsolidationDisabled {
		return nil
	}
	if err := c.planJobs(ctx); err != nil {
		return err
	}
	if err := c.planCompactions(ctx); err != nil {
		return err
	}
	return c.planTables(ctx)
}

// partitionsSnapshot lists every partition of this shard with its topic's
// settings, by topic name and partition. It sorts the topics, not the
// partitions, and shares one settings value a topic: at 100,000
// partitions it ran every tier pass as 12% of a leader's CPU when it
// sorted a partition's copy of them.
func (c *Coordinator) partitionsSnapshot() []partRef {
	c.mu.RLock()
	defer c.mu.RUnlock()
	topics := make([]*topicState, 0, len(c.mu.topicsByID))
	n := 0
	for _, t := range c.mu.topicsByID {
		topics = append(topics, t)
		n += len(t.parts)
	}
	slices.SortFunc(topics, func(a, b *topicState) int { return strings.Compare(a.name, b.name) })
	out := make([]partRef, 0, n/max(c.opts.Shards, 1)+1)
	for _, t := range topics {
		s := c.settingsLocked(t)
		for p := range t.parts {
			if !c.owns(t.id, int32(p)) {
				continue // another shard's: nothing of it is here
			}
			out = append(out, partRef{t: t, partition: int32(p), settings: &s})
		}
	}
	return out
}

type partRef struct {
	t         *topicState
	partition int32
	settings  *tierplan.Settings // its topic's, shared
}

// planJobs queues each partition whose oldest WAL batch is older than its
// local.retention.ms, or whose WAL bytes exceed its local.retention.bytes.
func (c *Coordinator) planJobs(ctx context.Context) error {
	nowMs := c.now().UnixMilli()
	for _, pr := range c.partitionsSnapshot() {
		if err := ctx.Err(); err != nil {
			return err
		}
		pk := partKey{pr.t.id, pr.partition}
		due, err := c.walDue(pr, nowMs)
		if err != nil {
			return err
		}
		if !due {
			continue
		}
		c.tier.Queue(pk, coordapi.TierJobConsolidate)
	}
	return nil
}

// walDue reports whether a partition has WAL batches past its WAL
// retention.
func (c *Coordinator) walDue(pr partRef, nowMs int64) (bool, error) {
	c.mu.RLock()
	st := pr.t.parts[pr.partition]
	c.mu.RUnlock()
	if st.walStart >= st.hwm {
		return false, nil
	}
	s := pr.settings
	if s.LocalBytes >= 0 && st.walBytes() > s.LocalBytes {
		return true, nil
	}
	if s.LocalMs < 0 {
		return false, nil
	}
	created, ok, err := c.firstWALCreated(pr.t.id, pr.partition, st)
	return ok && nowMs-created >= s.LocalMs, err
}

// firstWALCreated returns when the object of the partition's first WAL
// run was committed.
func (c *Coordinator) firstWALCreated(id coordapi.TopicID, partition int32, st partState) (int64, bool, error) {
	it, err := c.db.NewIter(&pebble.IterOptions{
		LowerBound: layout.BatchKey(id, partition, st.walStart),
		UpperBound: layout.BatchKey(id, partition, st.hwm),
	})
	if err != nil {
		return 0, false, fmt.Errorf("tier: new iterator: %w", err)
	}
	defer it.Close()
	if !it.First() {
		return 0, false, it.Error()
	}
	last, err := layout.DecodeBatchKey(it.Key())
	if err != nil {
		return 0, false, err
	}
	v, err := it.ValueAndErr()
	if err != nil {
		return 0, false, fmt.Errorf("tier: read: %w", err)
	}
	r, err := layout.NewRunReader(last, v)
	if err != nil || r.Segment() {
		return 0, false, err // a segment above the WAL start: never
	}
	c.mu.RLock()
	o := c.mu.objects[r.Object()]
	c.mu.RUnlock()
	if o == nil {
		return 0, false, fmt.Errorf("tier: batch run at %d references unknown object %d", last, r.Object())
	}
	return o.createdMs, true, nil
}

// ClaimTierJob assigns the next due consolidation job to a broker; ok is
// false when none is due. Jobs whose lease ended are dropped first, and
// their partitions planned again.
func (c *Coordinator) ClaimTierJob(ctx context.Context, req coordapi.ClaimTierJobRequest) (coordapi.TierJob, bool, error) {
	if err := c.enter(ctx); err != nil {
		return coordapi.TierJob{}, false, err
	}
	defer c.leave()
	nowMs := c.now().UnixMilli()
	c.tier.Expire(nowMs)
	for {
		// A table (or table maintenance) job goes to a broker that runs
		// them (the first due job it can take); the others stay queued.
		d, busy, ok := c.tier.Next(func(kind coordapi.TierJobKind) bool {
			switch kind {
			case coordapi.TierJobTable:
				return req.Tables
			case coordapi.TierJobTableMaintain:
				return req.TableMaintain
			}
			return true
		})
		if !ok {
			return coordapi.TierJob{}, false, nil
		}
		pk := d.Key
		if busy || !c.owns(pk.topic, pk.partition) {
			continue // not this shard's since it was queued (a handover)
		}
		build := c.buildJob
		switch d.Kind {
		case coordapi.TierJobCompact:
			build = c.buildCompactJob
		case coordapi.TierJobTable:
			build = func(pk partKey, nowMs int64) (*tierplan.Job, bool, error) {
				return c.buildTableJob(pk, nowMs, req.TableWAL)
			}
		case coordapi.TierJobTableMaintain:
			build = c.buildTableMaintainJob
		}
		job, ok, err := build(pk, nowMs)
		if err != nil {
			return coordapi.TierJob{}, false, err
		}
		if !ok {
			continue
		}
		if !c.tier.Assign(d, job, req.BrokerID) {
			// Another job of pk, or (a table job) of its topic on one of
			// its partitions, was assigned while it was built.
			continue
		}
		c.log.Debug("tier job assigned", "job", job.ID, "topic", pk.topic, "partition", pk.partition,
			"base", job.BaseOffset, "last", job.LastOffset, "batches", len(job.Batches), "bytes", job.Seg.DataLength, "broker", req.BrokerID)
		return job.TierJob, true, nil
	}
}

// buildJob plans a job for pk: its WAL runs from the WAL start, in
// order, as far as tierplan.Cut takes them. A job by time alone that is
// shorter than a segment waits until its first batch is twice
// local.retention.ms old. ok is false when nothing is due.
func (c *Coordinator) buildJob(pk partKey, nowMs int64) (*tierplan.Job, bool, error) {
	c.mu.RLock()
	t := c.mu.topicsByID[pk.topic]
	if t == nil || int(pk.partition) >= len(t.parts) {
		c.mu.RUnlock()
		return nil, false, nil
	}
	st := t.parts[pk.partition]
	s := c.settingsLocked(t)
	lat := t.logAppendTime
	c.mu.RUnlock()
	if st.walStart >= st.hwm {
		return nil, false, nil
	}
	it, err := c.db.NewIter(&pebble.IterOptions{
		LowerBound: layout.BatchKey(pk.topic, pk.partition, st.walStart),
		UpperBound: layout.BatchKey(pk.topic, pk.partition, st.hwm),
	})
	if err != nil {
		return nil, false, fmt.Errorf("tier: new iterator: %w", err)
	}
	defer it.Close()

	job := &tierplan.Job{Gen: st.gen}
	job.TopicID, job.Partition, job.LogAppendTime = pk.topic, pk.partition, lat
	job.LeaseMs = c.opts.TierJobLease.Milliseconds()
	job.Deadline = nowMs + job.LeaseMs
	job.Seg = layout.SegmentRow{LogAppendTime: lat, MaxTimestamp: -1, TSOffset: -1, TSLast: -1}
	ts := newPartState()
	cut := tierplan.NewCut(s, st.walBytes(), nowMs)
	var run []coordapi.BatchCoord
	for valid := it.First(); valid; valid = it.Next() {
		last, err := layout.DecodeBatchKey(it.Key())
		if err != nil {
			return nil, false, err
		}
		v, err := it.ValueAndErr()
		if err != nil {
			return nil, false, fmt.Errorf("tier: read: %w", err)
		}
		if layout.IsSegmentRow(v) {
			return nil, false, fmt.Errorf("tier: segment row at %d above the WAL start %d", last, st.walStart)
		}
		var h layout.RunHeader
		if h, run, _, err = layout.DecodeBatchRun(last, v, run[:0]); err != nil {
			return nil, false, err
		}
		c.mu.RLock()
		o := c.mu.objects[h.Object]
		c.mu.RUnlock()
		if o == nil {
			return nil, false, fmt.Errorf("tier: batch run at %d references unknown object %d", last, h.Object)
		}
		var n int64
		for _, bc := range run {
			n += int64(bc.ByteLength)
		}
		if !cut.Take(o.createdMs, n, len(run)) {
			break
		}
		if len(job.Batches) == 0 {
			job.BaseOffset = run[0].BaseOffset
		}
		for _, bc := range run {
			bc.ObjectKey, bc.ObjectSize = o.key, o.size
			job.Batches = append(job.Batches, bc)
			ts.noteBatch(bc.BaseOffset, bc.LastOffset, bc.MaxTimestamp, bc.LogAppendTime)
		}
		job.Seg.DataLength += n
		job.LastOffset = last
	}
	if err := it.Error(); err != nil {
		return nil, false, fmt.Errorf("tier: iterate: %w", err)
	}
	if !cut.Ready() {
		return nil, false, nil // nothing, or less than a segment that can wait
	}
	job.Seg.Base = job.BaseOffset
	job.Seg.Batches = int64(len(job.Batches))
	job.Seg.MaxTimestamp, job.Seg.TSOffset, job.Seg.TSLast = ts.maxTimestamp, ts.maxTimestampOffset, ts.maxTimestampLast
	return job, true, nil
}

// refusef is CompleteTierJob's refusal.
func refusef(format string, args ...any) error {
	return coordapi.Errorf(kerr.StaleBrokerEpoch, "tier job refused: "+format, args...)
}

// CompleteTierJob swaps a job's WAL runs for the segment object the
// broker wrote, in one synced batch: the runs' rows are replaced by one
// segment row, the segment becomes a live object, the runs' bytes are
// counted dead in their WAL objects (which the collector deletes once all
// their bytes are dead), and the partition's WAL start moves past the
// segment, in a new checkpoint. Kafka-level failures: STALE_BROKER_EPOCH
// when the job is unknown (superseded, or from before a restart), its
// lease ended, the partition's rows changed since it was planned
// (DeleteRecords, retention, a deleted topic), or the report does not
// match it; the caller deletes its segment.
func (c *Coordinator) CompleteTierJob(ctx context.Context, req coordapi.CompleteTierJobRequest) error {
	if err := c.enter(ctx); err != nil {
		return err
	}
	defer c.leave()
	c.commit.Lock()
	defer c.commit.Unlock()
	nowMs := c.now().UnixMilli()
	pk := partKey{req.TopicID, req.Partition}
	key := req.ObjectKey
	if req.Compacted != nil && len(req.Compacted.Segments) > 0 {
		key = req.Compacted.Segments[0].ObjectKey
	}
	if num, ok := c.mu.objectsByKey[key]; ok && req.Table == nil && c.mu.objects[num].state == ObjectLive {
		// Already swapped in (segment keys are unique per attempt): a
		// completion answered once and asked again. Refusing it would
		// make the broker delete a segment a row names.
		return nil
	}

	job, ok := c.tier.Check(pk, req.JobID, nowMs)
	switch {
	case job != nil && !c.owns(pk.topic, pk.partition):
		// Moving to another shard (handover.go): its rows are being
		// exported, or gone.
		c.tier.Refuse(pk, job)
		return refusef("job %d: %s/%d is moving to another shard", job.ID, req.TopicID, req.Partition)
	case job == nil:
		return refusef("job %d of %s/%d is not assigned", req.JobID, req.TopicID, req.Partition)
	case !ok:
		return refusef("job %d's lease ended %dms ago", job.ID, nowMs-job.Deadline)
	}
	refuse := func(format string, args ...any) error {
		c.tier.Refuse(pk, job)
		return refusef(format, args...)
	}
	if job.Kind == coordapi.TierJobTableMaintain {
		return c.completeTableMaintain(req, job, refuse)
	}
	if req.Table != nil || job.Kind == coordapi.TierJobTable {
		return c.completeTable(req, job, refuse)
	}
	if req.Compacted != nil || job.Kind == coordapi.TierJobCompact {
		if req.Compacted == nil {
			return refuse("job %d is a compaction job; the report has no compacted segments", job.ID)
		}
		return c.completeCompaction(req, job, refuse, nowMs)
	}
	if err := tierplan.CheckConsolidation(job, &req); err != nil {
		return refuse("%v", err)
	}
	t, st, err := c.partitionLocked(req.TopicID, req.Partition)
	if err != nil {
		return refuse("job %d: %v", job.ID, err)
	}
	if st.gen != job.Gen {
		return refuse("job %d: the partition's log changed since it was planned", job.ID)
	}
	if _, dup := c.mu.objectsByKey[req.ObjectKey]; dup {
		// A garbage object of that key (its segment was deleted by
		// retention since): not this job's upload.
		return refuse("job %d: object %q is already known", job.ID, req.ObjectKey)
	}

	lower := layout.BatchKey(pk.topic, pk.partition, job.BaseOffset)
	lastKey := layout.BatchKey(pk.topic, pk.partition, job.LastOffset)
	upper := layout.BatchKey(pk.topic, pk.partition, job.LastOffset+1)
	rs, err := c.rowStats(lower, upper)
	if err != nil {
		return fmt.Errorf("complete tier job %d: %w", job.ID, err)
	}
	if rs.Segments != 0 || rs.Batches != int64(len(job.Batches)) || rs.Bytes != job.Seg.DataLength {
		// Cannot happen while gen is unchanged; refuse rather than swap
		// rows the job did not copy.
		c.log.Error("tier job range does not match its rows", "job", job.ID, "batches", rs.Batches, "want", len(job.Batches), "bytes", rs.Bytes, "want_bytes", job.Seg.DataLength)
		return refuse("job %d: the partition's rows do not match the job", job.ID)
	}

	obj := &objectState{
		num: c.commit.nextObject, key: req.ObjectKey, size: req.ObjectSize, live: req.DataLength,
		state: ObjectLive, createdMs: nowMs, brokerID: job.Broker,
	}
	seg := job.Seg
	seg.Object = obj.num
	segRow := layout.AppendSegmentRow(nil, &seg)
	b := c.db.NewBatch()
	defer b.Close()
	_ = b.DeleteRange(lower, lastKey, nil)
	_ = b.Set(lastKey, segRow, nil)
	_ = b.Set(layout.ObjectKey(obj.num), obj.encode(), nil)
	_ = b.Set(layout.KeyNextObject, layout.EncodeUint64(obj.num+1), nil)
	objects := c.deadBytesLocked(b, rs.Dead, nowMs)
	st.walStart = job.LastOffset + 1
	st.segBytes += req.DataLength
	st.segments++
	st.metaBytes += int64(len(lastKey)+len(segRow)) - rs.RowBytes
	st.gen++
	c.checkpointLocked(b, pk, &st, nil)
	if err := c.writeWithNewObjects(b, []*objectState{obj}); err != nil {
		return fmt.Errorf("complete tier job %d: commit: %w", job.ID, err)
	}
	c.checkpointedLocked(pk)
	c.commit.nextObject = obj.num + 1
	c.mu.Lock()
	t.parts[pk.partition] = st
	c.installObjectsLocked(objects)
	c.mu.Unlock()
	c.tier.Completed(pk, job, req.DataLength)
	c.log.Info("consolidated", "topic", t.name, "partition", pk.partition, "base", job.BaseOffset, "last", job.LastOffset,
		"batches", len(job.Batches), "bytes", req.DataLength, "segment", req.ObjectKey, "wal_start", st.walStart)
	return nil
}

// AbandonTierJob drops an assigned job, so that its partition is
// planned again at the next round rather than at the end of the lease. An
// unknown job is not an error.
func (c *Coordinator) AbandonTierJob(ctx context.Context, jobID uint64, reason string) error {
	if err := c.enter(ctx); err != nil {
		return err
	}
	defer c.leave()
	c.tier.Abandon(jobID, reason)
	return nil
}

// enforceRetention moves each delete-policy partition's log start past
// its rows that retention.ms or retention.bytes expire, across both
// tiers, as Kafka deletes whole segments: a segment goes when all of it
// is past retention, a WAL batch likewise.
func (c *Coordinator) enforceRetention(ctx context.Context) error {
	nowMs := c.now().UnixMilli()
	for _, pr := range c.partitionsSnapshot() {
		if err := ctx.Err(); err != nil {
			return err
		}
		s := pr.settings
		if !s.Deletes || s.RetentionMs < 0 && s.RetentionBytes < 0 {
			continue
		}
		if err := c.retainPartition(pr, nowMs); err != nil {
			return err
		}
	}
	return nil
}

// retainPartition applies retention to one partition.
func (c *Coordinator) retainPartition(pr partRef, nowMs int64) error {
	c.commit.Lock()
	defer c.commit.Unlock()
	t, st, err := c.partitionLocked(pr.t.id, pr.partition)
	if err != nil || t != pr.t || st.logStart >= st.hwm {
		return nil // deleted meanwhile, or empty
	}
	s := pr.settings
	byTime := s.RetentionMs >= 0
	bySize := s.RetentionBytes >= 0 && st.bytes > s.RetentionBytes
	if !byTime && !bySize {
		return nil
	}
	var expiredBefore int64 = math.MinInt64
	if byTime {
		expiredBefore = nowMs - s.RetentionMs
	}
	if !bySize && st.firstTsGen == st.gen+1 && st.firstTsStart == st.logStart && st.firstTs >= expiredBefore {
		// The first row, unchanged since it was read, is not expired: a
		// pass over 100,000 partitions seeked each one under the commit
		// lock every tier interval (11.7% of a leader, fleet-sim).
		return nil
	}
	// A table topic's table hold (tabletier.go): nothing at or past it
	// may go, so the scan stops there, and a partition held at its log
	// start is not scanned at all.
	upTo := st.hwm
	hold, held := c.tableHold(t, pr.partition)
	if held {
		if hold <= st.logStart {
			return nil
		}
		upTo = min(upTo, hold)
	}
	cut, remaining := st.logStart, st.bytes
	first := true // the first row: what the next pass checks first
	err = c.scanRows(layout.BatchKey(t.id, pr.partition, st.logStart), layout.BatchKey(t.id, pr.partition, st.hwm), func(_, _ []byte, object uint64, bc coordapi.BatchCoord) error {
		if bc.LastOffset < st.logStart {
			return nil
		}
		if bc.BaseOffset >= upTo {
			return errStopScan // held for the table
		}
		ts := bc.MaxTimestamp
		if o := c.mu.objects[object]; ts < 0 && o != nil {
			// No timestamp: when it was written stands in, as Kafka takes
			// a segment file's modification time.
			ts = o.createdMs
		}
		if first {
			c.mu.Lock() // readers copy partState under mu
			p := &t.parts[pr.partition]
			p.firstTs, p.firstTsGen, p.firstTsStart, first = ts, st.gen+1, st.logStart, false
			c.mu.Unlock()
		}
		byTime = byTime && ts < expiredBefore
		bySize = bySize && remaining-int64(bc.ByteLength) >= s.RetentionBytes
		if !byTime && !bySize {
			return errStopScan
		}
		remaining -= int64(bc.ByteLength)
		cut = bc.LastOffset + 1
		return nil
	})
	if err != nil {
		return fmt.Errorf("retention of %s/%d: %w", t.name, pr.partition, err)
	}
	cut = min(cut, upTo) // never past what the topic's table took
	if cut <= st.logStart {
		return nil
	}
	before := st.bytes
	if err := c.deleteRecordsLocked(t, pr.partition, st, cut, "retention"); err != nil {
		return fmt.Errorf("retention of %s/%d: %w", t.name, pr.partition, err)
	}
	c.mu.RLock()
	after := t.parts[pr.partition].bytes
	c.mu.RUnlock()
	c.tier.Retained(before - after)
	return nil
}
