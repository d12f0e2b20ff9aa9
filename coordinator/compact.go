package coordinator

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/coordinator/layout"
)

// Compaction planning. A compacted topic's partition has a cleaner
// checkpoint (partState.cleanOffset): the records below it were cleaned
// at least once. Its segments split into the clean part (below the
// checkpoint) and the dirty part; the WAL tier is never compacted (it is
// the uncleaned head, Kafka's active segment) and counts in neither. A
// partition is due for a pass, as Kafka's LogCleanerManager decides, when
// its cleanable dirty bytes (dirty segments whose newest record is older
// than min.compaction.lag.ms) are at least min.cleanable.dirty.ratio of
// the clean plus cleanable bytes, or when its oldest dirty record is older
// than max.compaction.lag.ms, or when a tombstone the last pass kept
// reached its delete horizon. A pass rewrites the segments from the log
// start through the cleanable ones (tiered/doc.go, Compaction) and
// CompleteTierJob swaps them for its output in one synced batch.

// maxCompactSegments bounds the input segments of one compaction job, so
// that its claim reply stays small; the rest wait for the next pass.
const maxCompactSegments = 1000

// compactSettings are a compacted topic's cleaner configs.
type compactSettings struct {
	compacts                              bool
	minDirtyRatio                         float64
	minLagMs, maxLagMs, deleteRetentionMs int64
}

// compactSettingsLocked reads t's cleaner configs. c.mu must be held.
func compactSettingsLocked(t *topicState) compactSettings {
	_, compacts := cleanupPolicy(t.configs)
	s := compactSettings{
		compacts:          compacts,
		minDirtyRatio:     0.5,
		minLagMs:          configInt(t.configs, coordapi.ConfigMinCompactionLagMs),
		maxLagMs:          configInt(t.configs, coordapi.ConfigMaxCompactionLagMs),
		deleteRetentionMs: configInt(t.configs, coordapi.ConfigDeleteRetentionMs),
	}
	if v, ok := t.configs[coordapi.ConfigMinCleanableDirtyRatio]; ok {
		if f, err := strconv.ParseFloat(v, 64); err == nil && f >= 0 && f <= 1 {
			s.minDirtyRatio = f
		}
	}
	return s
}

// configInt returns an integer topic config, or its default.
func configInt(configs map[string]string, name string) int64 {
	if v, ok := configs[name]; ok {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			return n
		}
	}
	d, _ := coordapi.LookupTopicConfig(name)
	n, _ := strconv.ParseInt(d.Default, 10, 64)
	return n
}

// cleanupPolicy reports whether a topic's cleanup.policy (default delete)
// includes delete and compact.
func cleanupPolicy(configs map[string]string) (deletes, compacts bool) {
	policy, ok := configs[coordapi.ConfigCleanupPolicy]
	if !ok || policy == "" {
		policy = "delete"
	}
	list := coordapi.SplitConfigList(policy)
	return slices.Contains(list, "delete"), slices.Contains(list, "compact")
}

// CompactionState is what the planner last found of one compacted
// partition, for metrics.
type CompactionState struct {
	// CleanBytes and DirtyBytes are the segment bytes below and at or
	// above the cleaner checkpoint; DirtyRatio is the cleanable dirty
	// share that min.cleanable.dirty.ratio is compared with.
	CleanBytes, DirtyBytes int64
	DirtyRatio             float64
	// LagMs is the age of the oldest uncleaned record (segments or WAL),
	// 0 when none; LastCleanedMs when the last pass completed, -1 never.
	LagMs, LastCleanedMs int64
}

// CompactionStats counts what compaction passes did since Open.
type CompactionStats struct {
	// Passes counts completed passes; BytesIn and RecordsIn what they read
	// of the segments they replaced, BytesOut and RecordsOut what they
	// wrote.
	Passes                                   int64
	BytesIn, BytesOut, RecordsIn, RecordsOut int64
}

// CompactionStates returns the planner's view of every compacted
// partition, by topic name and partition.
func (c *Coordinator) CompactionStates() map[string][]CompactionState {
	c.tier.Lock()
	defer c.tier.Unlock()
	out := make(map[string][]CompactionState, len(c.tier.compaction))
	c.mu.RLock()
	defer c.mu.RUnlock()
	for pk, cs := range c.tier.compaction {
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
func (c *Coordinator) CompactionStats() CompactionStats {
	c.tier.Lock()
	defer c.tier.Unlock()
	return c.tier.compactStats
}

// compactSegment is one segment row, for planning.
type compactSegment struct {
	object    uint64
	key       string
	size      int64
	coord     coordapi.BatchCoord
	createdMs int64
}

// compactView is a compacted partition's segments and what the planner
// makes of them.
type compactView struct {
	st   partState
	segs []compactSegment
	// cleanable is how many of segs (a prefix) a pass may rewrite: those
	// whose newest record is older than min.compaction.lag.ms, up to
	// maxCompactSegments.
	cleanable int
	state     CompactionState
	due       bool
}

// viewCompaction reads pk's segment rows and decides whether a pass is
// due at nowMs.
func (c *Coordinator) viewCompaction(t *topicState, partition int32, s compactSettings, nowMs int64) (compactView, error) {
	c.mu.RLock()
	st := t.parts[partition]
	c.mu.RUnlock()
	v := compactView{st: st}
	v.state.LastCleanedMs = st.cleanedMs
	if st.logStart >= st.walStart {
		return v, nil
	}
	err := c.scanRows(layout.BatchKey(t.id, partition, st.logStart), layout.BatchKey(t.id, partition, st.walStart), func(_, _ []byte, object uint64, bc coordapi.BatchCoord) error {
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
		v.segs = append(v.segs, compactSegment{object: object, key: o.key, size: o.size, coord: bc, createdMs: o.createdMs})
		return nil
	})
	if err != nil {
		return v, fmt.Errorf("compaction view of %s/%d: %w", t.name, partition, err)
	}
	var cleanable int64
	oldestDirty := int64(-1) // timestamp of the first dirty segment's newest record
	for i, sg := range v.segs {
		n := int64(sg.coord.ByteLength)
		newest := sg.coord.MaxTimestamp
		if newest < 0 {
			newest = sg.createdMs // no timestamp: when it was written stands in
		}
		if sg.coord.LastOffset < st.cleanOffset {
			v.state.CleanBytes += n
		} else {
			v.state.DirtyBytes += n
			if oldestDirty < 0 {
				oldestDirty = newest
			}
		}
		if v.cleanable == i && i < maxCompactSegments && nowMs-newest >= s.minLagMs {
			v.cleanable = i + 1
			if sg.coord.LastOffset >= st.cleanOffset {
				cleanable += n
			}
		}
	}
	if total := v.state.CleanBytes + cleanable; total > 0 {
		v.state.DirtyRatio = float64(cleanable) / float64(total)
	}
	// The oldest uncleaned record: in the first dirty segment, or the
	// first WAL batch.
	switch {
	case oldestDirty >= 0:
		v.state.LagMs = max(nowMs-oldestDirty, 0)
	case st.walStart < st.hwm:
		if created, ok, err := c.firstWALCreated(t.id, partition, st); err == nil && ok {
			v.state.LagMs = max(nowMs-created, 0)
		}
	}
	if v.cleanable == 0 {
		return v, nil
	}
	switch {
	case cleanable > 0 && v.state.DirtyRatio >= s.minDirtyRatio:
		v.due = true
	case cleanable > 0 && oldestDirty >= 0 && nowMs-oldestDirty >= s.maxLagMs:
		v.due = true // max.compaction.lag.ms: due whatever the ratio
	case st.horizonMs >= 0 && nowMs >= st.horizonMs:
		v.due = true // tombstones reached their delete horizon
	}
	return v, nil
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
		s := compactSettingsLocked(pr.t)
		c.mu.RUnlock()
		if !s.compacts {
			continue
		}
		pk := partKey{pr.t.id, pr.partition}
		seen[pk] = true
		v, err := c.viewCompaction(pr.t, pr.partition, s, nowMs)
		if err != nil {
			return err
		}
		c.tier.Lock()
		c.tier.compaction[pk] = v.state
		if v.due {
			c.queueLocked(pk, coordapi.TierJobCompact)
		}
		c.tier.Unlock()
	}
	c.tier.Lock()
	for pk := range c.tier.compaction {
		if !seen[pk] {
			delete(c.tier.compaction, pk)
		}
	}
	c.tier.Unlock()
	return nil
}

// buildCompactJob plans a compaction pass of pk: its segments from the log
// start through the cleanable ones. ok is false when none is due any
// more.
func (c *Coordinator) buildCompactJob(pk partKey, nowMs int64) (*tierJob, bool, error) {
	c.mu.RLock()
	t := c.mu.topicsByID[pk.topic]
	if t == nil || int(pk.partition) >= len(t.parts) {
		c.mu.RUnlock()
		return nil, false, nil
	}
	s := compactSettingsLocked(t)
	segBytes := c.settingsLocked(t).segmentBytes
	indexed := t.kvReady()
	c.mu.RUnlock()
	if !s.compacts {
		return nil, false, nil
	}
	v, err := c.viewCompaction(t, pk.partition, s, nowMs)
	if err != nil || !v.due {
		return nil, false, err
	}
	segs := v.segs[:v.cleanable]
	// Never past the last stable offset: an open transaction's records
	// are not cleaned, as in Kafka.
	for len(segs) > 0 && segs[len(segs)-1].coord.LastOffset >= v.st.lso() {
		segs = segs[:len(segs)-1]
	}
	if len(segs) == 0 {
		return nil, false, nil
	}
	job := &tierJob{gen: v.st.gen}
	job.Kind = coordapi.TierJobCompact
	job.TopicID, job.Partition = pk.topic, pk.partition
	job.BaseOffset, job.LastOffset = segs[0].coord.BaseOffset, segs[len(segs)-1].coord.LastOffset
	job.LeaseMs = c.opts.TierJobLease.Milliseconds()
	job.deadline = nowMs + job.LeaseMs
	cj := &coordapi.CompactJob{
		DirtyOffset:       max(v.st.cleanOffset, v.st.logStart),
		KeyIndex:          indexed,
		NowMs:             nowMs,
		DeleteRetentionMs: s.deleteRetentionMs,
		SegmentBytes:      segBytes,
	}
	for _, sg := range segs {
		cj.Segments = append(cj.Segments, sg.coord)
		job.inputs = append(job.inputs, sg.object)
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
func (c *Coordinator) completeCompaction(req coordapi.CompleteTierJobRequest, job *tierJob, refuse func(string, ...any) error, nowMs int64) error {
	pk := partKey{req.TopicID, req.Partition}
	res := req.Compacted
	cj := job.Compact
	if job.Kind != coordapi.TierJobCompact || cj == nil {
		return refuse("job %d is not a compaction job", job.ID)
	}
	// The replaced inputs: a prefix of the job's, ending at req.LastOffset.
	n := slices.IndexFunc(cj.Segments, func(bc coordapi.BatchCoord) bool { return bc.LastOffset == req.LastOffset }) + 1
	switch {
	case req.BaseOffset != job.BaseOffset || n == 0:
		return refuse("job %d's segments do not end at offset %d from %d", job.ID, req.LastOffset, req.BaseOffset)
	case len(res.Segments) == 0:
		return refuse("job %d reports no segment", job.ID)
	case res.CleanedThrough < cj.Segments[n-1].BaseOffset || res.CleanedThrough > max(req.LastOffset, cj.DirtyOffset-1):
		return refuse("job %d cleaned through %d, outside its last replaced segment %d-%d", job.ID, res.CleanedThrough, cj.Segments[n-1].BaseOffset, req.LastOffset)
	}
	next := job.BaseOffset
	for i, sg := range res.Segments {
		switch {
		case sg.BaseOffset != next || sg.LastOffset < sg.BaseOffset:
			return refuse("job %d's segment %d covers %d-%d, not from %d", job.ID, i, sg.BaseOffset, sg.LastOffset, next)
		case sg.ObjectKey == "" || sg.DataLength <= 0 || sg.DataLength > layout.MaxSegmentData || sg.ObjectSize <= sg.DataLength:
			return refuse("job %d's segment %q of %d bytes cannot hold %d bytes of data and its indexes", job.ID, sg.ObjectKey, sg.ObjectSize, sg.DataLength)
		case sg.Batches <= 0 || sg.Batches > sg.LastOffset-sg.BaseOffset+1:
			return refuse("job %d's segment %q has %d batches over %d-%d", job.ID, sg.ObjectKey, sg.Batches, sg.BaseOffset, sg.LastOffset)
		}
		if _, dup := c.mu.objectsByKey[sg.ObjectKey]; dup {
			return refuse("job %d: object %q is already known", job.ID, sg.ObjectKey)
		}
		next = sg.LastOffset + 1
	}
	if next != req.LastOffset+1 {
		return refuse("job %d's segments end at %d, not %d", job.ID, next-1, req.LastOffset)
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
	if err != nil || !slices.Equal(rows, job.inputs[:n]) {
		return refuse("job %d: the partition's segments changed since it was planned", job.ID)
	}
	rs, err := c.rowStats(lower, upper)
	if err != nil {
		return fmt.Errorf("complete compaction job %d: %w", job.ID, err)
	}

	b := c.db.NewBatch()
	defer b.Close()
	_ = b.DeleteRange(lower, upper, nil)
	objects := c.deadBytesLocked(b, rs.dead, nowMs)
	outs := make([]*objectState, 0, len(res.Segments))
	var outBytes, rowBytes int64
	outRows := make([]layout.SegmentRow, 0, len(res.Segments)) // the outputs' rows, in order
	num := c.commit.nextObject
	for _, sg := range res.Segments {
		obj := &objectState{
			num: num, key: sg.ObjectKey, size: sg.ObjectSize, live: sg.DataLength,
			state: ObjectLive, createdMs: nowMs, brokerID: job.broker,
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
	st.bytes += outBytes - rs.bytes
	st.segBytes += outBytes - rs.segBytes
	st.segments += int64(len(res.Segments)) - rs.segments
	st.metaBytes += rowBytes - rs.rowBytes
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
	c.tier.Lock()
	if c.tier.active[pk] == job {
		delete(c.tier.active, pk)
	}
	c.tier.stats.JobsCompleted++
	cs := &c.tier.compactStats
	cs.Passes++
	cs.BytesIn += res.BytesIn
	cs.BytesOut += res.BytesOut
	cs.RecordsIn += res.RecordsIn
	cs.RecordsOut += res.RecordsOut
	c.tier.Unlock()
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
