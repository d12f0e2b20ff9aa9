package coordinator

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/coordinator/layout"
	"github.com/floe-io/floe/coordinator/tierplan"
)

// Compaction planning (package tierplan draws when a pass is due): the
// coordinator reads a compacted partition's segment rows for the
// planner, and CompleteTierJob swaps a pass's inputs for its output in
// one synced batch.

// CompactionState is what the planner last found of one compacted
// partition, for metrics.
type CompactionState = tierplan.CompactionState

// CompactionStats counts what compaction passes did since Open.
type CompactionStats = tierplan.CompactionStats

// CompactionStates returns the planner's view of every compacted
// partition, by topic name and partition.
func (c *Coordinator) CompactionStates() map[string][]CompactionState {
	views := c.tier.Compaction()
	out := make(map[string][]CompactionState, len(views))
	c.mu.RLock()
	defer c.mu.RUnlock()
	for pk, cs := range views {
		t := c.mu.topicsByID[pk.topic]
		if t == nil || int(pk.partition) >= len(t.parts) {
			continue
		}
		s := out[t.name]
		if len(s) < len(t.parts) {
			s = append(s, make([]CompactionState, len(t.parts)-len(s))...)
		}
		s[pk.partition] = cs
		out[t.name] = s
	}
	return out
}

// CompactionStats returns the compaction counters.
func (c *Coordinator) CompactionStats() CompactionStats { return c.tier.CompactionStats() }

// viewCompaction reads pk's segment rows and has the planner decide
// whether a pass is due at nowMs; st is the partition's state read.
func (c *Coordinator) viewCompaction(t *topicState, partition int32, s tierplan.CompactSettings, nowMs int64) (v tierplan.View, st partState, err error) {
	c.mu.RLock()
	st = t.parts[partition]
	c.mu.RUnlock()
	if st.logStart >= st.walStart {
		v.State.LastCleanedMs = st.cleanedMs
		return v, st, nil
	}
	var segs []tierplan.Segment
	err = c.scanRows(layout.BatchKey(t.id, partition, st.logStart), layout.BatchKey(t.id, partition, st.walStart), func(_, _ []byte, object uint64, bc coordapi.BatchCoord) error {
		if !bc.Segment {
			return fmt.Errorf("WAL batch %d-%d below the WAL start %d", bc.BaseOffset, bc.LastOffset, st.walStart)
		}
		c.mu.RLock()
		o := c.mu.objects[object]
		c.mu.RUnlock()
		if o == nil {
			return fmt.Errorf("segment %d-%d references unknown object %d", bc.BaseOffset, bc.LastOffset, object)
		}
		bc.ObjectKey, bc.ObjectSize = o.key, o.size
		segs = append(segs, tierplan.Segment{Object: object, Key: o.key, Size: o.size, Coord: bc, CreatedMs: o.createdMs})
		return nil
	})
	if err != nil {
		return v, st, fmt.Errorf("compaction view of %s/%d: %w", t.name, partition, err)
	}
	v = tierplan.PlanCompaction(segs, tierplan.Partition{
		CleanOffset: st.cleanOffset, HorizonMs: st.horizonMs,
		WALCreated: func() (int64, bool) {
			if st.walStart >= st.hwm {
				return 0, false
			}
			created, ok, err := c.firstWALCreated(t.id, partition, st)
			return created, ok && err == nil
		},
	}, s, nowMs)
	v.State.LastCleanedMs = st.cleanedMs
	return v, st, nil
}

// planCompactions queues each compacted partition due for a pass, and
// records the planner's view of every compacted partition for metrics.
func (c *Coordinator) planCompactions(ctx context.Context) error {
	nowMs := c.now().UnixMilli()
	seen := map[partKey]bool{}
	for _, pr := range c.partitionsSnapshot() {
		if err := ctx.Err(); err != nil {
			return err
		}
		c.mu.RLock()
		s := tierplan.CompactSettingsOf(pr.t.configs)
		c.mu.RUnlock()
		if !s.Compacts {
			continue
		}
		pk := partKey{pr.t.id, pr.partition}
		seen[pk] = true
		v, _, err := c.viewCompaction(pr.t, pr.partition, s, nowMs)
		if err != nil {
			return err
		}
		c.tier.SetCompaction(pk, v.State, v.Due)
	}
	c.tier.KeepCompaction(seen)
	return nil
}

// buildCompactJob plans a compaction pass of pk: its segments from the log
// start through the cleanable ones. ok is false when none is due any
// more.
func (c *Coordinator) buildCompactJob(pk partKey, nowMs int64) (*tierplan.Job, bool, error) {
	c.mu.RLock()
	t := c.mu.topicsByID[pk.topic]
	if t == nil || int(pk.partition) >= len(t.parts) {
		c.mu.RUnlock()
		return nil, false, nil
	}
	s := tierplan.CompactSettingsOf(t.configs)
	segBytes := c.settingsLocked(t).SegmentBytes
	indexed := t.kvReady()
	c.mu.RUnlock()
	if !s.Compacts {
		return nil, false, nil
	}
	v, st, err := c.viewCompaction(t, pk.partition, s, nowMs)
	if err != nil || !v.Due {
		return nil, false, err
	}
	segs := v.Segs[:v.Cleanable]
	// Never past the last stable offset: an open transaction's records
	// are not cleaned, as in Kafka.
	for len(segs) > 0 && segs[len(segs)-1].Coord.LastOffset >= st.lso() {
		segs = segs[:len(segs)-1]
	}
	if len(segs) == 0 {
		return nil, false, nil
	}
	job := &tierplan.Job{Gen: st.gen}
	job.Kind = coordapi.TierJobCompact
	job.TopicID, job.Partition = pk.topic, pk.partition
	job.BaseOffset, job.LastOffset = segs[0].Coord.BaseOffset, segs[len(segs)-1].Coord.LastOffset
	job.LeaseMs = c.opts.TierJobLease.Milliseconds()
	job.Deadline = nowMs + job.LeaseMs
	cj := &coordapi.CompactJob{
		DirtyOffset:       max(st.cleanOffset, st.logStart),
		KeyIndex:          indexed,
		NowMs:             nowMs,
		DeleteRetentionMs: s.DeleteRetentionMs,
		SegmentBytes:      segBytes,
	}
	for _, sg := range segs {
		cj.Segments = append(cj.Segments, sg.Coord)
		job.Inputs = append(job.Inputs, sg.Object)
	}
	cj.ProducerLastOffsets = c.producerLastOffsets(pk, job.BaseOffset, job.LastOffset)
	c.mu.RLock()
	cj.Aborted = c.abortedLocked(pk, job.BaseOffset, job.LastOffset+1)
	c.mu.RUnlock()
	job.Compact = cj
	return job, true, nil
}

// producerLastOffsets returns, sorted, the last offsets of the last batch
// of each producer with idempotence state on pk that fall in [lo, hi].
func (c *Coordinator) producerLastOffsets(pk partKey, lo, hi int64) []int64 {
	c.commit.Lock()
	defer c.commit.Unlock()
	var out []int64
	for k, ps := range c.commit.producers {
		if k.topic != pk.topic || k.partition != pk.partition || ps.N == 0 {
			continue
		}
		b := ps.Batches[ps.N-1]
		delta := int64(b.LastSeq) - int64(b.BaseSeq) // the batch's last offset delta
		if delta < 0 {
			delta += math.MaxInt32 + 1 // the sequence wrapped inside the batch
		}
		last := b.BaseOffset + delta
		if last >= lo && last <= hi {
			out = append(out, last)
		}
	}
	slices.Sort(out)
	return out
}

// completeCompaction is CompleteTierJob for a compaction job: the input
// segments from the job's base offset through req.LastOffset are replaced
// by req.Compacted.Segments in one synced batch, and the cleaner
// checkpoint moves. c.commit is held; job is pk's active job.
func (c *Coordinator) completeCompaction(req coordapi.CompleteTierJobRequest, job *tierplan.Job, refuse func(string, ...any) error, nowMs int64) error {
	pk := partKey{req.TopicID, req.Partition}
	res := req.Compacted
	// The replaced inputs: a prefix of the job's, ending at req.LastOffset.
	n, err := tierplan.CheckCompaction(job, &req, func(key string) bool {
		_, dup := c.mu.objectsByKey[key]
		return dup
	})
	if err != nil {
		return refuse("%v", err)
	}
	t, st, err := c.partitionLocked(req.TopicID, req.Partition)
	if err != nil {
		return refuse("job %d: %v", job.ID, err)
	}
	lower := layout.BatchKey(pk.topic, pk.partition, job.BaseOffset)
	upper := layout.BatchKey(pk.topic, pk.partition, req.LastOffset+1)
	// The rows must still be the job's inputs: retention, DeleteRecords or
	// a deleted topic since refuse the swap.
	var rows []uint64
	err = c.scanRows(lower, upper, func(_, _ []byte, object uint64, bc coordapi.BatchCoord) error {
		if !bc.Segment {
			return fmt.Errorf("a WAL batch at %d", bc.BaseOffset)
		}
		rows = append(rows, object)
		return nil
	})
	if err != nil || !slices.Equal(rows, job.Inputs[:n]) {
		return refuse("job %d: the partition's segments changed since it was planned", job.ID)
	}
	rs, err := c.rowStats(lower, upper)
	if err != nil {
		return fmt.Errorf("complete compaction job %d: %w", job.ID, err)
	}

	b := c.db.NewBatch()
	defer b.Close()
	_ = b.DeleteRange(lower, upper, nil)
	objects := c.deadBytesLocked(b, rs.Dead, nowMs)
	outs := make([]*objectState, 0, len(res.Segments))
	var outBytes, rowBytes int64
	outRows := make([]layout.SegmentRow, 0, len(res.Segments)) // the outputs' rows, in order
	num := c.commit.nextObject
	for _, sg := range res.Segments {
		obj := &objectState{
			num: num, key: sg.ObjectKey, size: sg.ObjectSize, live: sg.DataLength,
			state: ObjectLive, createdMs: nowMs, brokerID: job.Broker,
		}
		num++
		row := layout.SegmentRow{
			Object: obj.num, LogAppendTime: job.LogAppendTime, Base: sg.BaseOffset, Batches: sg.Batches,
			DataLength: sg.DataLength, MaxTimestamp: sg.MaxTimestamp, TSOffset: sg.MaxTimestampOffset, TSLast: sg.MaxTimestampLast,
		}
		outRows = append(outRows, row)
		k := layout.BatchKey(pk.topic, pk.partition, sg.LastOffset)
		v := layout.AppendSegmentRow(nil, &row)
		_ = b.Set(k, v, nil)
		_ = b.Set(layout.ObjectKey(obj.num), obj.encode(), nil)
		outs = append(outs, obj)
		outBytes += sg.DataLength
		rowBytes += int64(len(k) + len(v))
	}
	_ = b.Set(layout.KeyNextObject, layout.EncodeUint64(num), nil)
	st.bytes += outBytes - rs.Bytes
	st.segBytes += outBytes - rs.SegBytes
	st.segments += int64(len(res.Segments)) - rs.Segments
	st.metaBytes += rowBytes - rs.RowBytes
	st.cleanOffset = max(st.cleanOffset, res.CleanedThrough+1)
	st.horizonMs = res.TombstoneHorizonMs
	if st.horizonMs < 0 {
		st.horizonMs = -1
	}
	st.cleanedMs = nowMs
	st.gen++
	if st.maxTimestampLast >= job.BaseOffset && st.maxTimestampLast <= req.LastOffset {
		// The max-timestamp batch was in the replaced segments, and may be
		// gone: track it again over the rows as they are after the swap
		// (those before it, the outputs, those after it), in offset order,
		// so that the checkpoint below carries it.
		fresh := newPartState()
		err := c.noteRowsLocked(&fresh, pk.topic, pk.partition, st.logStart, job.BaseOffset, st.logStart)
		for i := 0; err == nil && i < len(outRows); i++ {
			fresh.noteSegment(&outRows[i])
		}
		if err == nil {
			err = c.noteRowsLocked(&fresh, pk.topic, pk.partition, req.LastOffset+1, st.hwm, st.logStart)
		}
		if err != nil {
			return fmt.Errorf("complete compaction job %d: max timestamp: %w", job.ID, err)
		}
		st.maxTimestamp, st.maxTimestampOffset, st.maxTimestampLast = fresh.maxTimestamp, fresh.maxTimestampOffset, fresh.maxTimestampLast
	}
	c.checkpointLocked(b, pk, &st, nil)
	if err := c.writeWithNewObjects(b, outs); err != nil {
		return fmt.Errorf("complete compaction job %d: commit: %w", job.ID, err)
	}
	c.checkpointedLocked(pk)
	c.commit.nextObject = num
	c.mu.Lock()
	t.parts[pk.partition] = st
	c.installObjectsLocked(objects)
	c.mu.Unlock()
	c.tier.Compacted(pk, job, CompactionStats{Passes: 1, BytesIn: res.BytesIn, BytesOut: res.BytesOut, RecordsIn: res.RecordsIn, RecordsOut: res.RecordsOut})
	c.log.Info("compacted", "topic", t.name, "partition", pk.partition, "base", job.BaseOffset, "last", req.LastOffset,
		"segments_in", n, "segments_out", len(res.Segments), "bytes_in", res.BytesIn, "bytes_out", res.BytesOut,
		"records_in", res.RecordsIn, "records_out", res.RecordsOut, "clean_offset", st.cleanOffset, "horizon_ms", st.horizonMs)
	return nil
}

// KvLatestOffsets returns the key index's latest offset of each key in a
// partition of an indexed topic, -1 for a key without an entry. Kafka-level
// failures: UnknownTopicID, UnknownTopicOrPartition, KafkaStorageError
// while the topic is not indexed or its index is being rebuilt, and when
// it was dropped for a rebuild (or turned off) during the lookups.
//
// A compaction pass removes a record whose key answers -1 here, so an
// answer read from a dropped or half-built index would lose live records:
// the index must be ready before the lookups and unchanged after them.
func (c *Coordinator) KvLatestOffsets(ctx context.Context, req coordapi.KvOffsetsRequest) ([]int64, error) {
	if err := c.enter(ctx); err != nil {
		return nil, err
	}
	defer c.leave()
	epoch := c.indexEpoch.Load()
	c.mu.RLock()
	t, _, err := c.partitionLocked(req.TopicID, req.Partition)
	ready := err == nil && t.kvReady()
	c.mu.RUnlock()
	switch {
	case err != nil:
		return nil, err
	case !ready:
		return nil, coordapi.Errorf(kerr.KafkaStorageError, "topic %s: the key index is not ready", t.name)
	}
	if c.testBeforeKvLookups != nil {
		c.testBeforeKvLookups()
	}
	out, err := c.kv.LookupMany(req.TopicID, req.Partition, req.Keys)
	if err != nil {
		return nil, fmt.Errorf("kv latest offsets: %w", err)
	}
	if c.testAfterKvLookups != nil {
		c.testAfterKvLookups()
	}
	c.mu.RLock()
	ready = c.mu.topicsByID[req.TopicID] == t && t.kvReady() && c.indexEpoch.Load() == epoch
	c.mu.RUnlock()
	if !ready {
		return nil, coordapi.Errorf(kerr.KafkaStorageError, "topic %s: the key index was dropped during the lookups", t.name)
	}
	return out, nil
}
