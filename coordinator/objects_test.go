package coordinator

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/pebble"

	"github.com/floe-io/floe/coordapi"
)

// heldLog is a Log that applies each batch at once and, while hold is set,
// then waits for release before it returns: a log slow to acknowledge, as
// JetStream can be, with Pebble already holding the change.
type heldLog struct {
	hold    atomic.Bool
	applied chan struct{}
	release chan struct{}
}

func (l *heldLog) Commit(b *pebble.Batch) error {
	if err := b.Commit(pebble.NoSync); err != nil {
		return err
	}
	if l.hold.Load() {
		l.applied <- struct{}{}
		<-l.release
	}
	return nil
}

func (l *heldLog) Start(b *pebble.Batch) (func() error, error) {
	return noWait, l.Commit(b)
}

// TestReadersFindNewObjectsBeforeTheLogAcks: a consolidation swap's rows
// are in Pebble while the log has yet to acknowledge them, and a
// FindBatches meanwhile reads them: it must find their new segment object
// (it answered "references unknown object" while objects went into memory
// only after the write returned, a /kv 500 seen in e2e TestCompaction).
func TestReadersFindNewObjectsBeforeTheLogAcks(t *testing.T) {
	log := &heldLog{applied: make(chan struct{}), release: make(chan struct{})}
	e := newEnv(t, func(o *Options) { o.TierInterval, o.Log = -1, log })
	tp := e.topic("t", 1, map[string]string{"retention.ms": "-1"})
	e.commit("w1", plain(tp.ID, 0, 0), plain(tp.ID, 0, 1))
	e.commit("w2", plain(tp.ID, 0, 2))
	ctx := context.Background()
	job, n := e.claimConsolidation()
	log.hold.Store(true)
	done := make(chan error, 1)
	go func() {
		done <- e.c.CompleteTierJob(ctx, coordapi.CompleteTierJobRequest{
			JobID: job.ID, TopicID: job.TopicID, Partition: job.Partition, BaseOffset: job.BaseOffset, LastOffset: job.LastOffset,
			ObjectKey: "seg1", ObjectSize: n + 1000, DataLength: n,
		})
	}()
	<-log.applied // the swap is in Pebble; the write has not returned
	resp, err := e.c.FindBatches(ctx, coordapi.FindBatchesRequest{TopicID: tp.ID, Partition: 0, Offset: 0, MaxBytes: 1 << 20})
	log.hold.Store(false)
	close(log.release)
	if err != nil {
		t.Fatalf("FindBatches during the swap's write: %v", err)
	}
	if len(resp.Batches) == 0 || resp.Batches[0].ObjectKey != "seg1" || !resp.Batches[0].Segment {
		t.Fatalf("FindBatches during the swap's write answered %+v, want the segment seg1 first", resp.Batches)
	}
	if err := <-done; err != nil {
		t.Fatalf("CompleteTierJob: %v", err)
	}
}
