package objectstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// Instrumented wraps a Store and records every call: requests by operation
// and outcome (floe_objectstore_requests_total), bytes moved, and latency.
// These are the figures behind "object-store requests per GiB".
type Instrumented struct {
	inner    Store
	requests metric.Int64Counter
	bytes    metric.Int64Counter
	duration metric.Float64Histogram
	attrs    map[string]opAttrs
}

type opAttrs struct {
	ok, failed, op metric.MeasurementOption
}

// Instrument wraps s with metrics on m.
func Instrument(s Store, m metric.Meter) *Instrumented {
	in := &Instrumented{inner: s, attrs: make(map[string]opAttrs)}
	in.requests, _ = m.Int64Counter("floe.objectstore.requests", metric.WithUnit("{request}"),
		metric.WithDescription("Object store requests by operation and outcome."))
	in.bytes, _ = m.Int64Counter("floe.objectstore.bytes", metric.WithUnit("By"),
		metric.WithDescription("Bytes written (put) and read (get) from the object store."))
	in.duration, _ = m.Float64Histogram("floe.objectstore.request.duration", metric.WithUnit("s"),
		metric.WithDescription("Object store request latency by operation."))
	for _, op := range []string{"put", "stage", "persist", "get", "delete", "list", "head"} {
		in.attrs[op] = opAttrs{
			ok:     metric.WithAttributeSet(attribute.NewSet(attribute.String("op", op), attribute.String("outcome", "ok"))),
			failed: metric.WithAttributeSet(attribute.NewSet(attribute.String("op", op), attribute.String("outcome", "error"))),
			op:     metric.WithAttributeSet(attribute.NewSet(attribute.String("op", op))),
		}
	}
	return in
}

func (in *Instrumented) record(ctx context.Context, op string, start time.Time, n int, err error) {
	a := in.attrs[op]
	if err != nil {
		in.requests.Add(ctx, 1, a.failed)
	} else {
		in.requests.Add(ctx, 1, a.ok)
		if n > 0 {
			in.bytes.Add(ctx, int64(n), a.op)
		}
	}
	in.duration.Record(ctx, time.Since(start).Seconds(), a.op)
}

// Put implements Store.
func (in *Instrumented) Put(ctx context.Context, key string, data []byte) error {
	start := time.Now()
	err := in.inner.Put(ctx, key, data)
	in.record(context.WithoutCancel(ctx), "put", start, len(data), err)
	return err
}

// Stage stages data under key when the wrapped store can (Dir.Stage),
// recorded as op "stage"; else it fails with errors.ErrUnsupported.
func (in *Instrumented) Stage(ctx context.Context, key string, data []byte) error {
	st, ok := in.inner.(interface {
		Stage(ctx context.Context, key string, data []byte) error
	})
	if !ok {
		return fmt.Errorf("stage %s: %w", key, errors.ErrUnsupported)
	}
	start := time.Now()
	err := st.Stage(ctx, key, data)
	in.record(context.WithoutCancel(ctx), "stage", start, len(data), err)
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
