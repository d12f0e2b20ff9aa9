package ingest

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/objectstore"
)

// fakeCommitter records commits and assigns offsets per partition; it can
// be blocked to hold commits back.
type fakeCommitter struct {
	mu      sync.Mutex
	objects []*coordapi.CommitRequest
	next    map[int32]int64
	block   chan struct{} // when non-nil, commits wait for it to close
	err     error
}

func (f *fakeCommitter) CommitObject(ctx context.Context, req *coordapi.CommitRequest) (*coordapi.CommitResponse, error) {
	f.mu.Lock()
	block := f.block
	f.mu.Unlock()
	if block != nil {
		select {
		case <-block:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return nil, f.err
	}
	if f.next == nil {
		f.next = make(map[int32]int64)
	}
	resp := &coordapi.CommitResponse{}
	for _, b := range req.Batches {
		resp.Results = append(resp.Results, coordapi.BatchResult{BaseOffset: f.next[b.Partition], LogAppendTime: -1})
		f.next[b.Partition] += int64(b.LastOffsetDelta) + 1
	}
	f.objects = append(f.objects, req)
	return resp, nil
}

func (f *fakeCommitter) committed() []*coordapi.CommitRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*coordapi.CommitRequest(nil), f.objects...)
}

// batch returns a fake batch whose bytes carry seq, so tests can check order.
func batch(partition int32, seq uint64, size int) Batch {
	data := make([]byte, max(size, 8))
	binary.BigEndian.PutUint64(data, seq)
	return Batch{Data: data, Commit: coordapi.CommitBatch{Partition: partition, ProducerID: -1}}
}

func waitCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func newTestIngester(t *testing.T, opts Options, store Putter, c Committer) *Ingester {
	t.Helper()
	in, err := New(opts, store, c, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close(context.Background()) })
	return in
}

// An idle ingester rolls at once: a lone producer does not wait the linger.
func TestRollsEarlyWhenIdle(t *testing.T) {
	c := &fakeCommitter{}
	in := newTestIngester(t, Options{Linger: time.Hour, MaxPutRate: 1000}, objectstore.NewMemory(), c)
	for i := range 3 {
		p, err := in.Append(waitCtx(t), []Batch{batch(0, uint64(i), 100)})
		if err != nil {
			t.Fatal(err)
		}
		res, err := p.Wait(waitCtx(t))
		if err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
		if res[0].BaseOffset != int64(i) {
			t.Fatalf("append %d: base offset %d", i, res[0].BaseOffset)
		}
	}
	if got := len(c.committed()); got != 3 {
		t.Fatalf("%d objects committed, want 3 (one per idle append)", got)
	}
}

// With the PUT budget spent, an idle ingester waits for the linger instead.
func TestPutBudgetDefersToLinger(t *testing.T) {
	c := &fakeCommitter{}
	in := newTestIngester(t, Options{Linger: 200 * time.Millisecond, MaxPutRate: 0.001}, objectstore.NewMemory(), c)
	p1, _ := in.Append(waitCtx(t), []Batch{batch(0, 1, 100)})
	if _, err := p1.Wait(waitCtx(t)); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	p2, _ := in.Append(waitCtx(t), []Batch{batch(0, 2, 100)})
	p3, _ := in.Append(waitCtx(t), []Batch{batch(0, 3, 100)})
	if _, err := p3.Wait(waitCtx(t)); err != nil {
		t.Fatal(err)
	}
	if _, err := p2.Wait(waitCtx(t)); err != nil {
		t.Fatal(err)
	}
	if waited := time.Since(start); waited < 150*time.Millisecond {
		t.Fatalf("second object rolled after %s, before the linger, with no PUT budget left", waited)
	}
	objs := c.committed()
	if len(objs) != 2 || len(objs[1].Batches) != 2 {
		t.Fatalf("want 2 objects, the second with 2 batches; got %d objects", len(objs))
	}
}

// Objects roll at MaxBytes, and commits follow roll order even when uploads
// finish out of order.
func TestCommitsInObjectOrder(t *testing.T) {
	c := &fakeCommitter{}
	store := objectstore.NewFaulty(objectstore.NewMemory(), objectstore.FaultOptions{Seed: 1, LatencyJitter: 5 * time.Millisecond})
	in := newTestIngester(t, Options{MaxBytes: 4096, Linger: 5 * time.Millisecond, MaxPutRate: 1e6}, store, c)
	var pendings []*Pending
	for i := range 500 {
		p, err := in.Append(waitCtx(t), []Batch{batch(int32(i%3), uint64(i), 1000)})
		if err != nil {
			t.Fatal(err)
		}
		pendings = append(pendings, p)
	}
	for _, p := range pendings {
		if _, err := p.Wait(waitCtx(t)); err != nil {
			t.Fatal(err)
		}
	}
	var last int64 = -1
	objs := c.committed()
	for _, o := range objs {
		if o.ObjectSize > 4096+1000 {
			t.Fatalf("object of %d bytes exceeds max bytes", o.ObjectSize)
		}
		for _, b := range o.Batches {
			data, err := store.Inner().GetRange(context.Background(), o.ObjectKey, b.ByteOffset, int64(b.ByteLength))
			if err != nil {
				t.Fatal(err)
			}
			seq := int64(binary.BigEndian.Uint64(data))
			if seq != last+1 {
				t.Fatalf("batch %d committed after %d", seq, last)
			}
			last = seq
		}
	}
	if last != 499 {
		t.Fatalf("last committed batch %d, want 499", last)
	}
	if len(objs) < 100 {
		t.Fatalf("only %d objects for 500 KB at 4 KiB each", len(objs))
	}
}

// A failed upload fails every batch of its object with a retriable error,
// and the next object goes through.
func TestUploadFailureFailsObject(t *testing.T) {
	c := &fakeCommitter{}
	store := objectstore.NewFaulty(objectstore.NewMemory(), objectstore.FaultOptions{})
	store.FailNextPuts(3) // every attempt of the first object
	in := newTestIngester(t, Options{}, store, c)
	p, _ := in.Append(waitCtx(t), []Batch{batch(0, 1, 100)})
	_, err := p.Wait(waitCtx(t))
	var ke *kerr.Error
	if !errors.As(err, &ke) || ke != kerr.KafkaStorageError || !ke.Retriable {
		t.Fatalf("failed upload: err %v, want retriable KAFKA_STORAGE_ERROR", err)
	}
	p, _ = in.Append(waitCtx(t), []Batch{batch(0, 2, 100)})
	if _, err := p.Wait(waitCtx(t)); err != nil {
		t.Fatalf("after a failed upload: %v", err)
	}
	if len(c.committed()) != 1 {
		t.Fatalf("the failed object was committed")
	}
}

// A failed commit fails the object's batches.
func TestCommitFailureFailsObject(t *testing.T) {
	c := &fakeCommitter{err: errors.New("pebble: disk full")}
	in := newTestIngester(t, Options{}, objectstore.NewMemory(), c)
	p, _ := in.Append(waitCtx(t), []Batch{batch(0, 1, 100)})
	if _, err := p.Wait(waitCtx(t)); !errors.Is(err, kerr.KafkaStorageError) {
		t.Fatalf("failed commit: err %v, want KAFKA_STORAGE_ERROR", err)
	}
}

// Producers wait while MaxBufferedBytes are uncommitted, and go on once
// commits free room.
func TestBackPressure(t *testing.T) {
	c := &fakeCommitter{block: make(chan struct{})}
	in := newTestIngester(t, Options{MaxBytes: 1000, MaxBufferedBytes: 3000}, objectstore.NewMemory(), c)
	var pendings []*Pending
	for i := range 3 {
		p, err := in.Append(waitCtx(t), []Batch{batch(0, uint64(i), 1000)})
		if err != nil {
			t.Fatal(err)
		}
		pendings = append(pendings, p)
	}
	if got := in.Buffered(); got != 3000 {
		t.Fatalf("buffered %d, want 3000", got)
	}
	short, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := in.Append(short, []Batch{batch(0, 3, 1000)}); !errors.Is(err, kerr.RequestTimedOut) {
		t.Fatalf("append past the buffer bound: err %v, want REQUEST_TIMED_OUT", err)
	}
	// The produce path's form: a timeout of its own, timed only once it
	// waits.
	if _, err := in.AppendWithin(waitCtx(t), 50*time.Millisecond, []Batch{batch(0, 3, 1000)}); !errors.Is(err, kerr.RequestTimedOut) {
		t.Fatalf("AppendWithin past the buffer bound: err %v, want REQUEST_TIMED_OUT", err)
	}
	if _, err := pendings[0].WaitWithin(waitCtx(t), 20*time.Millisecond); !errors.Is(err, kerr.RequestTimedOut) {
		t.Fatalf("WaitWithin a commit that does not come: err %v, want REQUEST_TIMED_OUT", err)
	}
	done := make(chan error, 1)
	go func() {
		p, err := in.Append(waitCtx(t), []Batch{batch(0, 3, 1000)})
		if err == nil {
			_, err = p.Wait(waitCtx(t))
		}
		done <- err
	}()
	c.mu.Lock()
	close(c.block)
	c.block = nil
	c.mu.Unlock()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for _, p := range pendings {
		if _, err := p.Wait(waitCtx(t)); err != nil {
			t.Fatal(err)
		}
		if res, err := p.WaitWithin(waitCtx(t), time.Nanosecond); err != nil || len(res) != 1 {
			t.Fatalf("WaitWithin a commit already done = %v, %v; want its result however short the timeout", res, err)
		}
	}
}

// Close commits what is buffered before returning.
func TestCloseFlushes(t *testing.T) {
	c := &fakeCommitter{}
	in, err := New(Options{Linger: time.Hour, MaxPutRate: 0.001}, objectstore.NewMemory(), c, nil)
	if err != nil {
		t.Fatal(err)
	}
	p1, _ := in.Append(waitCtx(t), []Batch{batch(0, 1, 100)}) // takes the only token
	p2, _ := in.Append(waitCtx(t), []Batch{batch(0, 2, 100)}) // lingers
	if err := in.Close(waitCtx(t)); err != nil {
		t.Fatal(err)
	}
	for _, p := range []*Pending{p1, p2} {
		select {
		case <-p.Done():
		default:
			t.Fatal("Close returned before a buffered batch was committed")
		}
		if _, err := p.Wait(waitCtx(t)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := in.Append(waitCtx(t), []Batch{batch(0, 3, 100)}); !errors.Is(err, ErrClosed) {
		t.Fatalf("append after close: %v, want ErrClosed", err)
	}
}

func TestOptionsValidate(t *testing.T) {
	tests := []struct {
		name string
		opts Options
		ok   bool
	}{
		{"zero is defaults", Options{}, true},
		{"negative linger", Options{Linger: -1}, false},
		{"buffer below object", Options{MaxBytes: 1000, MaxBufferedBytes: 10}, false},
		{"negative rate", Options{MaxPutRate: -1}, false},
		{"negative puts per GiB", Options{MaxPutsPerGiB: -1}, false},
		{"NaN puts per GiB", Options{MaxPutsPerGiB: math.NaN()}, false},
		{"puts per GiB", Options{MaxPutsPerGiB: 512}, true},
		{"inline local", Options{InlineMax: InlineLocal}, true},
		{"negative inline", Options{InlineMax: -1}, false},
		{"inline over the most", Options{InlineMax: coordapi.MaxInlineObject + 1}, false},
		{"negative inline rate", Options{InlineMax: 1000, InlineMaxRate: -1}, false},
		{"upload ahead", Options{UploadAheadBytes: UploadAheadFree}, true},
		{"negative upload ahead", Options{UploadAheadBytes: -1}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.opts.Validate(); (err == nil) != tt.ok {
				t.Fatalf("Validate() = %v, want ok=%v", err, tt.ok)
			}
		})
	}
}

// Objects go under <prefix>/wal/ whatever slashes the operator's prefix
// carries: "floe/" used to make "floe//wal/...", a key no store accepts, so
// every upload failed.
func TestPrefixWithSlashes(t *testing.T) {
	for _, prefix := range []string{"", "floe", "floe/", "/floe/", "a/b/"} {
		t.Run(prefix, func(t *testing.T) {
			store, c := objectstore.NewMemory(), &fakeCommitter{}
			in := newTestIngester(t, Options{Prefix: prefix, Linger: time.Hour, MaxPutRate: 1000}, store, c)
			p, err := in.Append(waitCtx(t), []Batch{batch(0, 1, 100)})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := p.Wait(waitCtx(t)); err != nil {
				t.Fatalf("prefix %q: %v", prefix, err)
			}
			got := c.committed()
			if len(got) != 1 {
				t.Fatalf("%d objects committed, want 1", len(got))
			}
			key := got[0].ObjectKey
			if want := coordapi.WALPrefix(prefix); !strings.HasPrefix(key, want) || strings.Contains(key, "//") {
				t.Fatalf("prefix %q: key %q, want it under %q", prefix, key, want)
			}
			if _, err := store.Head(waitCtx(t), key); err != nil {
				t.Fatalf("prefix %q: object %q not in the store: %v", prefix, key, err)
			}
		})
	}
}

// A transactional batch waits at most TxnLinger, however long the linger
// and however spent the PUT budget: its producer's EndTxn waits for it.
func TestTxnLinger(t *testing.T) {
	c := &fakeCommitter{}
	in := newTestIngester(t, Options{Linger: time.Hour, TxnLinger: 20 * time.Millisecond, MaxPutRate: 0.001}, objectstore.NewMemory(), c)
	p1, _ := in.Append(waitCtx(t), []Batch{batch(0, 1, 100)}) // takes the budget's one token
	if _, err := p1.Wait(waitCtx(t)); err != nil {
		t.Fatal(err)
	}
	txn := batch(0, 2, 100)
	txn.Commit.Transactional = true
	p2, _ := in.Append(waitCtx(t), []Batch{txn})
	if _, err := p2.Wait(waitCtx(t)); err != nil {
		t.Fatalf("a transactional batch waited for the hour-long linger: %v", err)
	}
	if objs := c.committed(); len(objs) != 2 {
		t.Fatalf("%d objects committed, want 2", len(objs))
	}
}

// Objects up to InlineMax go in their commit, not to the store; larger
// ones are uploaded. An inline commit counts as the upload in flight, so
// appends made while it waits fill one next object rather than rolling one
// object each.
func TestInlineObjects(t *testing.T) {
	store := objectstore.NewMemory()
	block := make(chan struct{})
	c := &fakeCommitter{block: block}
	in := newTestIngester(t, Options{Linger: time.Hour, MaxPutRate: PutRateLocal, InlineMax: 1000}, store, c)
	p1, err := in.Append(waitCtx(t), []Batch{batch(0, 1, 100)})
	if err != nil {
		t.Fatal(err)
	}
	// p1's object is rolled, and its commit blocked: these two wait.
	p2, _ := in.Append(waitCtx(t), []Batch{batch(0, 2, 100)})
	p3, _ := in.Append(waitCtx(t), []Batch{batch(0, 3, 100)})
	close(block)
	for _, p := range []*Pending{p1, p2, p3} {
		if _, err := p.Wait(waitCtx(t)); err != nil {
			t.Fatal(err)
		}
	}
	objs := c.committed()
	if len(objs) != 2 || len(objs[0].Batches) != 1 || len(objs[1].Batches) != 2 {
		t.Fatalf("committed %d objects, want 2: the first append's, then one with both appends made during its commit", len(objs))
	}
	for _, o := range objs {
		if int64(len(o.Inline)) != o.ObjectSize || o.ObjectSize == 0 {
			t.Errorf("object %s: %d inline bytes for size %d", o.ObjectKey, len(o.Inline), o.ObjectSize)
		}
	}
	if seq := binary.BigEndian.Uint64(objs[1].Inline[100:]); seq != 3 {
		t.Errorf("second inline object holds batch %d at its second batch, want 3", seq)
	}
	if l, _ := store.List(waitCtx(t), ""); len(l) != 0 {
		t.Errorf("store holds %d objects after inline commits, want none", len(l))
	}

	p4, _ := in.Append(waitCtx(t), []Batch{batch(0, 4, 2000)})
	if _, err := p4.Wait(waitCtx(t)); err != nil {
		t.Fatal(err)
	}
	objs = c.committed()
	last := objs[len(objs)-1]
	if last.Inline != nil {
		t.Errorf("object of %d bytes (over InlineMax) committed inline", last.ObjectSize)
	}
	if l, _ := store.List(waitCtx(t), ""); len(l) != 1 || l[0].Key != last.ObjectKey {
		t.Errorf("store holds %+v, want the one uploaded object %s", l, last.ObjectKey)
	}
}

// Past InlineMaxRate bytes per second, objects are uploaded again.
func TestInlineRate(t *testing.T) {
	store := objectstore.NewMemory()
	c := &fakeCommitter{}
	in := newTestIngester(t, Options{Linger: time.Hour, MaxPutRate: PutRateLocal, InlineMax: 1000, InlineMaxRate: 1000}, store, c)
	for i := range 2 {
		p, err := in.Append(waitCtx(t), []Batch{batch(0, uint64(i), 600)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Wait(waitCtx(t)); err != nil {
			t.Fatal(err)
		}
	}
	objs := c.committed()
	if len(objs) != 2 || objs[0].Inline == nil || objs[1].Inline != nil {
		t.Fatalf("committed %d objects, inline %v and %v; want the first inline and the second (past 1000 B/s) uploaded",
			len(objs), objs[0].Inline != nil, len(objs) > 1 && objs[1].Inline != nil)
	}
	if _, err := store.Head(waitCtx(t), objs[1].ObjectKey); err != nil {
		t.Errorf("the object past the rate is not in the store: %v", err)
	}
}

// putRecorder is a WriteThrough that hands each put on, copied.
type putRecorder chan coordapi.CommitRequest

func (r putRecorder) Put(key string, data []byte) {
	r <- coordapi.CommitRequest{ObjectKey: key, Inline: bytes.Clone(data)}
}

// An inline object reaches the write-through cache once it is committed,
// and not at all when its commit fails.
func TestInlineWriteThrough(t *testing.T) {
	c := &fakeCommitter{err: kerr.NotEnoughReplicas}
	puts := make(putRecorder, 4)
	in, err := New(Options{Linger: time.Hour, MaxPutRate: PutRateLocal, InlineMax: 1000}, objectstore.NewMemory(), c, puts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close(context.Background()) })
	p, err := in.Append(waitCtx(t), []Batch{batch(0, 1, 100)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Wait(waitCtx(t)); !errors.Is(err, kerr.NotEnoughReplicas) {
		t.Fatalf("failed commit: %v, want NOT_ENOUGH_REPLICAS", err)
	}
	c.mu.Lock()
	c.err = nil
	c.mu.Unlock()
	p, err = in.Append(waitCtx(t), []Batch{batch(0, 2, 100)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Wait(waitCtx(t)); err != nil {
		t.Fatal(err)
	}
	committed := c.committed()
	if len(committed) != 1 || committed[0].Inline == nil {
		t.Fatalf("%d objects committed, want the second one, inline", len(committed))
	}
	// Puts come from the commit loop in commit order: the failed object's,
	// had there been one, would come first.
	select {
	case put := <-puts:
		if put.ObjectKey != committed[0].ObjectKey || !bytes.Equal(put.Inline, committed[0].Inline) {
			t.Fatalf("the cache got object %s (%d bytes), want the committed %s (%d bytes)",
				put.ObjectKey, len(put.Inline), committed[0].ObjectKey, len(committed[0].Inline))
		}
	case <-waitCtx(t).Done():
		t.Fatal("the committed inline object never reached the cache")
	}
}

// The commit loop's contexts: one made ahead serves the next commit while
// it is fresh, and gives it at least CommitTimeout; a stale one is
// released and replaced.
func TestCommitContext(t *testing.T) {
	in := &Ingester{opts: Options{CommitTimeout: time.Minute}}
	atLeast := func(ctx context.Context, from time.Time) {
		t.Helper()
		if d, ok := ctx.Deadline(); !ok || d.Before(from.Add(time.Minute)) || d.After(from.Add(time.Minute+maxCommitContextAge+time.Second)) {
			t.Errorf("deadline %v (%v), want CommitTimeout to CommitTimeout+%v from %v", d, ok, maxCommitContextAge, from)
		}
	}
	start := time.Now()
	ctx, cancel := in.commitContext() // nothing made ahead
	atLeast(ctx, start)
	cancel()

	in.prepareCommitContext()
	prepared := in.nextCommit.ctx
	in.prepareCommitContext() // one is enough
	if in.nextCommit.ctx != prepared {
		t.Fatal("prepareCommitContext replaced a context made ahead")
	}
	ctx, cancel = in.commitContext()
	if ctx != prepared {
		t.Error("a fresh context made ahead was not used")
	}
	atLeast(ctx, time.Now())
	cancel()
	if in.nextCommit.ctx != nil {
		t.Error("a context made ahead served twice")
	}

	// Made ahead long enough ago that less than CommitTimeout is left.
	sctx, scancel := context.WithTimeout(context.Background(), time.Minute-time.Second)
	in.nextCommit = preparedContext{sctx, scancel}
	stale := in.nextCommit.ctx
	now := time.Now()
	ctx, cancel = in.commitContext()
	defer cancel()
	if ctx == stale || stale.Err() == nil {
		t.Errorf("a stale context made ahead was used (%v) or not released (err %v)", ctx == stale, stale.Err())
	}
	atLeast(ctx, now)
}

// An object waiting for its early roll (Options.EarlyRollWait) while a
// producer is still sending sleeps until the wait ends: its timer must not
// fire again and again in between, as it did when the budget had tokens
// (a wake at the refill found the object not ready and re-armed at 0).
func TestEarlyRollWaitSleeps(t *testing.T) {
	const wait = 50 * time.Millisecond
	c := &fakeCommitter{block: make(chan struct{})}
	in := newTestIngester(t, Options{Linger: time.Hour, MaxPutRate: PutRateLocal, EarlyRollWait: wait}, objectstore.NewMemory(), c)
	const src = Source(7)
	// Two requests in flight at once: the source's peak is 2. Each rolls
	// at once (the source waits for all it sent), their commits held.
	var held []*Pending
	for i := range 2 {
		p, err := in.AppendFrom(waitCtx(t), src, 0, []Batch{batch(0, uint64(i), 100)})
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, p)
	}
	close(c.block)
	for _, p := range held {
		if _, err := p.Wait(waitCtx(t)); err != nil {
			t.Fatal(err)
		}
	}
	// One request of two: the source is still sending, so the object
	// waits out EarlyRollWait, then rolls.
	before := in.wakes.Load()
	start := time.Now()
	p, err := in.AppendFrom(waitCtx(t), src, 0, []Batch{batch(0, 2, 100)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Wait(waitCtx(t)); err != nil {
		t.Fatal(err)
	}
	if waited := time.Since(start); waited < wait {
		t.Errorf("the object rolled after %v, before its early-roll wait of %v", waited, wait)
	}
	if wakes := in.wakes.Load() - before; wakes > 2 {
		t.Errorf("the roll timer fired %d times during one early-roll wait, want at most 2", wakes)
	}
}

// gatedPutter holds every Put until release is closed.
type gatedPutter struct {
	objectstore.Store
	release chan struct{}
}

func (g gatedPutter) Put(ctx context.Context, key string, data []byte) error {
	select {
	case <-g.release:
	case <-ctx.Done():
		return ctx.Err()
	}
	return g.Store.Put(ctx, key, data)
}

// With UploadAheadBytes an object that holds that many bytes rolls beside
// the uploads still running, up to MaxUploads; without it, an early roll
// waits until no upload runs. The rolls are counted under the ingester's
// lock, right after the Append that made them (or not).
func TestUploadAhead(t *testing.T) {
	for _, tc := range []struct {
		name  string
		ahead int
		// uploading after each append of the sizes below: the first
		// rolls at once (idle); then 600, 600 (1,200 bytes), 1,000,
		// 1,000 (MaxUploads is 3).
		want []int
	}{
		{"off", 0, []int{1, 1, 1, 1, 1}},
		{"1000 bytes", 1000, []int{1, 1, 2, 3, 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := gatedPutter{objectstore.NewMemory(), make(chan struct{})}
			c := &fakeCommitter{}
			in := newTestIngester(t, Options{Linger: time.Hour, MaxPutRate: math.MaxFloat64, MaxUploads: 3,
				UploadAheadBytes: tc.ahead}, store, c)
			release := sync.OnceFunc(func() { close(store.release) })
			t.Cleanup(release) // before the ingester's Close, should the test fail
			var pendings []*Pending
			for i, size := range []int{100, 600, 600, 1000, 1000} {
				p, err := in.Append(waitCtx(t), []Batch{batch(0, uint64(i), size)})
				if err != nil {
					t.Fatal(err)
				}
				pendings = append(pendings, p)
				in.mu.Lock()
				uploading := in.mu.uploading
				in.mu.Unlock()
				if uploading != tc.want[i] {
					t.Fatalf("after append %d (%d bytes): %d uploading, want %d", i, size, uploading, tc.want[i])
				}
			}
			release()
			var last int64 = -1
			for i, p := range pendings {
				res, err := p.Wait(waitCtx(t))
				if err != nil {
					t.Fatal(err)
				}
				if res[0].BaseOffset <= last {
					t.Fatalf("append %d at offset %d, after %d: out of order", i, res[0].BaseOffset, last)
				}
				last = res[0].BaseOffset
			}
		})
	}
}
