package rpc

import (
	"github.com/floe-io/floe/coordapi"
)

// The commit request is the hot path's big message (an 8 MiB object can
// hold thousands of batches), so it is laid out to be small: topic ids go
// in a table, byte offsets as the gap after the previous batch (0 when the
// batches are back to back) and max timestamps as the difference from the
// previous batch's.
//
//	object key (str), object size, broker id,
//	n topic ids × (id(16)),
//	n batches × (topic index, partition, byte offset - previous batch end,
//	             byte length, last offset delta, max timestamp - previous,
//	             producer id, producer epoch, base sequence, flags
//	             (and, when transactional, the transactional id str),
//	             n keys × (key bytes, offset delta, tombstone bool))
//
// flags is a byte: 1 transactional, 2 control (a transaction marker), 4
// the marker commits. Brokers send 0 or 1, as the bool it was before
// markers went between a sharded coordinator's shards; a build that reads
// a bool refuses the other values, and only shards of one build send them.

// A commit batch's flags.
const (
	flagTransactional byte = 1 << iota
	flagControl
	flagCommit
)

// minCommitBatchSize is the smallest encoded batch: eleven one-byte fields.
const minCommitBatchSize = 11

func encCommitReq(e *encoder, r *coordapi.CommitRequest) {
	e.str(r.ObjectKey)
	e.varint(r.ObjectSize)
	e.varint(int64(r.BrokerID))
	topics := map[coordapi.TopicID]uint64{}
	var order []coordapi.TopicID
	for i := range r.Batches {
		id := r.Batches[i].TopicID
		if _, ok := topics[id]; !ok {
			topics[id] = uint64(len(order))
			order = append(order, id)
		}
	}
	e.uvarint(uint64(len(order)))
	for _, id := range order {
		e.id(id)
	}
	e.uvarint(uint64(len(r.Batches)))
	var end, ts int64
	for i := range r.Batches {
		b := &r.Batches[i]
		encCommitBatch(e, b, topics[b.TopicID], end, ts)
		end = b.ByteOffset + int64(b.ByteLength)
		ts = b.MaxTimestamp
	}
}

// encCommitBatch writes one batch; end and ts are the previous batch's end
// and max timestamp (0 for the first).
func encCommitBatch(e *encoder, b *coordapi.CommitBatch, topic uint64, end, ts int64) {
	e.uvarint(topic)
	e.varint(int64(b.Partition))
	e.varint(b.ByteOffset - end)
	e.varint(int64(b.ByteLength))
	e.varint(int64(b.LastOffsetDelta))
	e.varint(b.MaxTimestamp - ts)
	e.varint(b.ProducerID)
	e.varint(int64(b.ProducerEpoch))
	e.varint(int64(b.BaseSequence))
	var flags byte
	if b.Transactional {
		flags |= flagTransactional
	}
	if b.Control {
		flags |= flagControl
	}
	if b.Commit {
		flags |= flagCommit
	}
	e.b = append(e.b, flags)
	if b.Transactional {
		e.str(b.TransactionalID)
	}
	e.uvarint(uint64(len(b.Keys)))
	for _, k := range b.Keys {
		e.bytes(k.Key)
		e.varint(int64(k.OffsetDelta))
		e.bool(k.Tombstone)
	}
}

func decCommitReq(d *decoder) *coordapi.CommitRequest {
	r := &coordapi.CommitRequest{ObjectKey: d.str(), ObjectSize: d.varint(), BrokerID: d.int32()}
	ids := make([]coordapi.TopicID, d.count(16))
	for i := range ids {
		ids[i] = d.id()
	}
	n := d.count(minCommitBatchSize)
	if n == 0 {
		return r
	}
	r.Batches = make([]coordapi.CommitBatch, n)
	var end, ts int64
	for i := range r.Batches {
		t := d.uvarint()
		if t >= uint64(len(ids)) {
			d.fail("batch %d names topic %d of %d", i, t, len(ids))
			break
		}
		// Decode in place: copying a whole batch in would cost a write
		// barrier per batch.
		b := &r.Batches[i]
		b.TopicID = ids[t]
		b.Partition = d.int32()
		b.ByteOffset = end + d.varint()
		b.ByteLength = d.int32()
		b.LastOffsetDelta = d.int32()
		b.MaxTimestamp = ts + d.varint()
		b.ProducerID = d.varint()
		b.ProducerEpoch = d.int16()
		b.BaseSequence = d.int32()
		flags := d.byte()
		if flags&^(flagTransactional|flagControl|flagCommit) != 0 {
			d.fail("batch %d flags %#x", i, flags)
			break
		}
		b.Transactional, b.Control, b.Commit = flags&flagTransactional != 0, flags&flagControl != 0, flags&flagCommit != 0
		if b.Transactional {
			b.TransactionalID = d.str()
		}
		if nk := d.count(3); nk > 0 {
			b.Keys = make([]coordapi.KeyEntry, nk)
			for j := range b.Keys {
				b.Keys[j] = coordapi.KeyEntry{Key: d.bytes(), OffsetDelta: d.int32(), Tombstone: d.bool()}
			}
		}
		end = b.ByteOffset + int64(b.ByteLength)
		ts = b.MaxTimestamp
	}
	return r
}

// commit response: n results × (error code, base offset, log append time,
// log start offset).
func encCommitResp(e *encoder, r *coordapi.CommitResponse) {
	e.uvarint(uint64(len(r.Results)))
	for _, res := range r.Results {
		e.varint(int64(res.ErrorCode))
		e.varint(res.BaseOffset)
		e.varint(res.LogAppendTime)
		e.varint(res.LogStartOffset)
	}
}

func decCommitResp(d *decoder) *coordapi.CommitResponse {
	r := &coordapi.CommitResponse{}
	if n := d.count(4); n > 0 {
		r.Results = make([]coordapi.BatchResult, n)
		for i := range r.Results {
			r.Results[i] = coordapi.BatchResult{ErrorCode: d.int16(), BaseOffset: d.varint(),
				LogAppendTime: d.varint(), LogStartOffset: d.varint()}
		}
	}
	return r
}

// splitCommit cuts a commit request into consecutive requests for the same
// object whose encodings stay within limit bytes each. The coordinator
// treats a commit of an already committed object key as adding batches to
// it, so committing the parts in order commits the whole. Call it only when
// the whole request does not fit.
func splitCommit(r *coordapi.CommitRequest, limit int) []*coordapi.CommitRequest {
	var (
		parts   []*coordapi.CommitRequest
		scratch encoder
		start   int
		seen    = map[coordapi.TopicID]bool{}
		size    = commitOverhead + len(r.ObjectKey)
		end, ts int64
	)
	for i := range r.Batches {
		b := &r.Batches[i]
		scratch.b = scratch.b[:0]
		encCommitBatch(&scratch, b, 0, end, ts)
		bs := len(scratch.b)
		if !seen[b.TopicID] {
			bs += 16
		}
		if i > start && size+bs > limit {
			parts = append(parts, &coordapi.CommitRequest{ObjectKey: r.ObjectKey, ObjectSize: r.ObjectSize,
				BrokerID: r.BrokerID, Batches: r.Batches[start:i]})
			start, size = i, commitOverhead+len(r.ObjectKey)
			clear(seen)
			bs += 16 + 20 // its topic id, and its deltas now count from 0
		}
		seen[b.TopicID] = true
		size += bs
		end, ts = b.ByteOffset+int64(b.ByteLength), b.MaxTimestamp
	}
	return append(parts, &coordapi.CommitRequest{ObjectKey: r.ObjectKey, ObjectSize: r.ObjectSize,
		BrokerID: r.BrokerID, Batches: r.Batches[start:]})
}

// commitOverhead bounds what a commit request adds to its batches and its
// object key: the envelope, object size, broker id and counts.
const commitOverhead = 64
