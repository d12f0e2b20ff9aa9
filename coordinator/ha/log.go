package ha

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/cockroachdb/pebble"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Header names and values of the log's messages (see the package doc).
const (
	hdrFormat = "Floe-Log"
	hdrDB     = "Floe-Db"
	hdrPart   = "Floe-Part"

	logFormat = "1"

	// dbCoordinator and dbGroups name the database an entry is a batch
	// of; kindLeader and kindSnapshot are the log's own entries.
	dbCoordinator = "c"
	dbGroups      = "g"
	kindLeader    = "L"
	kindSnapshot  = "S"
)

// appliedKey is where each database records the sequence of the last log
// entry applied to it, in the same batch as the entry: family 0xff, which
// neither the coordinator nor the group state uses.
var appliedKey = []byte("\xffha-applied")

// errFenced wraps every append failure: the log has moved on without this
// writer (a new leader appended), or the outcome of an append is unknown.
var errFenced = errors.New("ha: the coordinator log fenced this leader")

// partOverhead is the room left in a message for headers and framing when
// an entry is split into parts.
const partOverhead = 4 << 10

// writer is the leader's side of the log: it appends each batch as one entry
// (split into parts when larger than a NATS message), every message
// expecting the stream's last sequence to be the one before it, so that
// appends of a deposed leader fail once another has appended. Appends are
// pipelined: many are in flight at once, in order on one connection, and
// each batch is applied to Pebble only after its entry is acknowledged and
// every earlier entry applied, so that Pebble on the leader goes through the
// same states, in the same order, as on every standby.
//
// The first failure is sticky: every later append fails with it, and Failed
// is closed, so that the node steps down.
type writer struct {
	js      jetstream.JetStream
	stream  string
	subject string
	maxPart int
	timeout time.Duration

	mu struct {
		sync.Mutex
		last uint64 // the sequence of the last message published
		err  error
	}
	apply struct {
		sync.Mutex
		cond    *sync.Cond
		applied uint64 // entries up to here are applied
		err     error
	}
	failed   chan struct{}
	failOnce sync.Once
}

// newWriter returns a writer appending after sequence last, which every
// entry up to has been applied.
func newWriter(js jetstream.JetStream, stream, subject string, maxPayload int64, last uint64, timeout time.Duration) *writer {
	w := &writer{js: js, stream: stream, subject: subject, maxPart: int(maxPayload) - partOverhead, timeout: timeout, failed: make(chan struct{})}
	w.mu.last = last
	w.apply.applied = last
	w.apply.cond = sync.NewCond(&w.apply.Mutex)
	return w
}

// fail records err as the writer's failure, once.
func (w *writer) fail(err error) {
	w.failOnce.Do(func() {
		err = fmt.Errorf("%w: %w", errFenced, err)
		w.mu.Lock()
		w.mu.err = err
		w.mu.Unlock()
		w.apply.Lock()
		w.apply.err = err
		w.apply.cond.Broadcast()
		w.apply.Unlock()
		close(w.failed)
	})
}

// Failed is closed when an append has failed.
func (w *writer) Failed() <-chan struct{} { return w.failed }

// Err returns the writer's failure, nil while it has none.
func (w *writer) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.mu.err
}

// publish sends entry's parts, returning their futures and the sequences of
// the first and last.
func (w *writer) publish(kind string, entry []byte) (futs []jetstream.PubAckFuture, first, last uint64, err error) {
	w.mu.Lock()
	if w.mu.err != nil {
		err := w.mu.err
		w.mu.Unlock()
		return nil, 0, 0, err
	}
	n := max(1, (len(entry)+w.maxPart-1)/w.maxPart)
	first = w.mu.last + 1
	for i := 0; i < n && err == nil; i++ {
		part := entry[i*w.maxPart : min(len(entry), (i+1)*w.maxPart)]
		m := nats.NewMsg(w.subject)
		m.Header.Set(hdrFormat, logFormat)
		m.Header.Set(hdrDB, kind)
		if n > 1 {
			m.Header.Set(hdrPart, strconv.Itoa(i+1)+"/"+strconv.Itoa(n))
		}
		m.Data = part
		var f jetstream.PubAckFuture
		f, err = w.js.PublishMsgAsync(m, jetstream.WithExpectLastSequence(w.mu.last), jetstream.WithExpectStream(w.stream))
		if err == nil {
			futs = append(futs, f)
			w.mu.last++
		}
	}
	last = w.mu.last
	w.mu.Unlock()
	if err != nil {
		// Parts already sent fail too: each expects its predecessor.
		w.fail(fmt.Errorf("publish: %w", err))
		return nil, 0, 0, w.Err()
	}
	return futs, first, last, nil
}

// await waits for the acknowledgements of futs, the messages first.. in
// order.
func (w *writer) await(futs []jetstream.PubAckFuture, first uint64) error {
	t := time.NewTimer(w.timeout)
	defer t.Stop()
	for i, f := range futs {
		select {
		case ack := <-f.Ok():
			if want := first + uint64(i); ack.Sequence != want {
				err := fmt.Errorf("appended at sequence %d, expected %d", ack.Sequence, want)
				w.fail(err)
				return err
			}
		case err := <-f.Err():
			w.fail(err)
			return err
		case <-w.failed:
			return w.Err()
		case <-t.C:
			err := fmt.Errorf("no acknowledgement in %v", w.timeout)
			w.fail(err)
			return err
		}
	}
	return nil
}

// append appends a log entry of kind without applying anything, returning
// its last sequence once the stream has it and every earlier entry is
// applied.
func (w *writer) append(kind string, entry []byte) (uint64, error) {
	return w.appendThen(kind, entry, nil)
}

// appendThen appends entry and, once it is acknowledged and every earlier
// entry applied, calls apply with its last sequence (in log order, one at a
// time).
func (w *writer) appendThen(kind string, entry []byte, apply func(last uint64) error) (uint64, error) {
	futs, first, last, err := w.publish(kind, entry)
	if err != nil {
		return 0, err
	}
	if err := w.await(futs, first); err != nil {
		return 0, w.Err()
	}
	w.apply.Lock()
	defer w.apply.Unlock()
	for w.apply.applied != first-1 && w.apply.err == nil {
		w.apply.cond.Wait()
	}
	if w.apply.err != nil {
		return 0, w.apply.err
	}
	if apply != nil {
		if err := apply(last); err != nil {
			// The log has the entry but this database does not: it
			// must not serve on.
			w.apply.Unlock()
			w.fail(fmt.Errorf("apply entry %d: %w", last, err))
			w.apply.Lock()
			return 0, err
		}
	}
	w.apply.applied = last
	w.apply.cond.Broadcast()
	return last, nil
}

// commit appends b as an entry of database kind and applies it, recording
// the entry's sequence in the same batch.
func (w *writer) commit(kind string, b *pebble.Batch) error {
	// A copy: the batch is written to below, and its count with it.
	_, err := w.appendThen(kind, bytes.Clone(b.Repr()), func(last uint64) error {
		_ = b.Set(appliedKey, binary.BigEndian.AppendUint64(nil, last), nil)
		return b.Commit(pebble.NoSync)
	})
	return err
}

// applied returns the sequence every entry up to which is applied.
func (w *writer) applied() uint64 {
	w.apply.Lock()
	defer w.apply.Unlock()
	return w.apply.applied
}

// stamp records seq as db's applied sequence.
func stamp(db *pebble.DB, seq uint64) error {
	if err := db.Set(appliedKey, binary.BigEndian.AppendUint64(nil, seq), pebble.NoSync); err != nil {
		return fmt.Errorf("ha: stamp applied sequence: %w", err)
	}
	return nil
}

// dbLog is the writer as one database's coordinator.Log (and groups.Log).
type dbLog struct {
	w    *writer
	kind string
}

// Commit appends b to the log and applies it; see coordinator.Log.
func (l dbLog) Commit(b *pebble.Batch) error { return l.w.commit(l.kind, b) }

// readApplied returns db's applied sequence, 0 when it has none.
func readApplied(db *pebble.DB) (uint64, bool, error) {
	v, closer, err := db.Get(appliedKey)
	if errors.Is(err, pebble.ErrNotFound) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("ha: read applied sequence: %w", err)
	}
	defer closer.Close()
	if len(v) != 8 {
		return 0, false, fmt.Errorf("ha: applied sequence of %d bytes", len(v))
	}
	return binary.BigEndian.Uint64(v), true, nil
}
