package ingest

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// Traces of the produce path (package tracing draws them). An object
// carries the batches of many produce requests, so its upload and commit
// belong to no one request: each object is a span of its own,
// ingest.object, the root of its own trace, with the children
// objectstore.put and coordinator.commit, and a link to the span of every
// request whose batches it carries (the span in Append's context); each
// request can link back with Pending.ObjectSpanContext. Without a tracer,
// the default, none of this runs: the paths test a nil tracer or a nil
// span, and allocate nothing.

// SetTracer traces the objects with t (nil: no tracing). Call it before
// the first Append.
func (in *Ingester) SetTracer(t trace.Tracer) { in.tracer = t }

// ObjectSpanContext is the span context of the object that carried the
// batches, once Done is closed; invalid when not traced.
func (p *Pending) ObjectSpanContext() trace.SpanContext {
	if p.object == nil {
		return trace.SpanContext{}
	}
	return p.object.SpanContext()
}

// noteRequestLocked links o to the sampled span in ctx, the produce
// request's. Only with a tracer. in.mu must be held.
func (in *Ingester) noteRequestLocked(ctx context.Context, o *object) {
	if sc := trace.SpanContextFromContext(ctx); sc.IsSampled() {
		o.links = append(o.links, trace.Link{SpanContext: sc, Attributes: []attribute.KeyValue{attribute.String("floe.link", "request")}})
	}
}

// startObjectSpanLocked starts o's span, from its first append, as it rolls,
// and hands it to o's Pendings. Only with a tracer. in.mu must be held.
func (in *Ingester) startObjectSpanLocked(o *object, now time.Time) {
	_, o.span = in.tracer.Start(context.Background(), "ingest.object",
		trace.WithNewRoot(), trace.WithTimestamp(o.firstAt), trace.WithLinks(o.links...),
		trace.WithAttributes(
			attribute.String("floe.object.key", o.key),
			attribute.Int("floe.object.bytes", len(o.buf)),
			attribute.Int("floe.object.batches", len(o.batches)),
			attribute.Int("floe.object.requests", len(o.pendings)),
			attribute.Float64("floe.object.fill_ms", float64(now.Sub(o.firstAt).Microseconds())/1000),
		))
	o.links = nil
	for _, p := range o.pendings {
		p.object = o.span
	}
}

// childSpan starts a span named name under o's, and returns ctx unchanged
// and nil when o is not traced.
func (in *Ingester) childSpan(ctx context.Context, o *object, name string) (context.Context, trace.Span) {
	if o.span == nil {
		return ctx, nil
	}
	return in.tracer.Start(trace.ContextWithSpan(ctx, o.span), name)
}

// endSpan ends span (nil: nothing), recording err as its status.
func endSpan(span trace.Span, err error) {
	if span == nil {
		return
	}
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}
