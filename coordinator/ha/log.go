package ha

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
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
	hdrTerm   = "Floe-Term"

	logFormat = "1"

	// dbCoordinator and dbGroups name the database an entry is a batch
	// of; kindLeader and kindSnapshot are the log's own entries.
	dbCoordinator = "c"
	dbGroups      = "g"
	kindLeader    = "L"
	kindSnapshot  = "S"
)

// appliedKey is where each database records the log position it is applied
// up to, in the same batch as the entry: family 0xff, which neither the
// coordinator nor the group state uses. Its value is a position: the
// entry's last sequence, the term of the leader that appended it, and the
// sequence up to which the log had acknowledged every message when the
// entry was applied, 8 bytes each, big-endian.
var appliedKey = []byte("\xffha-applied")

// position is a place in the log: a sequence, the term of the leader that
// appended the message there, and how far the log was known to agree.
type position struct {
	seq, term uint64
	// acked is the sequence up to which every message was in the log
	// when the entry at seq was applied: seq itself on a standby, which
	// applies what the log holds; on a leader, which applies as it
	// appends, the acknowledgements so far. The messages after acked, to
	// seq, are checked against the log when the replica is next opened.
	acked uint64
}

// positionLen is the length of an encoded position.
const positionLen = 24

func (p position) encode() []byte {
	b := binary.BigEndian.AppendUint64(nil, p.seq)
	b = binary.BigEndian.AppendUint64(b, p.term)
	return binary.BigEndian.AppendUint64(b, p.acked)
}

// errFenced wraps every append failure: the log has moved on without this
// writer (a new leader appended), or the outcome of an append is unknown.
var errFenced = errors.New("ha: the coordinator log fenced this leader")

// partOverhead is the room left in a message for headers and framing when
// an entry is split into parts.
const partOverhead = 4 << 10

// pending is a published message awaiting its acknowledgement.
type pending struct {
	fut  jetstream.PubAckFuture
	seq  uint64
	sent time.Time
}

// outgoing is an entry applied in trail mode, waiting for publishLoop: a
// copy, as the batch's buffer is reused once committed.
type outgoing struct {
	kind  string
	first uint64 // the sequence of its first part
	entry []byte
	size  int // of a part
}

// trailQueue bounds the entries applied and not yet handed to the stream in
// trail mode; a commit waits for room beyond it.
const trailQueue = 256

// trailDelay is how long, in trail mode, publishLoop lets an entry wait
// before it publishes it with whatever else was queued meanwhile: at low
// load the publish and the NATS goroutines it wakes then run after the
// commit's answer has gone out instead of beside it, on the same cores
// (issue 11's loadtest, 100 produces a second, one in flight, three runs
// each with the delay behind a scratch switch: p50 1.03-1.11 ms against
// 1.12-1.14 publishing at once and 1.03-1.24 before the log trailed; the
// machine's noise is about as large); under load entries go out together.
const trailDelay = time.Millisecond

// batchHeaderLen is the header of a Pebble batch's Repr: its sequence
// number (8 bytes) and its record count (4 bytes, little-endian), followed
// by the records. Batches of one database are merged into one entry by
// appending the later ones' records and summing the counts (mergeBatch).
const batchHeaderLen = 12

// DefaultInflightMessages is Options.InflightMessages' default.
const DefaultInflightMessages = 1

// writer is the leader's side of the log. It appends each batch as one
// entry (split into parts when larger than a NATS message), every message
// expecting the stream's last sequence to be the one before it, so that
// appends of a deposed leader fail once another has appended.
//
// The batch is applied to Pebble as it is published (or joins the open
// group), in the same critical section, so that Pebble on the leader goes
// through the states of every standby in the same order (a standby applies
// a group at once: the leader's states between a group's batches are its
// own), and appends are pipelined: many are in
// flight on one connection while the next commits are made. Nothing may be
// answered before the log has it, so every reply waits on barrier (the
// rpc server's gate), and every write on the acknowledgement of its own
// entry. If an append fails, the leader's Pebble may hold entries the log
// never got: the writer stops for good (Failed), and the replica is found
// diverged when next opened (its position's term is not the log's) and
// restored from a snapshot and the log.
//
// Under load, database batches are grouped: once inflight messages are
// published and not yet acknowledged, the next batches are applied at once
// as ever but wait, merged into one entry of their database (one Pebble
// batch holding all their records, one message), for an acknowledgement to
// bring the count below inflight; that message is then published. The
// group's sequence is reserved when it opens, so every batch in it knows
// its position (the group's); the gate's barrier covers it. A JetStream
// append costs the servers about the same whatever its size up to a few
// tens of KiB, so a leader under load appends far fewer messages than it
// commits batches, at no cost at low load (nothing waits while fewer than
// inflight messages are out). A batch of another database, one needing
// parts, or one that would take the group past a message's size closes
// the group: it is published first, whatever is in flight.
//
// In trail mode (Options.SyncState: a lone coordinator whose synced Pebble
// is the durable copy), a batch is applied first, synced, and its messages
// are published behind it, in the same order, by publishLoop: a commit
// waits for its fsync, not for the stream, and the log's work (the publish,
// NATS's hand-offs between goroutines) is off its path. The gate then waits
// for the syncs of what was applied (durable), not for the log; appends of
// the log's own entries (a term's fence, a snapshot's mark) still wait for
// their acknowledgement. A leader stopped before the log had its tail
// leaves a state ahead of the log's end, which the next leader resumes
// from (Node's open, SyncState); a graceful stop lets the log catch up
// first.
type writer struct {
	js      jetstream.JetStream
	stream  string
	subject string
	term    uint64
	termHdr string // term, as the messages' Floe-Term header
	timeout time.Duration
	// sync is how the leader's Pebble writes are made: NoSync, as the
	// log is the durable copy, or Sync (Options.SyncState), with trail.
	sync  *pebble.WriteOptions
	trail bool
	// queue feeds publishLoop in trail mode; closed by close.
	queue   chan outgoing
	pubDone chan struct{}

	// inflight is how many messages may await their acknowledgement
	// before batches are grouped; 0: never grouped.
	inflight int
	// grouping is set while a group is open, for collect to check without
	// taking mu.
	grouping atomic.Bool

	mu struct {
		sync.Mutex
		last    uint64 // the sequence of the last message published (queued, in trail mode), or reserved by the open group
		sent    uint64 // the sequence of the last message handed to the stream
		maxPart int
		err     error
		closing bool
		// group is the open group of batches (see writer): kind is their
		// database, seq the sequence reserved for its message, entry the
		// merged batch. open is false when there is none.
		group struct {
			open  bool
			kind  string
			seq   uint64
			entry []byte
		}
	}
	ack struct {
		sync.Mutex
		cond  *sync.Cond
		acked uint64 // every message up to here is in the log
		// durable, in trail mode: every entry up to here is applied and
		// synced.
		durable uint64
		err     error
	}
	// published is mu.last, for barrier to read without waiting for a
	// commit in progress: stored before the entry is applied, so that
	// whatever a reply saw of it is covered.
	published atomic.Uint64
	pending   chan pending
	failed    chan struct{}
	failOnce  sync.Once
	done      chan struct{}
}

// newWriter returns a writer of term appending after sequence last, which
// every entry up to has been applied; it runs until close. syncState makes
// it sync every Pebble write and trail the log behind them (see writer);
// otherwise batches are grouped once inflight messages are unacknowledged
// (0: never).
func newWriter(js jetstream.JetStream, stream, subject string, maxPayload int64, last, term uint64, timeout time.Duration, syncState bool, inflight int) *writer {
	w := &writer{js: js, stream: stream, subject: subject, term: term, termHdr: strconv.FormatUint(term, 10), timeout: timeout, sync: pebble.NoSync,
		inflight: max(inflight, 0), pending: make(chan pending, 1<<16), failed: make(chan struct{}), done: make(chan struct{})}
	w.mu.last, w.mu.sent, w.mu.maxPart = last, last, int(maxPayload)-partOverhead
	w.published.Store(last)
	w.ack.acked, w.ack.durable = last, last
	w.ack.cond = sync.NewCond(&w.ack.Mutex)
	if syncState {
		w.sync, w.trail = pebble.Sync, true
		w.queue, w.pubDone = make(chan outgoing, trailQueue), make(chan struct{})
		go w.publishLoop()
	}
	go w.collect()
	return w
}

// close stops the writer; appends fail from then on. In trail mode the
// entries already applied are published and acknowledged first (within the
// ack timeout), so that a graceful stop leaves the log level with the
// state.
func (w *writer) close() {
	if w.trail {
		w.mu.Lock()
		last := w.mu.last
		if !w.mu.closing {
			w.mu.closing = true
			if w.mu.err == nil {
				w.mu.err = fmt.Errorf("%w: ha: the leader stopped", errFenced)
			}
			close(w.queue)
		}
		w.mu.Unlock()
		t := time.AfterFunc(w.timeout, func() {
			w.fail(fmt.Errorf("the log did not have the last entries (to %d) %v after the leader stopped", last, w.timeout))
		})
		_ = w.waitAcked(last)
		t.Stop()
		<-w.pubDone
	}
	w.fail(errors.New("ha: the leader stopped"))
	<-w.done
}

// publishLoop publishes, in trail mode, the entries start applied, in
// order; a message the stream does not take fails the writer.
func (w *writer) publishLoop() {
	defer close(w.pubDone)
	for out := range w.queue {
		time.Sleep(trailDelay)
		for more := true; more; {
			if !w.publishOut(out) {
				return
			}
			select {
			case out, more = <-w.queue:
			default:
				more = false
			}
		}
	}
}

// publishOut publishes out's parts, and reports false once the writer has
// failed.
func (w *writer) publishOut(out outgoing) bool {
	n := parts(len(out.entry), out.size)
	for i := range n {
		seq := out.first + uint64(i)
		f, err := w.publish(out.kind, part(out.entry, out.size, i), i, n, seq-1)
		if err != nil {
			w.fail(err)
			return false
		}
		select {
		case w.pending <- pending{fut: f, seq: seq, sent: time.Now()}:
		case <-w.failed:
			return false
		}
	}
	return true
}

// parts is how many messages an entry of length bytes takes, in parts of
// size.
func parts(length, size int) int { return max(1, (length+size-1)/size) }

// part is an entry's part i, of size bytes (the last one shorter).
func part(entry []byte, size, i int) []byte { return entry[i*size : min(len(entry), (i+1)*size)] }

// publish sends part i of n of an entry of kind, expecting the stream's
// last sequence to be after.
func (w *writer) publish(kind string, part []byte, i, n int, after uint64) (jetstream.PubAckFuture, error) {
	m := nats.NewMsg(w.subject)
	m.Header.Set(hdrFormat, logFormat)
	m.Header.Set(hdrDB, kind)
	m.Header.Set(hdrTerm, w.termHdr)
	if n > 1 {
		m.Header.Set(hdrPart, strconv.Itoa(i+1)+"/"+strconv.Itoa(n))
	}
	m.Data = part
	// No retries by the client: a message sent again later, behind the
	// writer's back, would carry whatever its bytes hold by then (the
	// batch's buffer is reused once committed). A message the stream did
	// not take fails the writer instead.
	return w.js.PublishMsgAsync(m, jetstream.WithExpectLastSequence(after),
		jetstream.WithExpectStream(w.stream), jetstream.WithRetryAttempts(0))
}

// collect receives the acknowledgements in order: each advances acked, and
// the first failure (or an acknowledgement later than the timeout) fails the
// writer.
func (w *writer) collect() {
	defer close(w.done)
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		var p pending
		select {
		case p = <-w.pending:
		case <-w.failed:
			return
		}
		t.Reset(time.Until(p.sent.Add(w.timeout)))
		select {
		case ack := <-p.fut.Ok():
			if ack.Sequence != p.seq {
				w.fail(fmt.Errorf("appended at sequence %d, expected %d", ack.Sequence, p.seq))
				return
			}
			w.ack.Lock()
			w.ack.acked = p.seq
			w.ack.cond.Broadcast()
			w.ack.Unlock()
			if w.grouping.Load() && !w.sendGroup(p.seq) {
				return
			}
		case err := <-p.fut.Err():
			w.fail(err)
			return
		case <-t.C:
			w.fail(fmt.Errorf("no acknowledgement of message %d in %v", p.seq, w.timeout))
			return
		case <-w.failed:
			return
		}
	}
}

// sendGroup publishes the open group, if any, once an acknowledgement up to
// acked leaves room for it; it reports false once the writer has failed.
func (w *writer) sendGroup(acked uint64) bool {
	w.mu.Lock()
	var err error
	if w.mu.group.open && w.mu.err == nil && w.mu.sent-acked < uint64(w.inflight) {
		err = w.publishGroupLocked()
	}
	w.mu.Unlock()
	if err != nil {
		w.fail(err)
		return false
	}
	return true
}

// publishGroupLocked publishes the open group as one message, at the
// sequence it reserved, and closes it. w.mu must be held.
func (w *writer) publishGroupLocked() error {
	g := &w.mu.group
	f, err := w.publish(g.kind, g.entry, 0, 1, g.seq-1)
	g.open = false
	w.grouping.Store(false)
	if err != nil {
		return err
	}
	w.mu.sent = g.seq
	w.pending <- pending{fut: f, seq: g.seq, sent: time.Now()}
	return nil
}

// joinGroupLocked adds a database batch (entry, of kind, in one part) to
// the open group, opening one when none is; it reports false, joining
// nothing, when the batch must be published on its own: no group is open
// and fewer than inflight messages await their acknowledgement. A group it
// cannot join (another database, no room) is published first. The caller
// holds w.mu and fills and applies the batch at the position returned.
func (w *writer) joinGroupLocked(kind string, entry []byte, size int) (pos position, joined bool, err error) {
	g := &w.mu.group
	if g.open && (g.kind != kind || len(g.entry)+len(entry)-batchHeaderLen > size) {
		if err := w.publishGroupLocked(); err != nil {
			return position{}, false, err
		}
	}
	if !g.open {
		// Set before acked is read, as collect reads it after it sets
		// acked: either this sees the acknowledgement that makes room,
		// or collect sees the flag and publishes the group.
		w.grouping.Store(true)
	}
	w.ack.Lock()
	acked := w.ack.acked
	w.ack.Unlock()
	if !g.open {
		if w.mu.sent-acked < uint64(w.inflight) {
			w.grouping.Store(false)
			return position{}, false, nil
		}
		g.open, g.kind, g.entry = true, kind, g.entry[:0]
		w.mu.last++
		g.seq = w.mu.last
	}
	return position{g.seq, w.term, acked}, true, nil
}

// mergeBatch appends the records of the Pebble batch repr b to the merged
// batch into (empty: b whole), summing the counts.
func mergeBatch(into, b []byte) []byte {
	if len(into) == 0 {
		return append(into, b...)
	}
	n := binary.LittleEndian.Uint32(into[8:batchHeaderLen]) + binary.LittleEndian.Uint32(b[8:batchHeaderLen])
	into = append(into, b[batchHeaderLen:]...)
	binary.LittleEndian.PutUint32(into[8:batchHeaderLen], n)
	return into
}

// fail records err as the writer's failure, once.
func (w *writer) fail(err error) {
	w.failOnce.Do(func() {
		err = fmt.Errorf("%w: %w", errFenced, err)
		w.ack.Lock()
		w.ack.err = err
		w.ack.cond.Broadcast()
		w.ack.Unlock()
		// Before taking mu: a trail-mode start holds it while it waits
		// for room in the queue, or for this.
		close(w.failed)
		w.mu.Lock()
		w.mu.err = err
		w.mu.Unlock()
	})
}

// Failed is closed when an append has failed.
func (w *writer) Failed() <-chan struct{} { return w.failed }

// Err returns the writer's failure, nil while it has none.
func (w *writer) Err() error {
	w.ack.Lock()
	defer w.ack.Unlock()
	return w.ack.err
}

// start publishes entry's parts and, in the same critical section, calls
// apply with the entry's position; wait returns once the entry is durable:
// once the log has it, or at once in trail mode, where apply synced it.
// fill, when set, is called with the position before anything is published,
// to write it into entry.
func (w *writer) start(kind string, entry []byte, fill, apply func(pos position) error) (wait func() error, err error) {
	w.mu.Lock()
	if w.mu.err != nil {
		err := w.mu.err
		w.mu.Unlock()
		return nil, err
	}
	size := w.mu.maxPart
	n := parts(len(entry), size)
	if !w.trail && w.inflight > 0 && (kind == dbCoordinator || kind == dbGroups) && n == 1 && len(entry) >= batchHeaderLen {
		return w.startGrouped(kind, entry, size, fill, apply)
	}
	if !w.trail && w.mu.group.open {
		// Whatever comes after the group goes to the log after it.
		if err := w.publishGroupLocked(); err != nil {
			w.mu.Unlock()
			w.fail(err)
			return nil, w.Err()
		}
	}
	w.ack.Lock()
	pos := position{w.mu.last + uint64(n), w.term, w.ack.acked}
	w.ack.Unlock()
	if fill != nil {
		err = fill(pos)
	}
	if w.trail {
		return w.startTrailing(kind, entry, pos, size, err, apply)
	}
	if err == nil {
		err = w.publishLocked(kind, entry, size, n)
	}
	return w.applyAndUnlock(pos, err, apply)
}

// publishLocked publishes entry's n parts of size after the last message
// published. w.mu must be held.
func (w *writer) publishLocked(kind string, entry []byte, size, n int) error {
	for i := range n {
		f, err := w.publish(kind, part(entry, size, i), i, n, w.mu.last)
		if err != nil {
			return err
		}
		w.mu.last++
		w.mu.sent = w.mu.last
		w.pending <- pending{fut: f, seq: w.mu.last, sent: time.Now()}
	}
	return nil
}

// applyAndUnlock ends a start entered with w.mu held, its entry published
// or grouped at pos (err: it was not): it records what was published, so
// that whatever a reply saw of the entry is covered by barrier, applies
// the entry, releases w.mu, and returns the entry's wait. An error fails
// the writer: parts already sent fail too, as each expects its
// predecessor.
func (w *writer) applyAndUnlock(pos position, err error, apply func(position) error) (wait func() error, _ error) {
	w.published.Store(w.mu.last)
	if err == nil && apply != nil {
		if err = apply(pos); err != nil {
			err = fmt.Errorf("apply entry %d: %w", pos.seq, err)
		}
	}
	w.mu.Unlock()
	if err != nil {
		w.fail(err)
		return nil, w.Err()
	}
	return func() error { return w.waitAcked(pos.seq) }, nil
}

// startGrouped is start for a database batch that may be grouped, entered
// with w.mu held: it joins (or opens) the group, or, with room in flight
// and no group open, publishes the batch as its own message.
func (w *writer) startGrouped(kind string, entry []byte, size int, fill, apply func(pos position) error) (wait func() error, err error) {
	pos, joined, err := w.joinGroupLocked(kind, entry, size)
	if err == nil && !joined {
		w.ack.Lock()
		pos = position{w.mu.last + 1, w.term, w.ack.acked}
		w.ack.Unlock()
	}
	if err == nil && fill != nil {
		err = fill(pos)
	}
	switch {
	case err != nil:
	case joined:
		g := &w.mu.group
		g.entry = mergeBatch(g.entry, entry)
	default:
		err = w.publishLocked(kind, entry, size, 1)
	}
	// The group's sequence is reserved: published covers it.
	return w.applyAndUnlock(pos, err, apply)
}

// startTrailing is start in trail mode, entered with w.mu held and err
// the fill's: it applies the entry (synced), then queues a copy of it for
// publishLoop, and releases w.mu. An entry applied is committed, whatever
// becomes of the log: wait has nothing to wait for.
func (w *writer) startTrailing(kind string, entry []byte, pos position, size int, err error, apply func(position) error) (wait func() error, _ error) {
	// Before the apply: whatever a reply saw of the entry is covered by
	// barrier.
	w.published.Store(pos.seq)
	if err == nil && apply != nil {
		if err = apply(pos); err != nil {
			err = fmt.Errorf("apply entry %d: %w", pos.seq, err)
		}
	}
	if err == nil {
		out := outgoing{kind: kind, first: w.mu.last + 1, entry: bytes.Clone(entry), size: size}
		w.ack.Lock()
		w.ack.durable = pos.seq
		w.ack.cond.Broadcast()
		w.ack.Unlock()
		select {
		case w.queue <- out:
			w.mu.last = pos.seq
		case <-w.failed:
			// The log failed: the entry is durable all the same (the
			// next leader resumes from the state), and the writer takes
			// no other. An append fails: the log lacks its entry.
		}
	}
	w.mu.Unlock()
	if err != nil {
		w.fail(err)
		return nil, w.Err()
	}
	return noWait, nil
}

func noWait() error { return nil }

// waitDurable waits, in trail mode, until every entry up to seq is applied
// and synced.
func (w *writer) waitDurable(seq uint64) error { return w.waitMark(&w.ack.durable, seq) }

// waitAcked waits until the log has every message up to seq.
func (w *writer) waitAcked(seq uint64) error { return w.waitMark(&w.ack.acked, seq) }

// waitMark waits until *mark, a field of w.ack, reaches seq, or the writer
// fails first.
func (w *writer) waitMark(mark *uint64, seq uint64) error {
	w.ack.Lock()
	defer w.ack.Unlock()
	for *mark < seq && w.ack.err == nil {
		w.ack.cond.Wait()
	}
	if *mark >= seq {
		return nil
	}
	return w.ack.err
}

// barrier waits until the log has every message published so far (in
// trail mode: until every entry applied so far is synced): a reply computed
// from the leader's state may go out once it returns nil.
func (w *writer) barrier() error {
	if w.trail {
		return w.waitDurable(w.published.Load())
	}
	return w.waitAcked(w.published.Load())
}

// append appends a log entry of kind, applying nothing, and returns its
// last sequence once the log has it (in trail mode too: a term's fence and
// a snapshot's mark are about the log).
func (w *writer) append(kind string, entry []byte) (uint64, error) {
	var last uint64
	_, err := w.start(kind, entry, nil, func(p position) error { last = p.seq; return nil })
	if err == nil {
		err = w.waitAcked(last)
	}
	return last, err
}

// startBatch appends b as an entry of database kind and applies it. The
// entry's position is the batch's last record, so that the bytes published
// are the bytes applied, with no copy: set with a placeholder here, filled
// in place once the position is known (a set's value ends the record, and
// the batch). A standby applying the entry sets its own position after it.
func (w *writer) startBatch(kind string, b *pebble.Batch) (wait func() error, err error) {
	_ = b.Set(appliedKey, make([]byte, positionLen), nil)
	repr := b.Repr()
	return w.start(kind, repr,
		func(p position) error {
			copy(repr[len(repr)-positionLen:], p.encode())
			return nil
		},
		func(position) error { return b.Commit(w.sync) })
}

// applied returns the sequence every entry up to which is in the log (and
// applied).
func (w *writer) applied() uint64 {
	w.ack.Lock()
	defer w.ack.Unlock()
	return w.ack.acked
}

// stamp records p as db's position.
func stamp(db *pebble.DB, p position) error {
	if err := db.Set(appliedKey, p.encode(), pebble.NoSync); err != nil {
		return fmt.Errorf("ha: stamp applied position: %w", err)
	}
	return nil
}

// dbLog is the writer as one database's coordinator.Log (and groups.Log).
type dbLog struct {
	w    *writer
	kind string
}

// Commit appends b to the log, applies it, and waits for it to be durable
// (the log has it, or in trail mode Pebble synced it); see coordinator.Log.
func (l dbLog) Commit(b *pebble.Batch) error {
	wait, err := l.w.startBatch(l.kind, b)
	if err != nil {
		return err
	}
	return wait()
}

// Start appends b to the log and applies it; see coordinator.Log.
func (l dbLog) Start(b *pebble.Batch) (wait func() error, err error) {
	return l.w.startBatch(l.kind, b)
}

// readApplied returns db's position, and false when it has none.
func readApplied(db *pebble.DB) (position, bool, error) {
	v, closer, err := db.Get(appliedKey)
	if errors.Is(err, pebble.ErrNotFound) {
		return position{}, false, nil
	}
	if err != nil {
		return position{}, false, fmt.Errorf("ha: read applied position: %w", err)
	}
	defer closer.Close()
	if len(v) != positionLen {
		return position{}, false, fmt.Errorf("ha: applied position of %d bytes", len(v))
	}
	return position{binary.BigEndian.Uint64(v), binary.BigEndian.Uint64(v[8:]), binary.BigEndian.Uint64(v[16:])}, true, nil
}
