package inline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-io/floe/coordapi"
)

const (
	// MaxPending bounds the inline objects staged and not yet persisted
	// (at most 256 KiB each, coordapi.MaxInlineObject): commits wait for a
	// flush beyond it, so a store that falls behind slows producers rather
	// than filling memory and Pebble.
	MaxPending = 256
	// Staged objects are persisted in groups, of flushBatch objects or
	// those of the last flushDelay, with one file-system sync a group:
	// the device then sees a few syncs a second beside the commits' own,
	// where a Put each (two fsyncs) made the commits queue behind them.
	flushBatch = 128
	flushDelay = time.Second
)

// Store is the object store inline objects go to: the brokers' own.
// Stage makes an object readable at once but not durable (it keeps data);
// Persist makes staged objects durable, all together. objectstore.Dir
// implements it.
type Store interface {
	Stage(ctx context.Context, key string, data []byte) error
	Persist(ctx context.Context, keys []string) error
}

// Putter is the cluster's object store, where FlushAtOpen writes the
// staged objects of a coordinator opened without an inline Store.
type Putter interface {
	Put(ctx context.Context, key string, data []byte) error
}

// Rows are the staged rows of the coordinator's state (the staged family,
// package layout): the coordinator implements it.
type Rows interface {
	// Scan calls fn with every staged row, its object key and bytes (valid
	// during the call only), in key order.
	Scan(fn func(key string, data []byte) error) error
	// Drop deletes the rows of keys in one write, synced if sync.
	Drop(keys []string, sync bool) error
}

// FlushAtOpen writes every object still staged (a crash came between its
// commit and its flush, or the last flush failed) and drops their rows. A
// coordinator's Open runs it before the coordinator is shared or reads an
// object, whatever its options: with an inline store it stages and
// persists them; else it puts them to markers, the cluster's object store
// (a node restarted with another store or coordinator wiring, a tool
// opening the state); with neither it refuses, as serving batches whose
// bytes are nowhere else would lose them.
func FlushAtOpen(ctx context.Context, rows Rows, store Store, markers Putter, log *slog.Logger) error {
	var (
		keys   []string
		failed error // the first object that could not be written
	)
	err := rows.Scan(func(key string, data []byte) error {
		var err error
		switch {
		case store != nil:
			err = store.Stage(ctx, key, slices.Clone(data))
		case markers != nil:
			err = markers.Put(ctx, key, data)
		default:
			err = errors.New("no object store to write it to (Options.Inline or Options.Markers): open with the node's store")
		}
		if err != nil {
			failed = fmt.Errorf("coordinator: object %s committed inline: %w", key, err)
			return failed
		}
		keys = append(keys, key)
		return nil
	})
	switch {
	case failed != nil:
		return failed
	case err != nil:
		return fmt.Errorf("coordinator: read staged objects: %w", err)
	case len(keys) == 0:
		return nil
	}
	if store != nil {
		if err := store.Persist(ctx, keys); err != nil {
			return fmt.Errorf("coordinator: persist %d objects committed inline: %w", len(keys), err)
		}
	}
	if err := rows.Drop(keys, true); err != nil {
		return fmt.Errorf("coordinator: drop staged objects: %w", err)
	}
	log.Info("objects committed inline written after a restart", "objects", len(keys))
	return nil
}

// Flusher persists committed inline objects in the background.
type Flusher struct {
	store Store
	rows  Rows
	log   *slog.Logger
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

// Start starts the flusher of store, whose objects' rows are rows.
func Start(store Store, rows Rows, log *slog.Logger) *Flusher {
	f := &Flusher{
		store:    store,
		rows:     rows,
		log:      log,
		slots:    make(chan struct{}, MaxPending),
		queue:    make(chan string, MaxPending),
		stopping: make(chan struct{}),
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
	}
	go func() {
		defer close(f.done)
		f.run()
	}()
	return f
}

// run gathers staged objects into groups and persists each group.
func (f *Flusher) run() {
	var (
		group []string
		due   <-chan time.Time
	)
	for {
		select {
		case o := <-f.queue:
			group = append(group, o)
			if len(group) == 1 {
				due = time.After(flushDelay)
			}
			if len(group) < flushBatch {
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
				f.flush(group, false)
			}
			return
		}
		if !f.flush(group, true) {
			return
		}
		group, due = group[:0], nil
	}
}

// BeginStop makes commits waiting for a flush slot give up, and a flush
// retrying a failing store stop, so that Close does not wait for them.
func (f *Flusher) BeginStop() {
	select {
	case <-f.stopping:
	default:
		close(f.stopping)
	}
}

// Stop persists the staged objects and stops the flusher; call it once no
// commit is in flight. Objects it could not persist keep their rows and
// are persisted by the next Open.
func (f *Flusher) Stop() {
	close(f.stop)
	<-f.done
}

// flush persists a group of staged objects, retrying (if retry) until
// they are durable or Close begins, then drops their rows in one write
// and gives back their slots. It returns false when it gave up: the next
// Open persists the group, and its slots go with the flusher.
func (f *Flusher) flush(group []string, retry bool) bool {
	for backoff := 50 * time.Millisecond; ; backoff = min(2*backoff, 5*time.Second) {
		err := f.store.Persist(context.Background(), group)
		if err == nil {
			break
		}
		f.log.Warn("persisting staged objects failed", "objects", len(group), "retry", retry, "err", err)
		if !retry {
			return false
		}
		select {
		case <-time.After(backoff):
		case <-f.stopping:
			return false
		}
	}
	if err := f.rows.Drop(group, false); err != nil && !errors.Is(err, coordapi.ErrClosed) {
		// The rows stay; the next Open persists the objects again.
		f.log.Warn("drop of staged objects' rows failed", "objects", len(group), "err", err)
	}
	for range group {
		<-f.slots
	}
	return true
}

// Stage takes a flush slot (waiting while MaxPending objects are
// unflushed) and stages the object. On success the caller owns the slot:
// it hands it to the flusher with the object (Queue), or gives it back
// (Release).
func (f *Flusher) Stage(ctx context.Context, key string, data []byte) error {
	select {
	case f.slots <- struct{}{}:
	case <-f.stopping:
		return coordapi.ErrClosed
	case <-ctx.Done():
		return fmt.Errorf("wait for a staged object's flush: %w", ctx.Err())
	}
	if err := f.store.Stage(ctx, key, data); err != nil {
		<-f.slots
		return fmt.Errorf("stage object: %w", coordapi.Errorf(kerr.KafkaStorageError, "%v", err))
	}
	return nil
}

// Queue hands a committed inline object and its slot to the flusher. The
// queue holds as many as there are slots: it never blocks.
func (f *Flusher) Queue(key string) { f.queue <- key }

// Release gives back the slot of an inline commit that failed. A row it
// may have written is put by the next Open.
func (f *Flusher) Release() { <-f.slots }
