package objectstore

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// HedgeOptions configure Hedged. The zero value of a field means its
// default.
type HedgeOptions struct {
	// Quantile of the recent latencies of a request's kind (operation and
	// size class) after which a second copy of a request still running is
	// sent beside it (--s3-hedge-quantile). Negative: no hedging.
	// Default: 0.95.
	Quantile float64
	// MinDelay is the shortest wait before a hedge, whatever the recent
	// latencies (--s3-hedge-min-delay): a store slowed by a busy machine
	// rather than by a straggler gains nothing from more requests.
	// Default: 100ms.
	MinDelay time.Duration
	// ColdDelay is the wait before a hedge while a kind has too few
	// samples to estimate its quantile. Default: 1s.
	ColdDelay time.Duration
	// MaxFraction bounds hedges to this share of requests
	// (--s3-hedge-max-fraction), so that a store slow for every request
	// is not sent twice as many. It must leave room above 1-Quantile, the
	// share the quantile itself hedges: at 0.05 with the 0.95 quantile,
	// the slow-tail profile's stragglers (1% of requests, 1-3 s) found the
	// budget spent, and three brokers' produce p99 was 2.4 s; at 0.1, 335
	// ms (scripts/bench-s3-cluster.sh, 2026-12-06). Default: 0.1.
	MaxFraction float64
	// Meter records hedges (floe.objectstore.hedges, by operation and
	// whether the hedge won). Default: no metrics.
	Meter metric.Meter
}

func (o *HedgeOptions) setDefaults() {
	if o.Quantile == 0 {
		o.Quantile = 0.95
	}
	if o.MinDelay == 0 {
		o.MinDelay = 100 * time.Millisecond
	}
	if o.ColdDelay == 0 {
		o.ColdDelay = time.Second
	}
	if o.MaxFraction == 0 {
		o.MaxFraction = 0.1
	}
}

// Hedged wraps a Store whose requests have a long tail (S3): a Put or a
// GetRange still unanswered after the recent latencies' Quantile for its
// kind gets a second, identical request beside it, and the first answer
// wins; the other is cancelled. A Put writes the same bytes under the same
// key both times, so the loser leaves nothing to collect: whichever lands
// last writes what the first wrote. Put returns once the loser has
// returned too, so that the caller may reuse data (S3.Put stops reading it
// when it returns). Other calls pass through.
type Hedged struct {
	Store
	opts  HedgeOptions
	kinds [2][sizeClasses]latencies // [put, get][size class]

	budget struct {
		sync.Mutex
		tokens float64
	}

	hedges  metric.Int64Counter
	setsWon [2][2]metric.AddOption // [op][won]
	// Counts for tests and reports.
	sent, won atomic.Int64
}

// NewHedged wraps s.
func NewHedged(s Store, opts HedgeOptions) *Hedged {
	opts.setDefaults()
	h := &Hedged{Store: s, opts: opts}
	h.budget.tokens = 1
	if opts.Meter != nil {
		h.hedges, _ = opts.Meter.Int64Counter("floe.objectstore.hedges", metric.WithUnit("{request}"),
			metric.WithDescription("Second requests sent beside a slow Put or GetRange, by operation and whether the second answered first."))
		for op, name := range []string{"put", "get"} {
			for won, w := range []string{"false", "true"} {
				h.setsWon[op][won] = metric.WithAttributeSet(attribute.NewSet(attribute.String("op", name), attribute.String("won", w)))
			}
		}
	}
	return h
}

// Hedges returns the hedges sent so far, and how many of them answered
// first.
func (h *Hedged) Hedges() (sent, won int64) { return h.sent.Load(), h.won.Load() }

const (
	hedgePut = iota
	hedgeGet
)

// Put implements Store, hedged.
func (h *Hedged) Put(ctx context.Context, key string, data []byte) error {
	_, err := hedge(h, ctx, hedgePut, int64(len(data)), true, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, h.Store.Put(ctx, key, data)
	})
	return err
}

// GetRange implements Store, hedged.
func (h *Hedged) GetRange(ctx context.Context, key string, offset, length int64) ([]byte, error) {
	return hedge(h, ctx, hedgeGet, length, false, func(ctx context.Context) ([]byte, error) {
		return h.Store.GetRange(ctx, key, offset, length)
	})
}

// attempt is one request's outcome.
type attempt[T any] struct {
	v     T
	err   error
	hedge bool
}

// hedge runs call, and once more beside it if it is slow; the first
// success wins. With waitLoser, it returns only when both calls have.
func hedge[T any](h *Hedged, ctx context.Context, op int, size int64, waitLoser bool, call func(context.Context) (T, error)) (T, error) {
	kind := &h.kinds[op][sizeClass(size)]
	h.earn()
	results := make(chan attempt[T], 2)
	start := time.Now()
	launch := func(hedge bool) context.CancelFunc {
		actx, cancel := context.WithCancel(ctx)
		go func() {
			v, err := call(actx)
			results <- attempt[T]{v: v, err: err, hedge: hedge}
		}()
		return cancel
	}
	cancels := []context.CancelFunc{launch(false)}
	defer func() {
		for _, c := range cancels {
			c()
		}
	}()

	var delay time.Duration
	if h.opts.Quantile > 0 {
		delay = max(h.opts.MinDelay, kind.quantile(h.opts.Quantile, h.opts.ColdDelay))
	}
	var timer <-chan time.Time
	if delay > 0 {
		t := time.NewTimer(delay)
		defer t.Stop()
		timer = t.C
	}

	running := 1
	var first attempt[T]
	haveFirst := false
	for running > 0 {
		select {
		case <-timer:
			timer = nil
			if ctx.Err() == nil && h.spend() {
				h.sent.Add(1)
				cancels = append(cancels, launch(true))
				running++
			}
			continue
		case a := <-results:
			running--
			if a.err == nil {
				// What the caller waited, whichever answered: when a
				// hedge wins, the first request took longer still, so
				// leaving the sample out (as an earlier version did)
				// kept only the requests faster than the hedge delay,
				// and the quantile, and with it the delay, drifted down.
				kind.add(time.Since(start))
				if len(cancels) > 1 {
					h.record(op, a.hedge)
				}
				for _, c := range cancels {
					c() // the other request, if any, is not needed
				}
				if waitLoser {
					for ; running > 0; running-- {
						<-results
					}
				}
				return a.v, nil
			}
			if !haveFirst {
				first, haveFirst = a, true
			}
			// A failure: the other request, if one runs, may still
			// succeed; without one, hedge no more.
			timer = nil
		}
	}
	return first.v, first.err
}

// record counts a hedged request's outcome.
func (h *Hedged) record(op int, hedgeWon bool) {
	won := 0
	if hedgeWon {
		won = 1
		h.won.Add(1)
	}
	if h.hedges != nil {
		h.hedges.Add(context.Background(), 1, h.setsWon[op][won])
	}
}

// earn adds a request's share of hedges to the budget (at most a burst of
// 10); spend takes one hedge from it.
func (h *Hedged) earn() {
	h.budget.Lock()
	h.budget.tokens = min(h.budget.tokens+h.opts.MaxFraction, 10)
	h.budget.Unlock()
}

func (h *Hedged) spend() bool {
	h.budget.Lock()
	defer h.budget.Unlock()
	if h.budget.tokens < 1 {
		return false
	}
	h.budget.tokens--
	return true
}

// sizeClasses are the latency kinds by request size: up to 256 KiB, 1, 4
// and 16 MiB, and larger (or unknown, for a read to the end). A large PUT
// takes longer than a small one, and a hedge must not fire on every one.
const sizeClasses = 5

func sizeClass(size int64) int {
	if size < 0 {
		return sizeClasses - 1
	}
	c := 0
	for limit := int64(256 << 10); c < sizeClasses-1 && size > limit; limit <<= 2 {
		c++
	}
	return c
}

// latencies keeps a kind's recent successful latencies and their
// quantile, recomputed every few samples.
type latencies struct {
	mu     sync.Mutex
	ring   [latencySamples]time.Duration
	n      int           // samples added in all
	cached time.Duration // the quantile at the last recompute
	stale  int           // samples since the last recompute
}

const (
	latencySamples = 256
	minSamples     = 32
	recomputeEvery = 16
)

func (l *latencies) add(d time.Duration) {
	l.mu.Lock()
	l.ring[l.n%latencySamples] = d
	l.n++
	l.stale++
	l.mu.Unlock()
}

// quantile returns the q-quantile of the recent samples, or cold while
// there are fewer than minSamples.
func (l *latencies) quantile(q float64, cold time.Duration) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.n < minSamples {
		return cold
	}
	if l.stale >= recomputeEvery { // always, at the first minSamples
		s := slices.Clone(l.ring[:min(l.n, latencySamples)])
		slices.Sort(s)
		l.cached, l.stale = s[min(int(q*float64(len(s))), len(s)-1)], 0
	}
	return l.cached
}

// NewUpload starts an upload on the wrapped store (NewUpload), unhedged: a
// stream cannot be sent twice without holding it whole, and the uploads
// that stream (tier jobs' segments) are not on a path that waits for them.
func (h *Hedged) NewUpload(ctx context.Context, key string) (Upload, error) {
	return NewUpload(ctx, h.Store, key)
}

var _ Uploader = (*Hedged)(nil)
