package kvindex

import (
	"context"
	"errors"
	"fmt"
	"iter"

	"github.com/cockroachdb/pebble"

	"github.com/floe-io/floe/record"
)

// ErrRebuildAborted reports that a topic's rebuild marker was not there when Rebuild
// started or went away while it ran: the topic was deleted, its index turned off
// (DropTopic), or another Rebuild finished first. Nothing is left to do.
var ErrRebuildAborted = errors.New("kvindex: rebuild aborted: topic not marked for rebuild")

// rebuildFlushBytes is the Pebble batch size at which Rebuild commits what it has
// gathered, bounding its memory. A variable so that tests can make it small.
var rebuildFlushBytes = 4 << 20

// LogBatch is one committed record batch as a LogSource yields it.
type LogBatch struct {
	// Data is the whole batch, as stored. It is only read, and only until the
	// iteration moves on, so a source may reuse its buffer.
	Data []byte
	// BaseOffset is the offset of the batch's first record (the stored bytes may carry
	// another value).
	BaseOffset int64
}

// LogSource is the log Rebuild reads, implemented over the coordinator's batch
// coordinates and the object store (the broker's fetch path, or a command-line tool).
type LogSource interface {
	// HighWatermark returns the partition's current high watermark. It must not miss
	// a batch whose commit, and so whose Apply entries, is already written: the
	// coordinator, which installs a commit's new high watermark in memory only after the
	// Pebble write, reads it under the lock that serializes commits. Rebuild's
	// correctness rests on this (see Rebuild).
	HighWatermark(ctx context.Context, topicID [16]byte, partition int32) (int64, error)
	// Batches yields, in offset order, every committed batch of the partition holding
	// offsets at or after from, starting from the log start when from is below it, and
	// stops at the high watermark as of some moment during the call. An error ends the
	// iteration.
	Batches(ctx context.Context, topicID [16]byte, partition int32, from int64) iter.Seq2[LogBatch, error]
}

// TxnLog is what a LogSource with transactions also tells Rebuild: whether
// a transactional batch's records are hidden (its transaction aborted, or
// has not committed yet), so that the index, like a read_committed
// consumer, never takes them.
type TxnLog interface {
	HiddenTxnBatch(topicID [16]byte, partition int32, producerID, offset int64) bool
}

// Rebuild builds topicID's index from its log over its first partitions partitions,
// and marks the topic ready when done. The topic must have been marked not ready with
// a committed SetReady(b, topicID, false), in the same batch as the change that turns
// its index on; Rebuild returns ErrRebuildAborted otherwise, or when the mark disappears
// while it runs. A Rebuild interrupted by a crash leaves the mark: run it again.
//
// Rebuild may run while the coordinator keeps committing (and Applying) new batches:
// it first clears the topic's entries, then replays every batch from the log start up
// to the high watermark, partition by partition, in offset order, and finishes a
// partition only when the high watermark read after its last write is not past what it
// replayed. A replayed entry may briefly overwrite a newer one Apply wrote; the replay
// rewrites the newer one later, and the topic answers 503 meanwhile. Any batch committed
// after that last high watermark read was Applied after Rebuild's last write, so the
// result is exact provided every batch committed after the mark carries its Apply
// entries and src.HighWatermark never misses a written commit.
//
// Entries are written with pebble.NoSync, in batches of a few MiB; the final ready mark
// is synced, which syncs them too. Rebuild honours ctx between batches. The caller runs
// it on its own goroutine and must not run two for one topic at once. To delete the
// topic or turn its index off meanwhile, cancel ctx and wait for Rebuild to return
// before committing DropTopic: the mark is checked before each write, but not
// atomically with it, so a DropTopic racing a write could leave stray entries under the
// dropped topic id.
func Rebuild(ctx context.Context, ix *Index, topicID [16]byte, partitions int32, src LogSource) error {
	marked, err := ix.rebuilding(topicID)
	if err != nil {
		return err
	}
	if !marked {
		return ErrRebuildAborted
	}
	rb := &rebuilder{ix: ix, topic: topicID, src: src, b: ix.db.NewBatch()}
	defer func() { rb.b.Close() }()

	lower, upper := ix.entryBounds(topicID)
	if err := rb.b.DeleteRange(lower, upper, nil); err != nil {
		return fmt.Errorf("kvindex: rebuild: %w", err)
	}
	if err := rb.flush(); err != nil {
		return err
	}
	for p := range partitions {
		if err := rb.partition(ctx, p); err != nil {
			return fmt.Errorf("kvindex: rebuild partition %d: %w", p, err)
		}
	}
	ix.SetReady(rb.b, topicID, true)
	return rb.commit(pebble.Sync)
}

// rebuilder is one Rebuild's state.
type rebuilder struct {
	ix    *Index
	topic [16]byte
	src   LogSource
	b     *pebble.Batch // entries not committed yet
	key   []byte        // scratch entry key
}

// partition replays partition p until it has caught up with the high watermark.
func (rb *rebuilder) partition(ctx context.Context, p int32) error {
	hwm, err := rb.src.HighWatermark(ctx, rb.topic, p)
	if err != nil {
		return err
	}
	var next int64 // every offset below next has been replayed
	for next < hwm {
		progressed := false
		for lb, err := range rb.src.Batches(ctx, rb.topic, p, next) {
			if err != nil {
				return err
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			end, err := rb.batch(p, lb)
			if err != nil {
				return err
			}
			if end > next {
				next, progressed = end, true
			}
			if rb.b.Len() >= rebuildFlushBytes {
				if err := rb.flush(); err != nil {
					return err
				}
			}
		}
		if !progressed {
			// Batches started after hwm was read and yielded nothing new, so whatever
			// lay below hwm has been deleted since: nothing to index there.
			next = max(next, hwm)
		}
		// Write before reading the high watermark: a batch committed after this read
		// carries its own Apply entries, which no replay write can follow.
		if err := rb.flush(); err != nil {
			return err
		}
		if hwm, err = rb.src.HighWatermark(ctx, rb.topic, p); err != nil {
			return err
		}
	}
	return nil
}

// batch adds the entries of one log batch of partition p to rb.b and returns the offset
// after the batch's last.
func (rb *rebuilder) batch(p int32, lb LogBatch) (end int64, err error) {
	h, err := record.ParseHeader(lb.Data)
	if err != nil {
		return 0, fmt.Errorf("batch at %d: %w", lb.BaseOffset, err)
	}
	end = lb.BaseOffset + int64(h.LastOffsetDelta) + 1
	if h.Control() {
		return end, nil
	}
	if tl, ok := rb.src.(TxnLog); ok && h.Transactional() && tl.HiddenTxnBatch(rb.topic, p, h.ProducerID, lb.BaseOffset) {
		return end, nil // an aborted or still open transaction's records
	}
	data := lb.Data
	if size := h.Size(); size < len(data) {
		data = data[:size]
	}
	err = record.Records(data, func(r *record.Record) error {
		if r.Key == nil {
			return nil
		}
		rb.key = rb.ix.appendKey(rb.key[:0], rb.topic, p, r.Key)
		return rb.ix.put(rb.b, rb.key, lb.BaseOffset+int64(r.OffsetDelta), r.Value == nil)
	})
	if err != nil {
		return 0, fmt.Errorf("batch at %d: %w", lb.BaseOffset, err)
	}
	return end, nil
}

// flush commits rb.b, unsynced, if the topic is still marked for rebuild.
func (rb *rebuilder) flush() error {
	if rb.b.Empty() {
		return nil
	}
	return rb.commit(pebble.NoSync)
}

// commit commits rb.b with opts if the topic is still marked for rebuild, and starts a
// new batch. The check and the commit are not atomic: a DropTopic committed between them
// would leave this batch's entries behind, hence Rebuild's advice to stop it first.
func (rb *rebuilder) commit(opts *pebble.WriteOptions) error {
	marked, err := rb.ix.rebuilding(rb.topic)
	if err != nil {
		return err
	}
	if !marked {
		return ErrRebuildAborted
	}
	if err := rb.ix.commit(rb.b, opts); err != nil {
		return fmt.Errorf("kvindex: rebuild commit: %w", err)
	}
	rb.b.Reset()
	return nil
}
