package objectstore

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// Instrumented wraps a Store and records every call: requests by operation
// and outcome (floe_objectstore_requests_total), bytes moved, and latency.
// These are the figures behind "object-store requests per GiB".
//
// Requests and bytes are counted in atomics that the meter reads when it
// collects (observable counters), not with a synchronous instrument per
// call: Stage is on the produce path, where a synchronous OTel counter
// took a few microseconds of a quiet broker's time, and a count needs no
// more than an atomic add. Latency stays a histogram, recorded per call,
// except for Stage, a copy into memory whose latency says nothing.
type Instrumented struct {
	inner    Store
	duration metric.Float64Histogram
	ops      map[string]*opStats // fixed by Instrument
}

// opStats are one operation's counts and attribute sets: op and outcome
// for requests, op alone for bytes and latency.
type opStats struct {
	ok, failed, bytes atomic.Int64
	okSet, failedSet  metric.ObserveOption
	opSet             metric.MeasurementOption
}

// Instrument wraps s with metrics on m.
func Instrument(s Store, m metric.Meter) *Instrumented {
	in := &Instrumented{inner: s, ops: make(map[string]*opStats)}
	requests, _ := m.Int64ObservableCounter("floe.objectstore.requests", metric.WithUnit("{request}"),
		metric.WithDescription("Object store requests by operation and outcome."))
	bytes, _ := m.Int64ObservableCounter("floe.objectstore.bytes", metric.WithUnit("By"),
		metric.WithDescription("Bytes written (put, upload, stage) and read (get) from the object store."))
	in.duration, _ = m.Float64Histogram("floe.objectstore.request.duration", metric.WithUnit("s"),
		metric.WithDescription("Object store request latency by operation."))
	for _, op := range []string{"put", "upload", "stage", "persist", "get", "delete", "list", "head"} {
		in.ops[op] = &opStats{
			okSet:     metric.WithAttributeSet(attribute.NewSet(attribute.String("op", op), attribute.String("outcome", "ok"))),
			failedSet: metric.WithAttributeSet(attribute.NewSet(attribute.String("op", op), attribute.String("outcome", "error"))),
			opSet:     metric.WithAttributeSet(attribute.NewSet(attribute.String("op", op))),
		}
	}
	// Only counts that moved are reported, as a synchronous counter
	// reports only the attribute sets it was given.
	_, _ = m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		for _, s := range in.ops {
			if v := s.ok.Load(); v > 0 {
				o.ObserveInt64(requests, v, s.okSet)
			}
			if v := s.failed.Load(); v > 0 {
				o.ObserveInt64(requests, v, s.failedSet)
			}
			if v := s.bytes.Load(); v > 0 {
				o.ObserveInt64(bytes, v, s.opSet)
			}
		}
		return nil
	}, requests, bytes)
	return in
}

// count counts one call of op.
func (in *Instrumented) count(op string, n int, err error) *opStats {
	s := in.ops[op]
	if err != nil {
		s.failed.Add(1)
	} else {
		s.ok.Add(1)
		if n > 0 {
			s.bytes.Add(int64(n))
		}
	}
	return s
}

func (in *Instrumented) record(ctx context.Context, op string, start time.Time, n int, err error) {
	s := in.count(op, n, err)
	in.duration.Record(ctx, time.Since(start).Seconds(), s.opSet)
}

// Put implements Store.
func (in *Instrumented) Put(ctx context.Context, key string, data []byte) error {
	start := time.Now()
	err := in.inner.Put(ctx, key, data)
	in.record(context.WithoutCancel(ctx), "put", start, len(data), err)
	return err
}

// Stage stages data under key when the wrapped store can (Dir.Stage),
// counted as op "stage" (no latency: see Instrumented); else it fails
// with errors.ErrUnsupported.
func (in *Instrumented) Stage(ctx context.Context, key string, data []byte) error {
	st, ok := in.inner.(interface {
		Stage(ctx context.Context, key string, data []byte) error
	})
	if !ok {
		return fmt.Errorf("stage %s: %w", key, errors.ErrUnsupported)
	}
	err := st.Stage(ctx, key, data)
	in.count("stage", len(data), err)
	return err
}

// Persist persists staged objects when the wrapped store can
// (Dir.Persist), recorded as op "persist"; else it fails with
// errors.ErrUnsupported.
func (in *Instrumented) Persist(ctx context.Context, keys []string) error {
	p, ok := in.inner.(interface {
		Persist(ctx context.Context, keys []string) error
	})
	if !ok {
		return fmt.Errorf("persist: %w", errors.ErrUnsupported)
	}
	start := time.Now()
	err := p.Persist(ctx, keys)
	in.record(context.WithoutCancel(ctx), "persist", start, 0, err)
	return err
}

// GetRange implements Store.
func (in *Instrumented) GetRange(ctx context.Context, key string, offset, length int64) ([]byte, error) {
	start := time.Now()
	b, err := in.inner.GetRange(ctx, key, offset, length)
	in.record(context.WithoutCancel(ctx), "get", start, len(b), err)
	return b, err
}

// ReadRangeAt reads into dst with the wrapped store's ReadRangeAt, or its
// GetRange and a copy (the package's ReadRangeAt), counted as op "get".
func (in *Instrumented) ReadRangeAt(ctx context.Context, key string, offset int64, dst []byte) (int, error) {
	start := time.Now()
	n, err := ReadRangeAt(ctx, in.inner, key, offset, dst)
	in.record(context.WithoutCancel(ctx), "get", start, n, err)
	return n, err
}

// ListKeys lists keys with the wrapped store's ListKeys, counted as op
// "list"; a wrapped store without one fails with errors.ErrUnsupported, so
// that callers fall back to List.
func (in *Instrumented) ListKeys(ctx context.Context, prefix string) ([]string, error) {
	kl, ok := in.inner.(KeyLister)
	if !ok {
		return nil, fmt.Errorf("list keys %s: %w", prefix, errors.ErrUnsupported)
	}
	start := time.Now()
	keys, err := kl.ListKeys(ctx, prefix)
	in.record(context.WithoutCancel(ctx), "list", start, 0, err)
	return keys, err
}

// Delete implements Store.
func (in *Instrumented) Delete(ctx context.Context, key string) error {
	start := time.Now()
	err := in.inner.Delete(ctx, key)
	in.record(context.WithoutCancel(ctx), "delete", start, 0, err)
	return err
}

// List implements Store.
func (in *Instrumented) List(ctx context.Context, prefix string) ([]ObjectInfo, error) {
	start := time.Now()
	l, err := in.inner.List(ctx, prefix)
	in.record(context.WithoutCancel(ctx), "list", start, 0, err)
	return l, err
}

// Head implements Store.
func (in *Instrumented) Head(ctx context.Context, key string) (ObjectInfo, error) {
	start := time.Now()
	i, err := in.inner.Head(ctx, key)
	in.record(context.WithoutCancel(ctx), "head", start, 0, err)
	return i, err
}

// NewUpload starts an upload on the wrapped store (NewUpload). A committed
// upload counts as one request of op "upload" with its bytes, and its
// latency is Commit's (the rest is the caller's pace of writing); a failed
// Write or Commit counts as a failed "upload".
func (in *Instrumented) NewUpload(ctx context.Context, key string) (Upload, error) {
	u, err := NewUpload(ctx, in.inner, key)
	if err != nil {
		in.count("upload", 0, err)
		return nil, err
	}
	return &instrumentedUpload{in: in, u: u}, nil
}

var _ Uploader = (*Instrumented)(nil)

// instrumentedUpload counts one Upload.
type instrumentedUpload struct {
	in     *Instrumented
	u      Upload
	n      int
	failed bool
}

func (iu *instrumentedUpload) Write(p []byte) (int, error) {
	n, err := iu.u.Write(p)
	iu.n += n
	if err != nil && !iu.failed {
		iu.failed = true
		iu.in.count("upload", 0, err)
	}
	return n, err
}

func (iu *instrumentedUpload) Commit(ctx context.Context) error {
	start := time.Now()
	err := iu.u.Commit(ctx)
	if !iu.failed {
		iu.failed = err != nil
		iu.in.record(context.WithoutCancel(ctx), "upload", start, iu.n, err)
	}
	return err
}

func (iu *instrumentedUpload) Abort(ctx context.Context) error { return iu.u.Abort(ctx) }
