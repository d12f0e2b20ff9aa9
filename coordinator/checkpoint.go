package coordinator

import (
	"bytes"
	"fmt"

	"github.com/cockroachdb/pebble"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/coordinator/layout"
)

// Checkpoints. A commit writes batch runs and its object only: a
// partition's high watermark, max timestamp and producer states changed
// by a commit are in the run it appended (package layout). A partition's record
// ('p') and its producer records ('r') are a checkpoint of the partition as
// of the record's high watermark; they are written when the partition is
// created, when DeleteRecords moves its log start, when ExpireProducers
// drops a producer state changed since the checkpoint, and by the commit
// that appends a partition's checkpointRuns-th to (2×checkpointRuns-1)-th
// run since its last checkpoint. So at Open a partition's state is its
// checkpoint with the few runs from its record's high watermark on
// replayed on top (replayRuns): each run whose last offset is at or above
// that high watermark was written after the checkpoint.

// checkpointRuns is the fewest runs a partition appends between two
// checkpoints written by commits.
const checkpointRuns = 32

// partLog is what a partition appended since its checkpoint; c.commit
// guards it.
type partLog struct {
	// runs is how many runs were appended.
	runs int
	// dirty are the producers whose state on the partition changed, each
	// once: their producerState.dirty is set.
	dirty []int64
}

// checkpointDue reports whether the commit appending a partition's runs-th
// run since its checkpoint writes a checkpoint. The threshold is spread
// over [checkpointRuns, 2×checkpointRuns) by partition, so that partitions
// written by the same commits do not all checkpoint in the same one.
func checkpointDue(pk partKey, runs int) bool {
	h := uint32(2166136261) // FNV-1a
	for _, b := range pk.topic {
		h = (h ^ uint32(b)) * 16777619
	}
	h = (h ^ uint32(pk.partition)) * 16777619
	return runs >= checkpointRuns+int(h%checkpointRuns)
}

// checkpointLocked adds to b a checkpoint of partition pk whose state is
// st: its record and the records of its producer states changed since the
// last checkpoint, except those expire drops (which the caller deletes).
// After b commits the caller calls checkpointedLocked. c.commit must be
// held.
func (c *Coordinator) checkpointLocked(b *pebble.Batch, pk partKey, st *partState, expire func(producerStateKey, *producerState) bool) {
	_ = b.Set(layout.PartitionKey(pk.topic, pk.partition), st.encode(), nil)
	if pl := c.commit.logs[pk]; pl != nil {
		for _, id := range pl.dirty {
			prk := producerStateKey{id, pk.topic, pk.partition}
			if ps := c.commit.producers[prk]; ps != nil && !(expire != nil && expire(prk, ps)) {
				_ = b.Set(layout.ProducerKey(prk.producerID, prk.topic, prk.partition), layout.EncodeProducer(&ps.Producer), nil)
			}
		}
	}
}

// checkpointedLocked records that partition pk's checkpoint committed.
// c.commit must be held.
func (c *Coordinator) checkpointedLocked(pk partKey) {
	pl := c.commit.logs[pk]
	if pl == nil {
		return
	}
	for _, id := range pl.dirty {
		if ps := c.commit.producers[producerStateKey{id, pk.topic, pk.partition}]; ps != nil {
			ps.dirty = false
		}
	}
	delete(c.commit.logs, pk)
}

// logLocked returns pk's log, making it if needed. c.commit must be held.
func (c *Coordinator) logLocked(pk partKey) *partLog {
	pl := c.commit.logs[pk]
	if pl == nil {
		pl = &partLog{}
		c.commit.logs[pk] = pl
	}
	return pl
}

// noteDirtyLocked records that producer id's state on pk changed in a run,
// for the first time since pk's checkpoint. c.commit must be held.
func (c *Coordinator) noteDirtyLocked(pk partKey, id int64) {
	pl := c.logLocked(pk)
	pl.dirty = append(pl.dirty, id)
}

// replayRuns applies to each partition the runs appended since its
// checkpoint: its high watermark and max timestamp become those of its
// last run, and the producer states in the runs replace the checkpointed
// ones, in order. It runs from load, after partitions and producer states
// are loaded.
func (c *Coordinator) replayRuns() error {
	lower, upper := layout.FamilyBounds(layout.PrefixBatch)
	it, err := c.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return fmt.Errorf("coordinator: new iterator: %w", err)
	}
	defer it.Close()
	var run []coordapi.BatchCoord
	for _, t := range c.mu.topicsByID {
		for p := range t.parts {
			pk := partKey{t.id, int32(p)}
			st := &t.parts[p]
			_, pupper := layout.BatchPartitionBounds(t.id, int32(p))
			for valid := it.SeekGE(layout.BatchKey(t.id, int32(p), st.hwm)); valid && bytes.Compare(it.Key(), pupper) < 0; valid = it.Next() {
				last, err := layout.DecodeBatchKey(it.Key())
				if err != nil {
					return err
				}
				v, err := it.ValueAndErr()
				if err != nil {
					return fmt.Errorf("coordinator: read %x: %w", it.Key(), err)
				}
				var (
					h     layout.RunHeader
					prods []byte
				)
				if h, run, prods, err = layout.DecodeBatchRun(last, v, run[:0]); err != nil {
					return fmt.Errorf("coordinator: batch run %x: %w", it.Key(), err)
				}
				st.hwm = last + 1
				st.metaBytes += int64(len(it.Key()) + len(v))
				for _, bc := range run {
					st.bytes += int64(bc.ByteLength)
				}
				st.maxTimestamp, st.maxTimestampOffset, st.maxTimestampLast = h.MaxTimestamp, h.MaxTimestampOffset, h.MaxTimestampLast
				pl := c.logLocked(pk)
				pl.runs++
				err = layout.DecodeRunProducers(prods, func(id int64, ps layout.Producer) {
					prk := producerStateKey{id, t.id, int32(p)}
					cur := c.commit.producers[prk]
					if cur == nil {
						cur = new(producerState)
						c.commit.producers[prk] = cur
					}
					if !cur.dirty {
						pl.dirty = append(pl.dirty, id)
					}
					*cur = producerState{Producer: ps, dirty: true}
				})
				if err != nil {
					return fmt.Errorf("coordinator: batch run %x: %w", it.Key(), err)
				}
			}
		}
	}
	if err := it.Error(); err != nil {
		return fmt.Errorf("coordinator: iterate batch runs: %w", err)
	}
	return nil
}
