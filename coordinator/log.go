package coordinator

import (
	"context"
	"fmt"

	"github.com/cockroachdb/pebble"
)

// Log is the replicated log the coordinator's state is a view of: package ha
// appends each batch to a NATS JetStream stream and applies it to Pebble once
// the stream has it, so that standbys applying the same entries hold the same
// state. Every write of the coordinator goes through it (Coordinator.write);
// none needs replication code of its own.
type Log interface {
	// Commit appends b's changes to the log, applies b to the database it
	// was made on, and returns once the log has them. An error means the
	// change may not be in the log: the coordinator has lost its lease or
	// its log and must stop serving (its state is rebuilt from the log).
	Commit(b *pebble.Batch) error
	// Start is Commit without the wait: it appends and applies b, and
	// wait returns once the log has it. Until then nothing derived from b
	// may be answered; the log's owner holds every answer until the log
	// has every change made before it (package ha gates the replies).
	Start(b *pebble.Batch) (wait func() error, err error)
}

// write commits b through the log, or, without one, to Pebble with opts
// (pebble.Sync for every change a client is answered about).
func (c *Coordinator) write(b *pebble.Batch, opts *pebble.WriteOptions) error {
	c.unsettled.Add(1)
	defer c.unsettled.Add(-1)
	if c.opts.Log != nil {
		return c.opts.Log.Commit(b)
	}
	return b.Commit(opts)
}

// writeAsync is write returning before the log has b (Log.Start): call
// wait, without holding locks the next writes need, before answering.
func (c *Coordinator) writeAsync(b *pebble.Batch, opts *pebble.WriteOptions) (wait func() error, err error) {
	if c.opts.Log != nil {
		return c.opts.Log.Start(b)
	}
	return noWait, b.Commit(opts)
}

func noWait() error { return nil }

// set writes one key, synced, through write.
func (c *Coordinator) set(key, value []byte) error {
	b := c.db.NewBatch()
	defer b.Close()
	_ = b.Set(key, value, nil)
	return c.write(b, pebble.Sync)
}

// del deletes one key through write.
func (c *Coordinator) del(key []byte, opts *pebble.WriteOptions) error {
	b := c.db.NewBatch()
	defer b.Close()
	_ = b.Delete(key, nil)
	return c.write(b, opts)
}

// Checkpoint writes a consistent copy of the coordinator's Pebble to dir (a
// new directory), for the snapshots of package ha. It first writes an empty
// batch through the log, so that the copy records a recent log position
// even when nothing changed for a while.
func (c *Coordinator) Checkpoint(dir string) error {
	if err := c.enter(context.Background()); err != nil {
		return err
	}
	defer c.leave()
	b := c.db.NewBatch()
	defer b.Close()
	if err := c.write(b, pebble.NoSync); err != nil {
		return fmt.Errorf("coordinator: checkpoint: %w", err)
	}
	if err := c.db.Checkpoint(dir, pebble.WithFlushedWAL()); err != nil {
		return fmt.Errorf("coordinator: checkpoint: %w", err)
	}
	return nil
}
