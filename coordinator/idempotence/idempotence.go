// Package idempotence decides idempotent producers' batches, following
// Apache Kafka 3.x (ProducerStateManager):
//
//   - State is per (producer id, topic, partition): the producer epoch and the
//     sequence ranges of its last 5 batches with the base offsets they got.
//   - A batch whose epoch equals the state's and whose (base, last) sequence
//     equals one of the 5 is a duplicate: it answers the original base offset
//     with no error and gets no new offsets.
//   - A lower epoch is INVALID_PRODUCER_EPOCH.
//   - A higher epoch must start at sequence 0, else OUT_OF_ORDER_SEQUENCE_NUMBER;
//     it replaces the state.
//   - The same epoch must continue the last batch: base = last + 1, wrapping
//     from MaxInt32 to 0; else OUT_OF_ORDER_SEQUENCE_NUMBER.
//   - A producer with no state here (new, or expired) is accepted at any
//     sequence: Kafka stopped answering UNKNOWN_PRODUCER_ID for this in 2.5
//     (KIP-360), and clients then continue their sequence unharmed.
//
// Batches of one object see each other: the commit works on a copy of the
// state that each accepted batch advances.
//
// It holds no state and takes no locks: the coordinator keeps each
// producer's state (layout.Producer) and calls Check, then Record, under
// its commit lock.
package idempotence

import (
	"math"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/coordinator/layout"
)

// NoEpoch marks a state that has seen no batch.
const NoEpoch int16 = -1

// Kafka error codes Check answers.
var (
	codeInvalidProducerEpoch = kerr.InvalidProducerEpoch.Code
	codeOutOfOrderSequence   = kerr.OutOfOrderSequenceNumber.Code
)

// LastSequence is the sequence of the batch's last record, wrapping like
// Kafka's DefaultRecordBatch.incrementSequence.
func LastSequence(baseSeq, lastOffsetDelta int32) int32 {
	if baseSeq > math.MaxInt32-lastOffsetDelta {
		return lastOffsetDelta - (math.MaxInt32 - baseSeq) - 1
	}
	return baseSeq + lastOffsetDelta
}

// inSequence reports whether next may follow last.
func inSequence(last, next int32) bool {
	return int64(next) == int64(last)+1 || (next == 0 && last == math.MaxInt32)
}

// Check decides a batch of producer state p: an error code, or a
// duplicate (the remembered batch), or neither (append it, then call
// Record).
func Check(p *layout.Producer, cb *coordapi.CommitBatch) (code int16, dup *layout.SeqBatch) {
	lastSeq := LastSequence(cb.BaseSequence, cb.LastOffsetDelta)
	if cb.ProducerEpoch == p.Epoch {
		for i := 0; i < p.N; i++ {
			if b := &p.Batches[i]; b.BaseSeq == cb.BaseSequence && b.LastSeq == lastSeq {
				return 0, b
			}
		}
	}
	if p.Epoch == NoEpoch {
		return 0, nil // unknown producer: any sequence
	}
	switch {
	case cb.ProducerEpoch < p.Epoch:
		return codeInvalidProducerEpoch, nil
	case cb.ProducerEpoch > p.Epoch:
		if cb.BaseSequence != 0 {
			return codeOutOfOrderSequence, nil
		}
	case p.N > 0 && !inSequence(p.Batches[p.N-1].LastSeq, cb.BaseSequence):
		return codeOutOfOrderSequence, nil
	}
	return 0, nil
}

// Record remembers an accepted batch in producer state p.
func Record(p *layout.Producer, cb *coordapi.CommitBatch, baseOffset, timestamp, nowMs int64) {
	if cb.ProducerEpoch != p.Epoch {
		p.Epoch = cb.ProducerEpoch
		p.N, p.Batches = 0, [layout.MaxProducerBatches]layout.SeqBatch{}
	}
	if p.N == layout.MaxProducerBatches {
		copy(p.Batches[:], p.Batches[1:])
		p.N--
	}
	p.Batches[p.N] = layout.SeqBatch{
		BaseSeq:    cb.BaseSequence,
		LastSeq:    LastSequence(cb.BaseSequence, cb.LastOffsetDelta),
		BaseOffset: baseOffset,
		Timestamp:  timestamp,
	}
	p.N++
	p.LastUpdateMs = nowMs
}
