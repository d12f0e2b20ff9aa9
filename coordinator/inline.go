package coordinator

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/cockroachdb/pebble"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/coordinator/layout"
)

// Inline objects (CommitRequest.Inline). On a local directory store a
// produce paid two device round trips one after the other: the object's
// Put (its file's fsync, then its directory's) and the commit's synced
// Pebble write. A small object can ride in its commit instead, for one
// round trip in all:
//
//	broker ──commit + bytes──► coordinator: Stage(key, bytes)       readable (memory), not durable
//	                                        Pebble batch, synced:   the commit, and
//	                                                                's' object-key -> bytes
//	                            ◄── answer
//	                           flusher:     Persist(keys of 1s)     durable, one syncfs a group
//	                                        delete their 's' rows
//
// The staged row is written in the batch that commits the object, so a
// committed inline object is durable once its commit is: after a crash
// (which loses the store's staged copies) Open writes every object still
// with a row before it reads or serves anything, whatever its options (see
// flushStagedAtOpen). Staging comes before the commit, so a committed
// object is always readable; one staged by a commit that then failed is an
// orphan, collected as any other (its row, if the failure came after the
// write, waits for the next Open). The rows are few (about
// maxInlinePending), and a flushed row's delete need not be synced: one
// that comes back after a crash is written again, the same bytes, or
// becomes an orphan if its object was deleted meanwhile.
//
// Objects are persisted in groups (inlineFlushBatch, inlineFlushDelay), so
// that the device sees a few syncs a second beside the commits' own rather
// than two more per commit, which the commits queued behind.
//
// Only a coordinator that writes to the brokers' own store, in their
// process, can take inline objects: the embedded default, which shares
// the node's directory store (Options.Inline).

const (
	// maxInlinePending bounds the inline objects staged and not yet persisted
	// (at most 256 KiB each, coordapi.MaxInlineObject): commits wait for a
	// flush beyond it, so a store that falls behind slows producers rather
	// than filling memory and Pebble.
	maxInlinePending = 256
	// Staged objects are persisted in groups, of inlineFlushBatch objects
	// or those of the last inlineFlushDelay, with one file-system sync a
	// group: the device then sees a few syncs a second beside the commits'
	// own, where a Put each (two fsyncs) made the commits queue behind
	// them.
	inlineFlushBatch = 128
	inlineFlushDelay = time.Second
)

// InlineStore is the object store inline objects go to: the brokers' own.
// Stage makes an object readable at once but not durable (it keeps data);
// Persist makes staged objects durable, all together. objectstore.Dir
// implements it.
type InlineStore interface {
	Stage(ctx context.Context, key string, data []byte) error
	Persist(ctx context.Context, keys []string) error
}

// inlineFlush persists committed inline objects in the background.
type inlineFlush struct {
	store InlineStore
	// slots holds a token per inline object staged and not yet persisted.
	slots chan struct{}
	// queue holds the keys of committed inline objects, for the flusher.
	queue chan string
	// stopping is closed when Close begins: commits waiting for a slot
	// give up, and a flush retrying a failing store stops. stop, closed
	// once no commit is in flight, asks the flusher to persist what it
	// holds and return.
	stopping chan struct{}
	stop     chan struct{}
	done     chan struct{}
}

// flushStagedAtOpen writes every object still staged (a crash came
// between its commit and its flush, or the last flush failed) and drops
// their rows. It runs in Open, before the coordinator is shared or reads an
// object, whatever the options: with Options.Inline it stages and persists
// them; else it puts them to Options.Markers, the cluster's object store
// (a node restarted with another store or coordinator wiring, a tool
// opening the state); with neither it refuses to open, as serving batches
// whose bytes are nowhere else would lose them.
func (c *Coordinator) flushStagedAtOpen(ctx context.Context) error {
	lower, upper := layout.FamilyBounds(layout.PrefixStaged)
	it, err := c.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return fmt.Errorf("coordinator: read staged objects: %w", err)
	}
	b := c.db.NewBatch()
	defer b.Close()
	var keys []string
	for it.First(); it.Valid(); it.Next() {
		key := string(it.Key()[1:])
		switch {
		case c.opts.Inline != nil:
			err = c.opts.Inline.Stage(ctx, key, slices.Clone(it.Value()))
		case c.opts.Markers != nil:
			err = c.opts.Markers.Put(ctx, key, it.Value())
		default:
			err = errors.New("no object store to write it to (Options.Inline or Options.Markers): open with the node's store")
		}
		if err != nil {
			_ = it.Close()
			return fmt.Errorf("coordinator: object %s committed inline: %w", key, err)
		}
		_ = b.Delete(it.Key(), nil)
		keys = append(keys, key)
	}
	if err := it.Close(); err != nil {
		return fmt.Errorf("coordinator: read staged objects: %w", err)
	}
	if len(keys) == 0 {
		return nil
	}
	if c.opts.Inline != nil {
		if err := c.opts.Inline.Persist(ctx, keys); err != nil {
			return fmt.Errorf("coordinator: persist %d objects committed inline: %w", len(keys), err)
		}
	}
	if err := c.write(b, pebble.Sync); err != nil {
		return fmt.Errorf("coordinator: drop staged objects: %w", err)
	}
	c.log.Info("objects committed inline written after a restart", "objects", len(keys))
	return nil
}

// startInline starts the flusher.
func (c *Coordinator) startInline() {
	f := &inlineFlush{
		store:    c.opts.Inline,
		slots:    make(chan struct{}, maxInlinePending),
		queue:    make(chan string, maxInlinePending),
		stopping: make(chan struct{}),
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
	}
	c.inline = f
	go func() {
		defer close(f.done)
		c.runInline()
	}()
}

// runInline gathers staged objects into groups and persists each group.
func (c *Coordinator) runInline() {
	f := c.inline
	var (
		group []string
		due   <-chan time.Time
	)
	for {
		select {
		case o := <-f.queue:
			group = append(group, o)
			if len(group) == 1 {
				due = time.After(inlineFlushDelay)
			}
			if len(group) < inlineFlushBatch {
				continue
			}
		case <-due:
		case <-f.stop:
			// The last group, with what is queued: one attempt (what
			// fails is persisted by the next Open).
			for len(f.queue) > 0 {
				group = append(group, <-f.queue)
			}
			if len(group) > 0 {
				c.flushStaged(group, false)
			}
			return
		}
		if !c.flushStaged(group, true) {
			return
		}
		group, due = group[:0], nil
	}
}

// beginStopInline makes commits waiting for a flush slot give up, and a
// flush retrying a failing store stop, so that Close does not wait for
// them.
func (c *Coordinator) beginStopInline() {
	if c.inline == nil {
		return
	}
	select {
	case <-c.inline.stopping:
	default:
		close(c.inline.stopping)
	}
}

// stopInline persists the staged objects and stops the flusher, once no
// commit is in flight. Objects it could not persist keep their rows and are
// persisted by the next Open.
func (c *Coordinator) stopInline() {
	if c.inline == nil {
		return
	}
	close(c.inline.stop)
	<-c.inline.done
}

// flushStaged persists a group of staged objects, retrying (if retry)
// until they are durable or Close begins, then drops their rows in one
// write and gives back their slots. It returns false when it gave up: the
// next Open persists the group, and its slots go with the flusher.
func (c *Coordinator) flushStaged(group []string, retry bool) bool {
	f := c.inline
	for backoff := 50 * time.Millisecond; ; backoff = min(2*backoff, 5*time.Second) {
		err := f.store.Persist(context.Background(), group)
		if err == nil {
			break
		}
		c.log.Warn("persisting staged objects failed", "objects", len(group), "retry", retry, "err", err)
		if !retry {
			return false
		}
		select {
		case <-time.After(backoff):
		case <-f.stopping:
			return false
		}
	}
	b := c.db.NewBatch()
	defer b.Close()
	for _, key := range group {
		_ = b.Delete(layout.StagedKey(key), nil)
	}
	if err := c.write(b, pebble.NoSync); err != nil && !errors.Is(err, coordapi.ErrClosed) {
		// The rows stay; the next Open persists the objects again.
		c.log.Warn("drop of staged objects' rows failed", "objects", len(group), "err", err)
	}
	for range group {
		<-f.slots
	}
	return true
}

// stageInline takes a flush slot (waiting while maxInlinePending objects
// are unflushed) and stages the object. On success
// the caller owns the slot: it hands it to the flusher with the object
// (queueStaged), or gives it back (releaseInline).
func (c *Coordinator) stageInline(ctx context.Context, req *coordapi.CommitRequest) error {
	f := c.inline
	if f == nil {
		return coordapi.Errorf(kerr.InvalidRequest, "this coordinator does not take inline objects")
	}
	select {
	case f.slots <- struct{}{}:
	case <-f.stopping:
		return coordapi.ErrClosed
	case <-ctx.Done():
		return fmt.Errorf("wait for a staged object's flush: %w", ctx.Err())
	}
	if err := f.store.Stage(ctx, req.ObjectKey, req.Inline); err != nil {
		<-f.slots
		return fmt.Errorf("stage object: %w", coordapi.Errorf(kerr.KafkaStorageError, "%v", err))
	}
	return nil
}

// queueStaged hands a committed inline object and its slot to the
// flusher. The queue holds as many as there are slots: it never blocks.
func (c *Coordinator) queueStaged(req *coordapi.CommitRequest) {
	c.inline.queue <- req.ObjectKey
}

// releaseInline gives back the slot of an inline commit that failed. A row
// it may have written is put by the next Open.
func (c *Coordinator) releaseInline() { <-c.inline.slots }
