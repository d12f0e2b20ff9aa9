// Package ingest is floe's produce path. Batches from every partition are
// appended, unchanged, to one open object buffer; the buffer rolls into an
// object at a size or a linger time (or early when the uploader is idle, or
// the object large enough to go beside the running uploads, and the PUT
// budget allows, once the producers still sending had a few milliseconds
// to add to it); objects upload in parallel and commit to the
// coordinator strictly in object order; each Append's Pending completes
// with its offsets only after the commit is durable.
//
//	Append ──► open object ──roll──► upload (≤ MaxUploads at once) ──► commit in order ──► Pending done
//	            (size, linger,        Put <prefix>/wal/<uuidv7>         CommitObject
//	             or idle + budget)
package ingest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/twmb/franz-go/pkg/kerr"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/internal/bufpool"
	"github.com/floe-io/floe/metrics"
)

// ErrClosed is returned by Append after Close.
var ErrClosed = errors.New("ingest: closed")

// Putter uploads objects; objectstore.Store implements it.
type Putter interface {
	Put(ctx context.Context, key string, data []byte) error
}

// Committer commits uploaded objects; the coordinator implements it.
type Committer interface {
	CommitObject(ctx context.Context, req *coordapi.CommitRequest) (*coordapi.CommitResponse, error)
}

// WriteThrough receives each object after its upload, before its commit, so
// that consumers at the head of the log read it from memory; an inline
// object (Options.InlineMax), which has no upload, once its commit has
// answered its producers (the coordinator's staged copy serves it until
// then). It must copy what it keeps: ingest reuses the buffer. The chunk
// cache implements it.
type WriteThrough interface {
	Put(key string, data []byte)
}

// Batch is one validated record batch to append.
type Batch struct {
	// Data is the batch exactly as the producer sent it.
	Data []byte
	// Commit carries what the coordinator needs of the batch: topic id,
	// partition, LastOffsetDelta, MaxTimestamp, producer fields, keys.
	// ByteOffset and ByteLength are filled in by Append.
	Commit coordapi.CommitBatch
}

// Pending is the outcome of one Append: results for its batches, in order,
// once the object holding them is committed.
type Pending struct {
	src     Source
	done    chan struct{}
	results []coordapi.BatchResult
	err     error
	// object is the span of the object that carried the batches, when
	// traced (trace.go).
	object trace.Span
}

// Wait returns the per-batch results, or the error that failed them all
// (a Kafka error: KAFKA_STORAGE_ERROR or REQUEST_TIMED_OUT, both retriable).
func (p *Pending) Wait(ctx context.Context) ([]coordapi.BatchResult, error) {
	return p.WaitWithin(ctx, 0)
}

// WaitWithin is Wait giving up after timeout as well (0: no limit). Its
// timer starts only if the results are not known yet, and costs less than
// a context.WithTimeout, which on a quiet broker took several microseconds
// of a produce's answer.
func (p *Pending) WaitWithin(ctx context.Context, timeout time.Duration) ([]coordapi.BatchResult, error) {
	var expired <-chan time.Time // nil: no limit
	select {
	case <-p.done:
		return p.results, p.err
	default:
		if timeout > 0 {
			t := time.NewTimer(timeout)
			defer t.Stop()
			expired = t.C
		}
	}
	select {
	case <-p.done:
		return p.results, p.err
	case <-ctx.Done():
	case <-expired:
	}
	return nil, fmt.Errorf("wait for commit: %w", kerr.RequestTimedOut)
}

// Done is closed when the results are known.
func (p *Pending) Done() <-chan struct{} { return p.done }

// object is an object buffer: open while batches are appended, then
// uploaded and committed.
type object struct {
	seq     uint64
	key     string
	buf     []byte
	batches []coordapi.CommitBatch
	// owners[i] is the Pending and result index of batches[i].
	owners   []owner
	pendings []*Pending
	firstAt  time.Time
	// txnAt is when its first transactional batch came (zero: none):
	// such an object rolls at Options.TxnLinger.
	txnAt time.Time

	uploaded  chan struct{}
	uploadErr error
	// inline is set for an object committed with its bytes, not uploaded
	// (Options.InlineMax); lent, when the coordinator keeps buf itself
	// until it writes it, so that buf is not recycled.
	inline, lent bool
	// span is the object's span when traced (trace.go), links the
	// requests' spans until it starts.
	span  trace.Span
	links []trace.Link
}

type owner struct {
	p   *Pending
	idx int
}

// Ingester buffers, uploads and commits produce batches.
type Ingester struct {
	opts  Options
	store Putter
	coord Committer
	cache WriteThrough
	log   *slog.Logger
	now   func() time.Time
	// committed counts the bytes of the objects committed (Committed).
	committed atomic.Int64
	// wakes counts the roll timer's firings, for tests.
	wakes atomic.Int64
	// commitReady wakes the commit loop (capacity 1).
	commitReady chan struct{}
	// nextCommit is the commit loop's next commit's context, made ahead
	// (prepareCommitContext); the commit loop's own.
	nextCommit preparedContext

	uploadSlots chan struct{}
	committerWG sync.WaitGroup
	// bigBufs recycles full-size object buffers. A busy broker fills one
	// every few milliseconds, and a fresh 8 MiB buffer costs thousands of
	// page faults to write into (about a quarter of the CPU at saturation
	// here); small objects use right-sized buffers.
	bigBufs sync.Pool
	// bufs recycles the smaller buffers, by size class: an object's buffer
	// once it finishes (the cache has its own copy), and the one it outgrew. Made
	// to measure, growing by append, and copied into the cache, they were
	// two fifths of a loaded broker's allocations (objects of 75-390 KiB
	// one after another at 20 MiB/s: most outgrew a buffer sized from the
	// last one).
	bufs bufpool.Pool

	commitDuration metric.Float64Histogram
	objectBytes    metric.Int64Histogram
	// tracer traces objects (trace.go); nil: no tracing.
	tracer trace.Tracer

	mu struct {
		sync.Mutex
		cur    *object
		timer  *time.Timer
		active int // rolled objects not yet committed
		// uploading counts rolled objects whose upload has not ended (an
		// inline object's ends with its commit); an early roll waits for
		// it to be 0, so that the next object's upload overlaps the
		// previous object's commit but not its upload, unless the object
		// holds Options.UploadAheadBytes.
		uploading int
		buffered  int64
		// roomFreed is closed and replaced whenever buffered bytes drop.
		roomFreed chan struct{}
		budget    *putBudget
		// sources counts the requests in flight of each source, with
		// Options.EarlyRollWait only.
		sources sources
		// inlineBudget is Options.InlineMaxRate's bucket.
		inlineBudget *putBudget
		seq          uint64
		closed       bool
		idle         chan struct{} // closed when active drops to 0 after Close
		// lastSize is the size of the last rolled object.
		lastSize int
		// queue holds rolled objects in roll order, for the commit loop.
		queue []*object
	}
}

// New returns an Ingester that uploads to store and commits to coord. cache
// may be nil.
func New(opts Options, store Putter, coord Committer, cache WriteThrough) (*Ingester, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts.setDefaults()
	in := &Ingester{
		opts:        opts,
		store:       store,
		coord:       coord,
		cache:       cache,
		log:         opts.Logger,
		now:         time.Now,
		commitReady: make(chan struct{}, 1),
		uploadSlots: make(chan struct{}, opts.MaxUploads),
	}
	m := metrics.OrNoop(opts.Meter)
	in.commitDuration, _ = m.Float64Histogram("floe.ingest.commit.duration", metric.WithUnit("s"),
		metric.WithDescription("CommitObject latency, from upload done to offsets assigned."))
	in.objectBytes, _ = m.Int64Histogram("floe.ingest.object.size", metric.WithUnit("By"),
		metric.WithDescription("Size of the objects ingest rolls."),
		metric.WithExplicitBucketBoundaries(1<<10, 16<<10, 64<<10, 256<<10, 1<<20, 4<<20, 8<<20, 16<<20, 64<<20))
	if _, err := m.Int64ObservableGauge("floe.ingest.buffered", metric.WithUnit("By"),
		metric.WithDescription("Bytes appended but not yet committed."),
		metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
			o.Observe(in.Buffered())
			return nil
		})); err != nil {
		return nil, fmt.Errorf("ingest metrics: %w", err)
	}
	in.mu.roomFreed = make(chan struct{})
	in.mu.budget = newPutBudget(opts.MaxPutRate, opts.MaxPutsPerGiB, in.now())
	if opts.MaxPutsPerGiB > 0 && opts.MaxPutRate < math.MaxFloat64 {
		in.mu.budget.fading(putRateFade) // the bytes' budget takes over under load
	}
	in.mu.inlineBudget = newByteBudget(opts.InlineMaxRate, max(opts.InlineMaxRate, float64(opts.InlineMax)), in.now())
	in.committerWG.Add(1)
	go in.commitLoop()
	return in, nil
}

// Append adds batches to the open object, waiting for room while more than
// MaxBufferedBytes are buffered. All batches of one call go into the same
// object. The returned Pending completes after the commit.
func (in *Ingester) Append(ctx context.Context, batches []Batch) (*Pending, error) {
	return in.AppendWithin(ctx, 0, batches)
}

// AppendWithin is Append waiting at most timeout for room (0: no limit).
// Its timer starts only if it has to wait: a produce's timeout costs
// nothing on the path it does not slow down, where a context.WithTimeout
// per request took a few microseconds of a quiet broker's time.
func (in *Ingester) AppendWithin(ctx context.Context, timeout time.Duration, batches []Batch) (*Pending, error) {
	return in.AppendFrom(ctx, 0, timeout, batches)
}

// AppendFrom is AppendWithin for a request of src: the broker passes its
// client connection, so that early rolls wait for producers still sending
// and not for those waiting on their answers (Options.EarlyRollWait).
func (in *Ingester) AppendFrom(ctx context.Context, src Source, timeout time.Duration, batches []Batch) (*Pending, error) {
	var n int64
	for _, b := range batches {
		n += int64(len(b.Data))
	}
	p := &Pending{src: src, done: make(chan struct{}), results: make([]coordapi.BatchResult, len(batches))}
	if len(batches) == 0 {
		close(p.done)
		return p, nil
	}
	var expired <-chan time.Time // the timeout, once Append waits
	in.mu.Lock()
	for {
		if in.mu.closed {
			in.mu.Unlock()
			return nil, ErrClosed
		}
		if in.mu.buffered == 0 || in.mu.buffered+n <= in.opts.MaxBufferedBytes {
			break
		}
		wait := in.mu.roomFreed
		in.mu.Unlock()
		if expired == nil && timeout > 0 {
			t := time.NewTimer(timeout)
			defer t.Stop()
			expired = t.C
		}
		select {
		case <-wait:
			in.mu.Lock()
			continue
		case <-ctx.Done():
		case <-expired:
		}
		return nil, fmt.Errorf("wait for ingest buffer room: %w", kerr.RequestTimedOut)
	}
	in.mu.buffered += n
	rolls := in.mu.seq // objects rolled so far
	now := in.now()
	in.mu.budget.earn(now, n)
	o := in.mu.cur
	if o != nil && len(o.buf)+int(n) > in.opts.MaxBytes {
		in.rollLocked(now, true)
		o = nil
	}
	if o == nil {
		o = &object{firstAt: now, uploaded: make(chan struct{})}
		o.buf = in.newBufferLocked(int(n))
		in.mu.cur = o
	}
	if need := len(o.buf) + int(n); need > cap(o.buf) {
		o.buf = in.growLocked(o.buf, need)
	}
	for i, b := range batches {
		cb := b.Commit
		if cb.Transactional && o.txnAt.IsZero() {
			o.txnAt = now
		}
		cb.ByteOffset = int64(len(o.buf))
		cb.ByteLength = int32(len(b.Data))
		o.buf = append(o.buf, b.Data...)
		o.batches = append(o.batches, cb)
		o.owners = append(o.owners, owner{p, i})
	}
	o.pendings = append(o.pendings, p)
	if in.opts.EarlyRollWait > 0 {
		in.mu.sources.appended(src, now)
	}
	if in.tracer != nil {
		in.noteRequestLocked(ctx, o)
	}
	in.maybeRollLocked(now)
	rolled := in.mu.seq != rolls // a commit queued, the commit loop woken
	in.mu.Unlock()
	if rolled {
		// The commit loop was made runnable on this processor, behind the
		// caller, and another processor takes it only once woken itself
		// (tens of microseconds on a quiet machine): yield, so that the
		// commit, what the producer waits for, starts now and the caller's
		// own work after Append waits instead. With timestamps added to
		// the produce path for the measurement (not kept), at 100 produces
		// a second, one in flight, the commit began 53-62 us after its
		// object was opened, against 80 without the yield.
		runtime.Gosched()
	}
	return p, nil
}

// maybeRollLocked rolls the open object if it is full, or early if nothing
// is being uploaded (or it holds Options.UploadAheadBytes and fewer than
// MaxUploads are) and the PUT budget allows; otherwise it
// makes sure a timer will roll it. in.mu must be held.
func (in *Ingester) maybeRollLocked(now time.Time) {
	o := in.mu.cur
	if o == nil {
		return
	}
	if len(o.buf) >= in.opts.MaxBytes || now.Sub(o.firstAt) >= in.opts.Linger ||
		!o.txnAt.IsZero() && now.Sub(o.txnAt) >= in.opts.TxnLinger {
		in.rollLocked(now, true)
		return
	}
	// The uploader takes o when it is idle or, o large enough, beside the
	// uploads still running (Options.UploadAheadBytes).
	free := in.mu.uploading == 0 || in.opts.UploadAheadBytes > 0 && len(o.buf) >= in.opts.UploadAheadBytes &&
		in.mu.uploading < in.opts.MaxUploads
	ready := free && in.earlyRollReadyLocked(o, now)
	if ready && in.mu.budget.tryTake(now) {
		in.rollLocked(now, false)
		return
	}
	// Wake at the linger deadline, or earlier when the uploader is free
	// and an early roll becomes possible: when the budget refills, and not
	// before the early roll's wait ends if o is not ready yet. Until then
	// only an append can make o ready (its bytes, or every producer
	// waiting), and an append checks again; a wake at the budget's refill
	// alone would find o not ready and arm the timer at 0 again, a loop
	// that spun for every object's wait (onTimer was 23% of a soak broker's
	// CPU profile).
	d := o.firstAt.Add(in.opts.Linger).Sub(now)
	if !o.txnAt.IsZero() {
		d = min(d, o.txnAt.Add(in.opts.TxnLinger).Sub(now))
	}
	if free {
		early := in.mu.budget.wait(now)
		if !ready {
			early = max(early, o.firstAt.Add(in.opts.EarlyRollWait).Sub(now))
		}
		d = min(d, early)
	}
	d = max(d, 0)
	if in.mu.timer == nil {
		in.mu.timer = time.AfterFunc(d, in.onTimer)
	} else {
		in.mu.timer.Reset(d)
	}
}

// earlyRollReadyLocked reports whether o may roll early, before its
// linger, as far as Options.EarlyRollWait goes: at once without it; with
// it, once o holds EarlyRollBytes, has waited EarlyRollWait, or every
// producer still sending waits for its answers (sources.allWaiting).
// in.mu must be held.
func (in *Ingester) earlyRollReadyLocked(o *object, now time.Time) bool {
	w := in.opts.EarlyRollWait
	return w <= 0 || len(o.buf) >= in.opts.EarlyRollBytes || now.Sub(o.firstAt) >= w ||
		in.mu.sources.allWaiting(now, w)
}

func (in *Ingester) onTimer() {
	in.wakes.Add(1)
	in.mu.Lock()
	defer in.mu.Unlock()
	in.maybeRollLocked(in.now())
}

// rollLocked closes the open object and starts its upload. spend says the
// roll is forced (size, linger, close) and takes a PUT token regardless.
// in.mu must be held.
func (in *Ingester) rollLocked(now time.Time, spend bool) {
	o := in.mu.cur
	if o == nil {
		return
	}
	in.mu.cur = nil
	if in.mu.timer != nil {
		in.mu.timer.Stop()
	}
	if spend {
		in.mu.budget.spend(now)
	}
	in.mu.seq++
	o.seq = in.mu.seq
	id, err := uuid.NewV7()
	if err != nil {
		id = uuid.New()
	}
	o.key = coordapi.WALKey(in.opts.Prefix, id.String())
	if in.tracer != nil {
		in.startObjectSpanLocked(o, now)
	}
	in.mu.active++
	in.mu.uploading++
	in.mu.lastSize = len(o.buf)
	in.mu.queue = append(in.mu.queue, o) // commits follow roll order
	select {
	case in.commitReady <- struct{}{}:
	default:
	}
	if len(o.buf) <= in.opts.InlineMax && in.mu.inlineBudget.tryTakeN(now, float64(len(o.buf))) {
		// Its commit carries it (commitObject), and counts as its upload
		// until it ends (finish): the next object fills meanwhile, as it
		// does during an upload, so commits stay few under load. The
		// chunk cache gets it once its producers are answered (finish):
		// until then the coordinator's staged copy serves its reads.
		o.inline = true
		close(o.uploaded)
		return
	}
	go in.upload(o)
}

// newBufferLocked returns an empty object buffer for a first append of n
// bytes, sized from the last object so that each batch is copied once
// instead of regrowing the buffer: a recycled full-size buffer when the last
// object was large, else a right-sized new one, of a page at least. Not
// more: at low load an object is one small produce, and an inline one's
// buffer is kept by the coordinator until it is written (up to 256 of
// them), so a 64 KiB floor zeroed and held 64 KiB for each 1 KiB produce.
// in.mu must be held.
func (in *Ingester) newBufferLocked(n int) []byte {
	want := min(max(n, in.mu.lastSize+in.mu.lastSize/4, 4<<10), in.opts.MaxBytes+n)
	if want < in.opts.MaxBytes/2 {
		return in.bufs.Get(want)[:0]
	}
	if b, ok := in.bigBufs.Get().(*[]byte); ok && cap(*b) >= n {
		return (*b)[:0]
	}
	return make([]byte, 0, max(n, in.opts.MaxBytes+in.opts.MaxBytes/8))
}

// growLocked returns a buffer of at least need bytes' capacity holding
// buf's bytes, twice buf's capacity at least, and recycles buf, which no
// one else holds yet (its object is still filling). in.mu must be held.
func (in *Ingester) growLocked(buf []byte, need int) []byte {
	grown := in.bufs.Get(max(need, 2*cap(buf)))[:len(buf)]
	copy(grown, buf)
	in.recycle(buf)
	return grown
}

// recycle gives buf back to the pool of its size.
func (in *Ingester) recycle(buf []byte) {
	if cap(buf) >= in.opts.MaxBytes {
		buf = buf[:0]
		in.bigBufs.Put(&buf)
		return
	}
	in.bufs.Put(buf)
}

// upload puts o, retrying transient failures within UploadTimeout.
func (in *Ingester) upload(o *object) {
	in.uploadSlots <- struct{}{}
	defer func() { <-in.uploadSlots }()
	ctx, cancel := context.WithTimeout(context.Background(), in.opts.UploadTimeout)
	defer cancel()
	ctx, span := in.childSpan(ctx, o, "objectstore.put")
	backoff := 50 * time.Millisecond
	for attempt := 1; ; attempt++ {
		err := in.store.Put(ctx, o.key, o.buf)
		if err == nil {
			if in.cache != nil {
				in.cache.Put(o.key, o.buf)
			}
			break
		}
		if attempt == 3 || ctx.Err() != nil {
			o.uploadErr = fmt.Errorf("upload object %s: %w", o.key, err)
			break
		}
		in.log.Warn("object upload failed, retrying", "key", o.key, "attempt", attempt, "err", err)
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
		}
		backoff *= 2
	}
	endSpan(span, o.uploadErr)
	close(o.uploaded)
	in.mu.Lock()
	in.mu.uploading--
	if !in.mu.closed {
		in.maybeRollLocked(in.now())
	}
	in.mu.Unlock()
}

// commitLoop commits uploaded objects strictly in roll order.
func (in *Ingester) commitLoop() {
	defer in.committerWG.Done()
	defer func() {
		if in.nextCommit.cancel != nil {
			in.nextCommit.cancel()
		}
	}()
	for {
		in.mu.Lock()
		var o *object
		if len(in.mu.queue) > 0 {
			o = in.mu.queue[0]
			in.mu.queue[0] = nil
			in.mu.queue = in.mu.queue[1:]
		}
		done := in.mu.closed && in.mu.active == 0
		in.mu.Unlock()
		if o == nil {
			if done {
				return
			}
			<-in.commitReady
			continue
		}
		<-o.uploaded
		ctx, cancel := in.commitContext()
		took, committed := in.commitObject(ctx, o)
		cancel()
		in.finish(o, committed)
		// Recorded once the producers are answered, not before: an
		// instrument takes a few microseconds on a quiet broker. So is the
		// next commit's context made.
		in.objectBytes.Record(context.Background(), int64(len(o.buf)))
		if took > 0 {
			in.commitDuration.Record(context.Background(), took.Seconds())
		}
		in.prepareCommitContext()
	}
}

// maxCommitContextAge is how long a context the commit loop made ahead
// stays good for a commit.
const maxCommitContextAge = time.Second

// preparedContext is a commit's context made ahead of its commit, with
// CommitTimeout+maxCommitContextAge to run.
type preparedContext struct {
	ctx    context.Context
	cancel context.CancelFunc
}

// prepareCommitContext makes the next commit's context, off a produce's
// path: a context.WithTimeout took several microseconds of a quiet
// broker's time, before the commit. Only the commit loop calls it.
func (in *Ingester) prepareCommitContext() {
	if in.nextCommit.ctx != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), in.opts.CommitTimeout+maxCommitContextAge)
	in.nextCommit = preparedContext{ctx, cancel}
}

// commitContext returns a commit's context, bounded by CommitTimeout: the
// one made ahead while it has at least CommitTimeout left (the commit then
// has up to maxCommitContextAge more), else a new one. Only the commit loop
// calls it.
func (in *Ingester) commitContext() (context.Context, context.CancelFunc) {
	p := in.nextCommit
	in.nextCommit = preparedContext{}
	if p.ctx != nil {
		if d, _ := p.ctx.Deadline(); time.Until(d) >= in.opts.CommitTimeout {
			return p.ctx, p.cancel
		}
		p.cancel()
	}
	return context.WithTimeout(context.Background(), in.opts.CommitTimeout)
}

// commitObject commits o and sets its Pendings' outcomes, and returns how
// long the commit took (0 when o's upload had failed, and nothing was
// asked of the coordinator) and whether it committed.
func (in *Ingester) commitObject(ctx context.Context, o *object) (took time.Duration, committed bool) {
	if o.uploadErr != nil {
		in.log.Error("object upload failed", "key", o.key, "err", o.uploadErr)
		in.failAll(o, kerr.KafkaStorageError)
		return 0, false
	}
	req := &coordapi.CommitRequest{
		ObjectKey:  o.key,
		ObjectSize: int64(len(o.buf)),
		BrokerID:   in.opts.BrokerID,
		Batches:    o.batches,
	}
	if o.inline {
		// The coordinator keeps it until it is written: never a recycled
		// buffer (finish), and not a large one for a few bytes.
		req.Inline, o.lent = o.buf, true
		if cap(o.buf) >= in.opts.MaxBytes {
			req.Inline, o.lent = slices.Clone(o.buf), false
		}
	}
	ctx, span := in.childSpan(ctx, o, "coordinator.commit")
	start := time.Now()
	resp, err := in.coord.CommitObject(ctx, req)
	took = time.Since(start)
	endSpan(span, err)
	if err == nil && len(resp.Results) != len(o.batches) {
		err = fmt.Errorf("coordinator answered %d results for %d batches", len(resp.Results), len(o.batches))
	}
	if err != nil {
		in.log.Error("object commit failed", "key", o.key, "err", err)
		var ke *kerr.Error
		if errors.As(err, &ke) && ke.Retriable {
			in.failAll(o, ke)
		} else if errors.Is(err, context.DeadlineExceeded) {
			in.failAll(o, kerr.RequestTimedOut)
		} else {
			in.failAll(o, kerr.KafkaStorageError)
		}
		return took, false
	}
	for i, r := range resp.Results {
		ow := o.owners[i]
		ow.p.results[ow.idx] = r
	}
	in.committed.Add(int64(len(o.buf)))
	return took, true
}

// Committed returns the bytes of the objects committed so far: what the
// tier jobs' pace follows (tiered.ConsolidatorOptions.Ingested).
func (in *Ingester) Committed() int64 { return in.committed.Load() }

func (in *Ingester) failAll(o *object, err *kerr.Error) {
	for _, p := range o.pendings {
		p.err = err
	}
}

// finish completes o's Pendings, returns its bytes to the buffer budget,
// and lets the next object roll early. committed says the coordinator
// committed it.
func (in *Ingester) finish(o *object, committed bool) {
	if o.span != nil {
		o.span.SetAttributes(attribute.Bool("floe.object.committed", committed))
		if !committed {
			o.span.SetStatus(codes.Error, "not committed")
		}
		o.span.End()
	}
	if in.opts.EarlyRollWait > 0 {
		// Before the answers, so that a producer's next request never
		// finds this one still counted in flight: its peak would be one
		// too many, and its early rolls would wait for a request it will
		// not send.
		in.mu.Lock()
		for _, p := range o.pendings {
			in.mu.sources.answered(p.src)
		}
		in.mu.Unlock()
	}
	for _, p := range o.pendings {
		close(p.done)
	}
	// The books first: a produce that comes meanwhile rolls its object at
	// once only if it sees this one done.
	in.mu.Lock()
	in.mu.buffered -= int64(len(o.buf))
	close(in.mu.roomFreed)
	in.mu.roomFreed = make(chan struct{})
	in.mu.active--
	if o.inline {
		in.mu.uploading-- // see upload
	}
	if in.mu.closed {
		if in.mu.cur != nil {
			in.rollLocked(in.now(), true)
		}
		if in.mu.active == 0 && in.mu.idle != nil {
			close(in.mu.idle) // Close still waits for this loop to end
			in.mu.idle = nil
		}
	} else {
		in.maybeRollLocked(in.now())
	}
	in.mu.Unlock()
	if o.inline && committed && in.cache != nil {
		// After the producers' goroutines are made runnable (an uploaded
		// object's goes in before its commit, in upload), before its
		// buffer is recycled, and before the yield below: consumers woken
		// by the commit's notices read it next, and a read that misses the
		// cache costs them more than the put costs a producer.
		in.cache.Put(o.key, o.buf)
	}
	if len(o.pendings) > 0 {
		// The producers' goroutines were made runnable on this processor,
		// behind this one (as the commit loop is in Append): yield, so that
		// their answers go out now and what follows waits.
		runtime.Gosched()
	}
	if !o.lent {
		in.recycle(o.buf)
	}
}

// Buffered returns the bytes appended but not yet committed.
func (in *Ingester) Buffered() int64 {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.mu.buffered
}

// Close stops taking batches, rolls the open object, and waits until every
// rolled object is committed (or failed), or ctx ends.
func (in *Ingester) Close(ctx context.Context) error {
	in.mu.Lock()
	if in.mu.closed {
		in.mu.Unlock()
		return nil
	}
	in.mu.closed = true
	if in.mu.timer != nil {
		in.mu.timer.Stop()
	}
	in.rollLocked(in.now(), true)
	var idle chan struct{}
	if in.mu.active > 0 {
		idle = make(chan struct{})
		in.mu.idle = idle
	}
	in.mu.Unlock()
	if idle != nil {
		select {
		case <-idle:
		case <-ctx.Done():
			return fmt.Errorf("drain ingest: %w", ctx.Err())
		}
	}
	select {
	case in.commitReady <- struct{}{}:
	default:
	}
	in.committerWG.Wait()
	return nil
}
