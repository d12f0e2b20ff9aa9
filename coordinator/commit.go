package coordinator

import (
	"context"
	"fmt"
	"slices"

	"github.com/cockroachdb/pebble"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/coordinator/commitcheck"
	"github.com/floe-io/floe/coordinator/durable"
	"github.com/floe-io/floe/coordinator/idempotence"
	"github.com/floe-io/floe/coordinator/layout"
	"github.com/floe-io/floe/coordinator/sortedwrites"
)

// CommitObject commits one uploaded object: for each batch, in order, it
// checks the topic, partition and producer state, assigns offsets from the
// partition's high watermark and records where the batch lives; then it
// writes everything, and the object, in one synced Pebble batch. Only after
// that write succeeds is the in-memory state advanced and subscribers
// notified; if it fails, nothing changed and the error is returned (the
// broker answers a retriable error, and a retried commit of the same object
// is deduplicated for idempotent producers).
//
// Per-batch outcomes are Kafka error codes in the results:
// UNKNOWN_TOPIC_ID for an unknown topic id, UNKNOWN_TOPIC_OR_PARTITION for
// a partition out of range, INVALID_PRODUCER_EPOCH and
// OUT_OF_ORDER_SEQUENCE_NUMBER (see the idempotence rules in package idempotence),
// INVALID_RECORD for an idempotent batch without epoch or sequence. A
// request whose shape is wrong (no object key, batch outside the object)
// fails as a whole with an error wrapping kerr.InvalidRequest.
//
// An object none of whose batches was accepted is recorded as garbage for
// the collector. Committing an object key again (a retried commit) adds its
// accepted batches to the same object record.
//
// Pebble itself treats a failed WAL write as fatal: the call panics (see
// Options.Logger) and the process must restart, recovering from the WAL.
//
// An inline object (req.Inline, a coordinator with Options.Inline) is
// staged in the store before the commit and written in its Pebble batch:
// see inline.go and package inline.
//
// For topics with kv.index.enabled, each accepted batch's keys
// (CommitBatch.Keys) are written to the key index in the same Pebble batch
// that assigns its offsets, so the index never runs ahead of the log.
func (c *Coordinator) CommitObject(ctx context.Context, req *coordapi.CommitRequest) (*coordapi.CommitResponse, error) {
	if c.opts.TopicOwner != nil {
		// Before entering: a follow enters the calls it makes.
		c.followUnknown(ctx, req)
	}
	if c.opts.TxnOwner != nil {
		c.followTxnViews(ctx, req)
	}
	resp, notices, err := c.commitObject(ctx, req)
	if err != nil {
		return nil, err
	}
	c.notify(notices)
	return resp, nil
}

func (c *Coordinator) commitObject(ctx context.Context, req *coordapi.CommitRequest) (*coordapi.CommitResponse, []coordapi.CommitNotice, error) {
	if err := c.enter(ctx); err != nil {
		return nil, nil, err
	}
	defer c.leave()
	if err := commitcheck.Request(req); err != nil {
		return nil, nil, fmt.Errorf("commit object %q: %w", req.ObjectKey, err)
	}
	if err := c.checkObjectAge(req); err != nil {
		return nil, nil, fmt.Errorf("commit object %q: %w", req.ObjectKey, err)
	}
	if req.Inline != nil {
		if err := c.stageInline(ctx, req); err != nil {
			return nil, nil, fmt.Errorf("commit object %q: %w", req.ObjectKey, err)
		}
	}
	c.commit.Lock()
	resp, notices, wait, err := c.commitObjectLocked(req)
	c.commit.Unlock()
	if err == nil {
		// The next commit goes on while the log takes this one.
		err = wait()
	}
	if err != nil {
		if req.Inline != nil {
			c.inline.Release()
		}
		return nil, nil, fmt.Errorf("commit object %q: %w", req.ObjectKey, err)
	}
	if req.Inline != nil {
		c.inline.Queue(req.ObjectKey)
	}
	return resp, notices, nil
}

// partKey names a partition; the tier planner keys its jobs by it
// (tierplan.Key).
type partKey struct {
	topic     coordapi.TopicID
	partition int32
}

// Topic is k's topic (tierplan.Key).
func (k partKey) Topic() coordapi.TopicID { return k.topic }

// Partition is k's partition (tierplan.Key).
func (k partKey) Partition() int32 { return k.partition }

// pendingPart is a partition's state as a commit in progress sees it.
type pendingPart struct {
	topic     *topicState
	partition int32
	st        partState
	// n is how many of the request's batches name the partition.
	n int
	// batches are the coordinates committed to the partition: its run, and
	// the commit notice's batches.
	batches []coordapi.BatchCoord
	// prods is the first of the partition's pending producers (chained by
	// their next), -1 for none.
	prods int32
	// checkpoint is set when the commit writes the partition's checkpoint.
	checkpoint bool
	// control is set when the commit holds a control batch (a
	// transaction's marker) for the partition.
	control bool
}

// pendingProducer is a producer state as a commit in progress sees it.
type pendingProducer struct {
	key     producerStateKey
	st      producerState
	changed bool
	// newlyDirty is set when the commit changed a state that had not
	// changed since its partition's checkpoint.
	newlyDirty bool
	// next is the partition's next pending producer, -1 for none.
	next int32
}

// commitObjectLocked does the work of CommitObject. c.commit must be held.
// With a replicated log the commit is applied before the log has it, and
// wait, called once c.commit is released, returns when it does (see
// Log.Start): nothing of the commit may be answered before.
//
// It writes one batch run per partition that accepted batches (package layout),
// holding the producer states the commit changed there, the checkpoints
// that fall due (checkpoint.go), and the object. Partition and producer
// records are otherwise not written: Open rebuilds them from the runs.
func (c *Coordinator) commitObjectLocked(req *coordapi.CommitRequest) (_ *coordapi.CommitResponse, _ []coordapi.CommitNotice, wait func() error, _ error) {
	nowMs := c.now().UnixMilli()
	obj, isNew := c.objectForCommitLocked(req, nowMs)
	resp := &coordapi.CommitResponse{Results: make([]coordapi.BatchResult, len(req.Batches))}

	// First pass: find each batch's partition (slot[i], -1 if refused),
	// so that each partition gets its own part of one coordinates array.
	sc := &c.commit.scratch
	defer sc.reset()
	slot := slices.Grow(sc.slot[:0], len(req.Batches))[:len(req.Batches)]
	partIndex := sc.partIndex
	parts := sc.parts[:0]
	for i := range req.Batches {
		cb := &req.Batches[i]
		resp.Results[i] = coordapi.BatchResult{BaseOffset: -1, LogAppendTime: -1, LogStartOffset: -1}
		slot[i] = -1
		t := c.mu.topicsByID[cb.TopicID]
		switch {
		case t == nil:
			resp.Results[i].ErrorCode = codeUnknownTopicID
			continue
		case cb.Partition < 0 || int(cb.Partition) >= len(t.parts):
			resp.Results[i].ErrorCode = codeUnknownTopicOrPartition
			continue
		case !c.owns(cb.TopicID, cb.Partition):
			// Another shard's: a broker that routes by another shard
			// count than the cluster's (coordinator/shards).
			resp.Results[i].ErrorCode = codeNotLeader
			continue
		case t.kvIndexed && len(cb.Keys) == 0 && !cb.Control:
			// Every batch of an indexed (so compacted, so keyed) topic has
			// keys: none means the broker had not yet seen kv.index.enabled.
			// Refuse it rather than let the index miss its records; the
			// producer retries and the broker extracts them.
			resp.Results[i].ErrorCode = codeNotLeader
			continue
		}
		pk := partKey{cb.TopicID, cb.Partition}
		j, ok := partIndex[pk]
		if !ok {
			j = int32(len(parts))
			partIndex[pk] = j
			parts = append(parts, pendingPart{topic: t, partition: cb.Partition, st: t.parts[cb.Partition], prods: -1})
		}
		parts[j].n++
		slot[i] = j
	}
	coords := make([]coordapi.BatchCoord, len(req.Batches))
	for j, n := 0, 0; j < len(parts); j++ {
		parts[j].batches = coords[n : n : n+parts[j].n]
		n += parts[j].n
	}

	var (
		prodIndex = sc.prodIndex
		prods     = sc.prods[:0]
		accepted  int64
		kvs       []kvApply
		posts     []postingApply
		txnOps    []txnOp
		txnKeys   []pendingKeys
	)
	for i := range req.Batches {
		if slot[i] < 0 {
			continue
		}
		cb := &req.Batches[i]
		res := &resp.Results[i]
		pp := &parts[slot[i]]
		t := pp.topic
		ts := cb.MaxTimestamp
		if t.logAppendTime {
			ts = nowMs
		}

		if cb.Transactional && !cb.Control {
			if code := c.checkTxnBatchLocked(cb); code != 0 {
				res.ErrorCode = code
				continue
			}
		}
		var prod *pendingProducer
		if cb.ProducerID >= 0 && !cb.Control {
			if cb.ProducerEpoch < 0 || cb.BaseSequence < 0 {
				res.ErrorCode = codeInvalidRecord
				continue
			}
			prk := producerStateKey{cb.ProducerID, cb.TopicID, cb.Partition}
			k, ok := prodIndex[prk]
			if !ok {
				k = int32(len(prods))
				prodIndex[prk] = k
				prods = append(prods, pendingProducer{key: prk, st: producerState{Producer: layout.Producer{Epoch: noProducerEpoch}}, next: pp.prods})
				pp.prods = k
				if cur := c.commit.producers[prk]; cur != nil {
					prods[k].st = *cur
				}
			}
			prod = &prods[k]
			code, dup := idempotence.Check(&prod.st.Producer, cb)
			if code != 0 {
				res.ErrorCode = code
				continue
			}
			if dup != nil {
				res.BaseOffset = dup.BaseOffset
				res.LogStartOffset = pp.st.logStart
				if t.logAppendTime {
					res.LogAppendTime = dup.Timestamp
				}
				continue
			}
		}

		base := pp.st.hwm
		last := base + int64(cb.LastOffsetDelta)
		if base == pp.st.logStart && ts >= 0 {
			// The partition's first row: retention's pass need not read
			// it (retainPartition).
			pp.st.firstTs, pp.st.firstTsGen, pp.st.firstTsStart = ts, pp.st.gen+1, base
		}
		pp.st.hwm = last + 1
		pp.st.noteBatch(base, last, ts, t.logAppendTime)
		pp.st.bytes += int64(cb.ByteLength)
		pp.batches = append(pp.batches, coordapi.BatchCoord{
			ObjectKey: req.ObjectKey, ObjectSize: req.ObjectSize,
			ByteOffset: cb.ByteOffset, ByteLength: cb.ByteLength,
			BaseOffset: base, LastOffset: last, MaxTimestamp: ts, LogAppendTime: t.logAppendTime,
		})
		if prod != nil {
			idempotence.Record(&prod.st.Producer, cb, base, ts, nowMs)
			prod.changed = true
			if !prod.st.dirty {
				prod.st.dirty, prod.newlyDirty = true, true
			}
		}
		accepted += int64(cb.ByteLength)
		if cb.Transactional || cb.Control {
			txnOps = append(txnOps, txnOp{part: slot[i], pid: cb.ProducerID, base: base, control: cb.Control, commit: cb.Commit})
		}
		if cb.Control {
			pp.control = true
		}
		if t.kvIndexed && len(cb.Keys) > 0 {
			if cb.Transactional {
				// Its keys take effect when its transaction commits (txn.go).
				txnKeys = append(txnKeys, pendingKeys{pid: cb.ProducerID, kv: kvApply{cb.TopicID, cb.Partition, base, cb.Keys}})
			} else {
				kvs = append(kvs, kvApply{cb.TopicID, cb.Partition, base, cb.Keys})
			}
		}
		if t.hierarchical && len(cb.Keys) > 0 {
			posts = append(posts, postingApply{cb.TopicID, cb.Partition, base, last, cb.ByteLength, cb.Keys})
		}

		res.BaseOffset = base
		res.LogStartOffset = pp.st.logStart
		if t.logAppendTime {
			res.LogAppendTime = nowMs
		}
	}

	sc.slot, sc.parts, sc.prods = slot, parts, prods // kept, grown, for the next commit
	w := c.commitWrites(&sc.writes, obj, isNew, parts, prods, prodIndex, accepted)
	b := c.db.NewBatchWithSize(w.BatchSize())
	defer b.Close()
	w.Apply(b)
	if req.Inline != nil {
		// The object itself, until the flusher has put it (package inline).
		_ = b.Set(layout.StagedKey(req.ObjectKey), req.Inline, nil)
	}
	// The key index is written in the same durable batch that assigns the
	// offsets, so it never runs ahead of the log nor misses a record.
	for _, kv := range kvs {
		c.kv.Apply(b, kv.id, kv.partition, kv.base, kvEntries(kv.keys))
	}
	// So are the postings of hierarchical topics.
	for _, pa := range posts {
		c.postings.Apply(b, pa.id, pa.partition, pa.base, pa.last, pa.size, postingKeys(pa.keys))
	}
	// And the transactions' open and aborted rows (txn.go).
	txnChanges, err := c.applyTxnOpsLocked(b, parts, txnOps, txnKeys)
	if err != nil {
		return nil, nil, nil, err
	}
	superseded := c.supersedeHeldLocked(b, kvs)

	if c.testBeforeCommit != nil {
		if err := c.testBeforeCommit(); err != nil {
			return nil, nil, nil, err
		}
	}
	// The partitions' high watermarks, for c.dur: noted before the
	// write, and again once the log has it.
	marks := make([]durable.Mark[partKey], 0, len(parts))
	for j := range parts {
		if pp := &parts[j]; len(pp.batches) > 0 {
			marks = append(marks, durable.Mark[partKey]{Key: partKey{pp.topic.id, pp.partition}, HWM: pp.st.hwm, Marker: pp.control})
		}
	}
	c.dur.Writing(marks)
	logged, err := c.writeAsync(b, pebble.Sync)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("pebble commit: %w", err)
	}
	wait = func() error {
		err := logged()
		if err == nil {
			c.dur.Durable(marks)
		}
		return err
	}

	// Written (and, without a log, durable): install in memory.
	var notices []coordapi.CommitNotice
	c.mu.Lock()
	for j := range parts {
		pp := &parts[j]
		if len(pp.batches) > 0 {
			pp.topic.parts[pp.partition] = pp.st
			notices = append(notices, coordapi.CommitNotice{TopicID: pp.topic.id, Partition: pp.partition,
				HighWatermark: pp.st.hwm, LogStartOffset: pp.st.logStart, LastStableOffset: pp.st.lso(), Batches: pp.batches})
		}
	}
	if isNew || accepted > 0 {
		c.installObjectsLocked([]*objectState{obj})
	}
	txnChanges.installLocked(c)
	for i := range notices {
		notices[i].HasAborted = len(c.mu.aborted[partKey{notices[i].TopicID, notices[i].Partition}]) > 0
	}
	c.mu.Unlock()
	c.installSupersededLocked(superseded)
	if isNew {
		c.commit.nextObject = obj.num + 1
	}
	for k := range prods {
		if !prods[k].changed {
			continue
		}
		if cur := c.commit.producers[prods[k].key]; cur != nil {
			*cur = prods[k].st
		} else {
			st := prods[k].st
			c.commit.producers[prods[k].key] = &st
		}
	}
	for j := range parts {
		pp := &parts[j]
		if len(pp.batches) == 0 {
			continue
		}
		pk := partKey{pp.topic.id, pp.partition}
		for k := pp.prods; k >= 0; k = prods[k].next {
			if prods[k].newlyDirty {
				c.noteDirtyLocked(pk, prods[k].key.producerID)
			}
		}
		if pp.checkpoint {
			c.checkpointedLocked(pk)
		} else {
			c.logLocked(pk).runs++
		}
	}
	if c.opts.TxnOwner != nil {
		// A marker ends its producer's transaction here: the view of it
		// is stale, and so is any fetched before the marker.
		for _, op := range txnOps {
			if op.control {
				delete(c.commit.txnViews, op.pid)
				c.commit.markerGen++
				if c.commit.fetching > 0 {
					c.commit.markers[op.pid] = c.commit.markerGen
				}
			}
		}
	}
	if accepted == 0 {
		c.log.Warn("object committed with no accepted batch; marked garbage",
			"object", req.ObjectKey, "batches", len(req.Batches))
	}
	return resp, notices, wait, nil
}

// commitWrites collects a commit's writes: one run per partition that
// accepted batches, with the producer states it changed, the checkpoints
// due, and the object (updated in place with the accepted bytes). It sets
// the checkpoint flag of the partitions it checkpoints.
func (c *Coordinator) commitWrites(w *sortedwrites.Writes, obj *objectState, isNew bool, parts []pendingPart, prods []pendingProducer,
	prodIndex map[producerStateKey]int32, accepted int64) *sortedwrites.Writes {
	size := 64 + len(obj.key)
	for j := range parts {
		size += layout.BatchKeyLen + 24 + 16*len(parts[j].batches)
	}
	size += len(prods) * (8 + 20*layout.MaxProducerBatches)
	w.Reset(size, len(parts)+2)
	for j := range parts {
		pp := &parts[j]
		if len(pp.batches) == 0 {
			continue
		}
		pk := partKey{pp.topic.id, pp.partition}
		h := layout.RunHeader{
			Object: obj.num, LogAppendTime: pp.topic.logAppendTime,
			MaxTimestamp: pp.st.maxTimestamp, MaxTimestampOffset: pp.st.maxTimestampOffset,
			MaxTimestampLast: pp.st.maxTimestampLast,
		}
		rowStart := len(w.Arena)
		w.Arena = layout.AppendBatchKey(w.Arena, pk.topic, pk.partition, pp.st.hwm-1)
		w.EndKey()
		w.Arena = layout.AppendBatchRun(w.Arena, &h, pp.batches)
		m := 0
		for k := pp.prods; k >= 0; k = prods[k].next {
			if prods[k].changed {
				m++
			}
		}
		w.Arena = layout.AppendRunProducerCount(w.Arena, m)
		for k := pp.prods; k >= 0; k = prods[k].next {
			if prods[k].changed {
				w.Arena = layout.AppendRunProducer(w.Arena, prods[k].key.producerID, &prods[k].st.Producer)
			}
		}
		w.EndValue()
		pp.st.metaBytes += int64(len(w.Arena) - rowStart)

		pl := c.commit.logs[pk]
		runs := 1
		if pl != nil {
			runs += pl.runs
		}
		if !checkpointDue(pk, runs) {
			continue
		}
		pp.checkpoint = true
		w.Set(layout.PartitionKey(pk.topic, pk.partition), pp.st.encode())
		if pl != nil {
			for _, id := range pl.dirty {
				prk := producerStateKey{id, pk.topic, pk.partition}
				st := c.commit.producers[prk]
				if k, ok := prodIndex[prk]; ok {
					st = &prods[k].st
				}
				w.Arena = layout.AppendProducerKey(w.Arena, prk.producerID, prk.topic, prk.partition)
				w.EndKey()
				w.Arena = layout.AppendProducer(w.Arena, &st.Producer)
				w.EndValue()
			}
		}
		for k := pp.prods; k >= 0; k = prods[k].next {
			if prods[k].newlyDirty {
				w.Arena = layout.AppendProducerKey(w.Arena, prods[k].key.producerID, prods[k].key.topic, prods[k].key.partition)
				w.EndKey()
				w.Arena = layout.AppendProducer(w.Arena, &prods[k].st.Producer)
				w.EndValue()
			}
		}
	}
	obj.live += accepted
	if obj.live > 0 && obj.state == ObjectGarbage {
		// A new object is garbage until a batch is accepted; a known garbage
		// object may be revived by a retried commit (so the collector must
		// re-check an object's state when it deletes it).
		obj.state, obj.garbageSinceMs = ObjectLive, 0
	}
	if isNew || accepted > 0 {
		w.Set(layout.ObjectKey(obj.num), obj.encode())
	}
	if isNew {
		w.Set(layout.KeyNextObject, layout.EncodeUint64(obj.num+1))
	}
	return w
}

// objectForCommitLocked returns a copy of the object record the commit
// will write: the existing one for a known key (a retried commit), else a
// new one. c.commit must be held.
func (c *Coordinator) objectForCommitLocked(req *coordapi.CommitRequest, nowMs int64) (obj *objectState, isNew bool) {
	if num, ok := c.mu.objectsByKey[req.ObjectKey]; ok {
		o := *c.mu.objects[num]
		return &o, false
	}
	return &objectState{
		num:            c.commit.nextObject,
		key:            req.ObjectKey,
		size:           req.ObjectSize,
		state:          ObjectGarbage, // until a batch is accepted
		createdMs:      nowMs,
		garbageSinceMs: nowMs,
		brokerID:       req.BrokerID,
	}, true
}

// noteBatch updates the max-timestamp tracking with an appended batch.
// Ties keep the earlier batch, as Kafka does. CreateTime batches answer
// their last offset (batch granularity: the max-timestamp record is at or
// before it); LogAppendTime batches answer their base offset (every record
// has the batch's timestamp).
func (p *partState) noteBatch(base, last, ts int64, logAppendTime bool) {
	if ts <= p.maxTimestamp {
		return
	}
	p.maxTimestamp = ts
	p.maxTimestampLast = last
	p.maxTimestampOffset = last
	if logAppendTime {
		p.maxTimestampOffset = base
	}
}

// kvApply is one accepted batch's keys, for the key index.
type kvApply struct {
	id        coordapi.TopicID
	partition int32
	base      int64
	keys      []coordapi.KeyEntry
}

// commitScratch is memory commitObjectLocked reuses from one commit to the
// next (it holds c.commit): nothing in it outlives the commit.
type commitScratch struct {
	slot      []int32
	partIndex map[partKey]int32
	parts     []pendingPart
	prodIndex map[producerStateKey]int32
	prods     []pendingProducer
	writes    sortedwrites.Writes
}

// maxScratchBatches bounds the commit size whose scratch memory is kept.
const maxScratchBatches = 1 << 16

// reset empties the scratch for the next commit, dropping references to
// the commit's topics and coordinates, and dropping it whole after a very
// large commit.
func (s *commitScratch) reset() {
	if cap(s.slot) > maxScratchBatches {
		*s = commitScratch{}
	}
	if s.partIndex == nil {
		s.partIndex = make(map[partKey]int32)
		s.prodIndex = make(map[producerStateKey]int32)
	}
	clear(s.partIndex)
	clear(s.prodIndex)
	clear(s.parts)
	s.parts = s.parts[:0]
	s.prods = s.prods[:0]
}
