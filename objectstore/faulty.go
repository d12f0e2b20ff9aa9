package objectstore

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"
)

// ErrInjected is wrapped by every error Faulty makes up, so tests can tell
// an injected fault from a real one with errors.Is.
var ErrInjected = errors.New("objectstore: injected fault")

// FaultOptions says which faults a Faulty injects. The zero value injects
// nothing. Rates are probabilities per call: <= 0 never, >= 1 always.
type FaultOptions struct {
	// Seed seeds the random choices (rates and jitter), so a test that
	// issues calls in a fixed order sees the same faults every run.
	// Default: 0, itself a fixed seed.
	Seed uint64

	// PutErrorRate fails a Put before it reaches the inner store.
	PutErrorRate float64
	// GetErrorRate fails a GetRange.
	GetErrorRate float64
	// DeleteErrorRate fails a Delete before it reaches the inner store.
	DeleteErrorRate float64
	// ListErrorRate fails a List.
	ListErrorRate float64
	// HeadErrorRate fails a Head.
	HeadErrorRate float64

	// AmbiguousPutRate makes a Put write the object and then return an
	// error anyway, like a timeout after the upload completed. Callers
	// must not assume a failed Put wrote nothing.
	AmbiguousPutRate float64

	// FailNextPuts fails the next n Puts without writing, before any rate
	// applies.
	FailNextPuts int
	// AmbiguousNextPuts makes the next n Puts that are not failed write
	// the object and return an error.
	AmbiguousNextPuts int

	// Latency delays every call by Latency plus a uniformly random
	// duration in [0, LatencyJitter). A call whose ctx ends while it
	// waits returns the context's error.
	Latency       time.Duration
	LatencyJitter time.Duration
}

// FaultStats counts the calls a Faulty saw and the faults it injected.
type FaultStats struct {
	Puts, Gets, Deletes, Lists, Heads int64 // calls, failed or not

	PutErrors, GetErrors, DeleteErrors, ListErrors, HeadErrors int64 // injected failures
	AmbiguousPuts                                              int64 // puts written, then failed anyway
}

// Faulty wraps a Store and injects errors and latency, for tests. It is
// safe for concurrent use; its faults can be changed while it runs.
type Faulty struct {
	inner Store
	mu    struct {
		sync.Mutex
		opts  FaultOptions
		rng   *rand.Rand
		stats FaultStats
	}
}

var _ Store = (*Faulty)(nil)

// NewFaulty returns a Store that passes calls to inner and injects the
// faults opts describes.
func NewFaulty(inner Store, opts FaultOptions) *Faulty {
	f := &Faulty{inner: inner}
	f.mu.opts = opts
	f.mu.rng = rand.New(rand.NewPCG(opts.Seed, opts.Seed^0x9e3779b97f4a7c15))
	return f
}

// Inner returns the wrapped store, to inspect it without faults.
func (f *Faulty) Inner() Store { return f.inner }

// SetOptions replaces every fault setting at once; the random sequence and
// the counters carry on.
func (f *Faulty) SetOptions(opts FaultOptions) {
	f.mu.Lock()
	f.mu.opts = opts
	f.mu.Unlock()
}

// Options returns the current fault settings, with the remaining
// FailNextPuts and AmbiguousNextPuts.
func (f *Faulty) Options() FaultOptions {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.mu.opts
}

// Heal stops all faults and latency; the counters are kept.
func (f *Faulty) Heal() { f.update(func(o *FaultOptions) { *o = FaultOptions{Seed: o.Seed} }) }

// SetPutErrorRate sets the probability that a Put fails without writing.
func (f *Faulty) SetPutErrorRate(r float64) { f.update(func(o *FaultOptions) { o.PutErrorRate = r }) }

// SetGetErrorRate sets the probability that a GetRange fails.
func (f *Faulty) SetGetErrorRate(r float64) { f.update(func(o *FaultOptions) { o.GetErrorRate = r }) }

// SetDeleteErrorRate sets the probability that a Delete fails.
func (f *Faulty) SetDeleteErrorRate(r float64) {
	f.update(func(o *FaultOptions) { o.DeleteErrorRate = r })
}

// SetListErrorRate sets the probability that a List fails.
func (f *Faulty) SetListErrorRate(r float64) { f.update(func(o *FaultOptions) { o.ListErrorRate = r }) }

// SetHeadErrorRate sets the probability that a Head fails.
func (f *Faulty) SetHeadErrorRate(r float64) { f.update(func(o *FaultOptions) { o.HeadErrorRate = r }) }

// SetAmbiguousPutRate sets the probability that a Put writes the object
// and returns an error anyway.
func (f *Faulty) SetAmbiguousPutRate(r float64) {
	f.update(func(o *FaultOptions) { o.AmbiguousPutRate = r })
}

// SetLatency delays every call by fixed plus a random duration in
// [0, jitter).
func (f *Faulty) SetLatency(fixed, jitter time.Duration) {
	f.update(func(o *FaultOptions) { o.Latency, o.LatencyJitter = fixed, jitter })
}

// FailNextPuts makes the next n Puts fail without writing.
func (f *Faulty) FailNextPuts(n int) { f.update(func(o *FaultOptions) { o.FailNextPuts = n }) }

// AmbiguousNextPuts makes the next n Puts write the object and return an
// error anyway.
func (f *Faulty) AmbiguousNextPuts(n int) {
	f.update(func(o *FaultOptions) { o.AmbiguousNextPuts = n })
}

// Stats returns the counters so far.
func (f *Faulty) Stats() FaultStats {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.mu.stats
}

// update changes the options under the lock.
func (f *Faulty) update(fn func(*FaultOptions)) {
	f.mu.Lock()
	fn(&f.mu.opts)
	f.mu.Unlock()
}

// Put fails, writes, or writes and fails, as the options say.
func (f *Faulty) Put(ctx context.Context, key string, data []byte) error {
	ambiguous, err := f.beforePut(ctx, key)
	if err != nil {
		return err
	}
	if err := f.inner.Put(ctx, key, data); err != nil {
		return err
	}
	return f.afterPut(key, ambiguous)
}

// beforePut counts a Put (or an upload's Commit), waits out its latency
// and decides whether it fails, or writes and then fails (ambiguous).
func (f *Faulty) beforePut(ctx context.Context, key string) (ambiguous bool, err error) {
	f.mu.Lock()
	f.mu.stats.Puts++
	delay := f.delayLocked()
	var fail bool
	switch o := &f.mu.opts; {
	case o.FailNextPuts > 0:
		o.FailNextPuts--
		fail = true
	case f.rollLocked(o.PutErrorRate):
		fail = true
	case o.AmbiguousNextPuts > 0:
		o.AmbiguousNextPuts--
		ambiguous = true
	case f.rollLocked(o.AmbiguousPutRate):
		ambiguous = true
	}
	if fail {
		f.mu.stats.PutErrors++
	}
	f.mu.Unlock()

	if err := sleep(ctx, delay); err != nil {
		return false, fmt.Errorf("put %s: %w", key, err)
	}
	if fail {
		return false, fmt.Errorf("put %s: %w", key, ErrInjected)
	}
	return ambiguous, nil
}

// afterPut fails a Put that wrote key when beforePut made it ambiguous.
func (f *Faulty) afterPut(key string, ambiguous bool) error {
	if !ambiguous {
		return nil
	}
	f.mu.Lock()
	f.mu.stats.AmbiguousPuts++
	f.mu.Unlock()
	return fmt.Errorf("put %s: %w (ambiguous: the object was written)", key, ErrInjected)
}

// NewUpload starts an upload on the inner store (NewUpload) whose Commit
// fails, writes, or writes and fails as Put does, counted as a Put.
func (f *Faulty) NewUpload(ctx context.Context, key string) (Upload, error) {
	u, err := NewUpload(ctx, f.inner, key)
	if err != nil {
		return nil, err
	}
	return &faultyUpload{f: f, key: key, Upload: u}, nil
}

var _ Uploader = (*Faulty)(nil)

// faultyUpload is Faulty's Upload: the inner store's, with Put's faults at
// Commit.
type faultyUpload struct {
	f   *Faulty
	key string
	Upload
}

func (u *faultyUpload) Commit(ctx context.Context) error {
	ambiguous, err := u.f.beforePut(ctx, u.key)
	if err != nil {
		return err
	}
	if err := u.Upload.Commit(ctx); err != nil {
		return err
	}
	return u.f.afterPut(u.key, ambiguous)
}

// GetRange fails or passes through to the inner store.
func (f *Faulty) GetRange(ctx context.Context, key string, offset, length int64) ([]byte, error) {
	if err := f.before(ctx, opGet, key); err != nil {
		return nil, err
	}
	return f.inner.GetRange(ctx, key, offset, length)
}

// Delete fails or passes through to the inner store.
func (f *Faulty) Delete(ctx context.Context, key string) error {
	if err := f.before(ctx, opDelete, key); err != nil {
		return err
	}
	return f.inner.Delete(ctx, key)
}

// List fails or passes through to the inner store.
func (f *Faulty) List(ctx context.Context, prefix string) ([]ObjectInfo, error) {
	if err := f.before(ctx, opList, prefix); err != nil {
		return nil, err
	}
	return f.inner.List(ctx, prefix)
}

// Head fails or passes through to the inner store.
func (f *Faulty) Head(ctx context.Context, key string) (ObjectInfo, error) {
	if err := f.before(ctx, opHead, key); err != nil {
		return ObjectInfo{}, err
	}
	return f.inner.Head(ctx, key)
}

// faultOp names the operations other than Put, which has its own logic.
type faultOp int

const (
	opGet faultOp = iota
	opDelete
	opList
	opHead
)

// before counts a call of op, waits out its latency and decides whether
// it fails.
func (f *Faulty) before(ctx context.Context, op faultOp, key string) error {
	f.mu.Lock()
	st, o := &f.mu.stats, &f.mu.opts
	var name string
	var calls, errs *int64
	var rate float64
	switch op {
	case opGet:
		name, calls, errs, rate = "get", &st.Gets, &st.GetErrors, o.GetErrorRate
	case opDelete:
		name, calls, errs, rate = "delete", &st.Deletes, &st.DeleteErrors, o.DeleteErrorRate
	case opList:
		name, calls, errs, rate = "list", &st.Lists, &st.ListErrors, o.ListErrorRate
	case opHead:
		name, calls, errs, rate = "head", &st.Heads, &st.HeadErrors, o.HeadErrorRate
	}
	*calls++
	delay := f.delayLocked()
	fail := f.rollLocked(rate)
	if fail {
		*errs++
	}
	f.mu.Unlock()

	if err := sleep(ctx, delay); err != nil {
		return fmt.Errorf("%s %s: %w", name, key, err)
	}
	if fail {
		return fmt.Errorf("%s %s: %w", name, key, ErrInjected)
	}
	return nil
}

// rollLocked reports true with probability rate. It draws from the random
// sequence only when 0 < rate < 1, so that settings at 0 or 1 do not
// shift the faults other settings see. f.mu must be held.
func (f *Faulty) rollLocked(rate float64) bool {
	switch {
	case rate <= 0:
		return false
	case rate >= 1:
		return true
	}
	return f.mu.rng.Float64() < rate
}

// delayLocked returns the latency for one call. f.mu must be held.
func (f *Faulty) delayLocked() time.Duration {
	d := f.mu.opts.Latency
	if j := f.mu.opts.LatencyJitter; j > 0 {
		d += time.Duration(f.mu.rng.Int64N(int64(j)))
	}
	return d
}

// sleep waits for d or until ctx ends, whichever is first.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
