package coordinator

import (
	"context"
	"fmt"

	"github.com/cockroachdb/pebble"
	"github.com/twmb/franz-go/pkg/kerr"
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
// OUT_OF_ORDER_SEQUENCE_NUMBER (see the idempotence rules in producers.go),
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
// Batches are not yet fed to the key index (CommitBatch.Keys is ignored).
func (c *Coordinator) CommitObject(ctx context.Context, req *CommitRequest) (*CommitResponse, error) {
	resp, notices, err := c.commitObject(ctx, req)
	if err != nil {
		return nil, err
	}
	c.notify(notices)
	return resp, nil
}

func (c *Coordinator) commitObject(ctx context.Context, req *CommitRequest) (*CommitResponse, []CommitNotice, error) {
	if err := c.enter(ctx); err != nil {
		return nil, nil, err
	}
	defer c.leave()
	if err := validateCommitRequest(req); err != nil {
		return nil, nil, fmt.Errorf("commit object %q: %w", req.ObjectKey, err)
	}
	c.commit.Lock()
	defer c.commit.Unlock()
	resp, notices, err := c.commitObjectLocked(req)
	if err != nil {
		return nil, nil, fmt.Errorf("commit object %q: %w", req.ObjectKey, err)
	}
	return resp, notices, nil
}

// validateCommitRequest rejects requests no correct broker sends.
func validateCommitRequest(req *CommitRequest) error {
	if req.ObjectKey == "" {
		return kafkaErrorf(kerr.InvalidRequest, "empty object key")
	}
	if req.ObjectSize < 0 {
		return kafkaErrorf(kerr.InvalidRequest, "negative object size %d", req.ObjectSize)
	}
	for i := range req.Batches {
		b := &req.Batches[i]
		if b.ByteOffset < 0 || b.ByteLength <= 0 || b.ByteOffset+int64(b.ByteLength) > req.ObjectSize {
			return kafkaErrorf(kerr.InvalidRequest, "batch %d at [%d, +%d) is outside the object of %d bytes",
				i, b.ByteOffset, b.ByteLength, req.ObjectSize)
		}
		if b.LastOffsetDelta < 0 {
			return kafkaErrorf(kerr.InvalidRequest, "batch %d has negative last offset delta %d", i, b.LastOffsetDelta)
		}
	}
	return nil
}

type partKey struct {
	topic     TopicID
	partition int32
}

// pendingPart is a partition's state as a commit in progress sees it.
type pendingPart struct {
	topic     *topicState
	partition int32
	st        partState
	changed   bool
	// batches are the coordinates committed to the partition, for the
	// commit notice.
	batches []BatchCoord
}

// pendingProducer is a producer state as a commit in progress sees it.
type pendingProducer struct {
	st      producerState
	changed bool
}

// commitObjectLocked does the work of CommitObject. c.commit must be held.
func (c *Coordinator) commitObjectLocked(req *CommitRequest) (*CommitResponse, []CommitNotice, error) {
	nowMs := c.now().UnixMilli()
	parts := make(map[partKey]*pendingPart)
	var partOrder []*pendingPart
	producers := make(map[producerStateKey]*pendingProducer)

	obj, isNew := c.objectForCommitLocked(req, nowMs)
	w := &sortedWrites{
		arena: make([]byte, 0, len(req.Batches)*(batchKeyLen+32)),
		kvs:   make([]kvRef, 0, 2*len(req.Batches)+2),
	}
	key := make([]byte, 0, batchKeyLen)
	val := make([]byte, 0, 64)

	resp := &CommitResponse{Results: make([]BatchResult, len(req.Batches))}
	var (
		accepted int64
		kvs      []kvApply
	)
	for i := range req.Batches {
		cb := &req.Batches[i]
		res := &resp.Results[i]
		*res = BatchResult{BaseOffset: -1, LogAppendTime: -1, LogStartOffset: -1}

		t := c.mu.topicsByID[cb.TopicID]
		if t == nil {
			res.ErrorCode = codeUnknownTopicID
			continue
		}
		if cb.Partition < 0 || int(cb.Partition) >= len(t.parts) {
			res.ErrorCode = codeUnknownTopicOrPartition
			continue
		}
		if t.kvIndexed && len(cb.Keys) == 0 {
			// Every batch of an indexed (so compacted, so keyed) topic has
			// keys: none means the broker had not yet seen kv.index.enabled.
			// Refuse it rather than let the index miss its records; the
			// producer retries and the broker extracts them.
			res.ErrorCode = codeNotLeader
			continue
		}
		pk := partKey{cb.TopicID, cb.Partition}
		pp := parts[pk]
		if pp == nil {
			pp = &pendingPart{topic: t, partition: cb.Partition, st: t.parts[cb.Partition]}
			parts[pk] = pp
			partOrder = append(partOrder, pp)
		}
		ts := cb.MaxTimestamp
		if t.logAppendTime {
			ts = nowMs
		}

		var prod *pendingProducer
		if cb.ProducerID >= 0 {
			if cb.ProducerEpoch < 0 || cb.BaseSequence < 0 {
				res.ErrorCode = codeInvalidRecord
				continue
			}
			prk := producerStateKey{cb.ProducerID, cb.TopicID, cb.Partition}
			prod = producers[prk]
			if prod == nil {
				prod = &pendingProducer{st: producerState{epoch: noProducerEpoch}}
				if cur := c.commit.producers[prk]; cur != nil {
					prod.st = *cur
				}
				producers[prk] = prod
			}
			code, dup := prod.st.check(cb)
			if code != 0 {
				res.ErrorCode = code
				continue
			}
			if dup != nil {
				res.BaseOffset = dup.baseOffset
				res.LogStartOffset = pp.st.logStart
				if t.logAppendTime {
					res.LogAppendTime = dup.timestamp
				}
				continue
			}
		}

		base := pp.st.hwm
		last := base + int64(cb.LastOffsetDelta)
		key = appendBatchKey(key[:0], cb.TopicID, cb.Partition, last)
		val = appendBatchValue(val[:0], &batchValue{
			object:          obj.num,
			byteOffset:      cb.ByteOffset,
			byteLength:      cb.ByteLength,
			lastOffsetDelta: cb.LastOffsetDelta,
			maxTimestamp:    ts,
			logAppendTime:   t.logAppendTime,
		})
		w.set(key, val)
		pp.st.hwm = last + 1
		pp.st.noteBatch(base, last, ts, t.logAppendTime)
		pp.changed = true
		pp.batches = append(pp.batches, BatchCoord{
			ObjectKey: req.ObjectKey, ObjectSize: req.ObjectSize,
			ByteOffset: cb.ByteOffset, ByteLength: cb.ByteLength,
			BaseOffset: base, LastOffset: last, MaxTimestamp: ts, LogAppendTime: t.logAppendTime,
		})
		if prod != nil {
			prod.st.record(cb, base, ts, nowMs)
			prod.changed = true
		}
		accepted += int64(cb.ByteLength)
		if t.kvIndexed && len(cb.Keys) > 0 {
			kvs = append(kvs, kvApply{cb.TopicID, cb.Partition, base, cb.Keys})
		}

		res.BaseOffset = base
		res.LogStartOffset = pp.st.logStart
		if t.logAppendTime {
			res.LogAppendTime = nowMs
		}
	}

	for _, pp := range partOrder {
		if pp.changed {
			w.set(partitionKey(pp.topic.id, pp.partition), encodePartition(&pp.st))
		}
	}
	for prk, prod := range producers {
		if prod.changed {
			w.set(producerKey(prk), encodeProducer(&prod.st))
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
		w.set(objectKey(obj.num), encodeObject(obj))
	}
	if isNew {
		w.set(keyNextObject, encodeUint64(obj.num+1))
	}
	b := c.db.NewBatchWithSize(len(w.arena) + 16*len(w.kvs))
	defer b.Close()
	w.apply(b)
	// The key index is written in the same durable batch that assigns the
	// offsets, so it never runs ahead of the log nor misses a record.
	for _, kv := range kvs {
		c.kv.Apply(b, kv.id, kv.partition, kv.base, kvEntries(kv.keys))
	}

	if c.testBeforeCommit != nil {
		if err := c.testBeforeCommit(); err != nil {
			return nil, nil, err
		}
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return nil, nil, fmt.Errorf("pebble commit: %w", err)
	}

	// Durable: install in memory.
	var notices []CommitNotice
	c.mu.Lock()
	for _, pp := range partOrder {
		if pp.changed {
			pp.topic.parts[pp.partition] = pp.st
			notices = append(notices, CommitNotice{TopicID: pp.topic.id, Partition: pp.partition,
				HighWatermark: pp.st.hwm, LogStartOffset: pp.st.logStart, Batches: pp.batches})
		}
	}
	if isNew || accepted > 0 {
		c.installObjectsLocked([]*objectState{obj})
	}
	c.mu.Unlock()
	if isNew {
		c.commit.nextObject = obj.num + 1
	}
	for prk, prod := range producers {
		if prod.changed {
			st := prod.st
			c.commit.producers[prk] = &st
		}
	}
	if accepted == 0 {
		c.log.Warn("object committed with no accepted batch; marked garbage",
			"object", req.ObjectKey, "batches", len(req.Batches))
	}
	return resp, notices, nil
}

// objectForCommitLocked returns a copy of the object record the commit
// will write: the existing one for a known key (a retried commit), else a
// new one. c.commit must be held.
func (c *Coordinator) objectForCommitLocked(req *CommitRequest, nowMs int64) (obj *objectState, isNew bool) {
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
	id        TopicID
	partition int32
	base      int64
	keys      []KeyEntry
}
