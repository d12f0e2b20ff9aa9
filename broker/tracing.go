package broker

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/ingest"
	"github.com/floe-io/floe/record"
)

// Traces (package tracing draws the spans). With Options.Tracer nil, the
// default, nothing here runs: the connection tests the tracer once per
// request and a request's span once per step, and makes no span, context
// or allocation.

// startRequestSpan starts the server span of r, a Produce or a Fetch (other
// requests are not traced), and returns the context its handler runs in.
// A Produce whose first record of its first batch has a traceparent header
// is a child of that trace (W3C trace context, as OTel's Kafka
// instrumentations write it into each record).
func (b *Broker) startRequestSpan(ctx context.Context, r *request) context.Context {
	var name string
	attrs := []attribute.KeyValue{attribute.String("messaging.system", "kafka"), attribute.Int("kafka.api.version", int(r.version))}
	if r.clientID != nil {
		attrs = append(attrs, attribute.String("messaging.client.id", *r.clientID))
	}
	parent := ctx
	switch req := r.req.(type) {
	case *kmsg.ProduceRequest:
		name = "kafka.produce"
		parent = produceTraceContext(ctx, req)
		attrs = append(attrs, attribute.String("messaging.operation.type", "send"), attribute.Int("floe.topics", len(req.Topics)))
		if len(req.Topics) == 1 {
			attrs = append(attrs, attribute.String("messaging.destination.name", req.Topics[0].Topic))
		}
	case *kmsg.FetchRequest:
		name = "kafka.fetch"
		attrs = append(attrs, attribute.String("messaging.operation.type", "receive"), attribute.Int("floe.topics", len(req.Topics)),
			attribute.Int("kafka.max_wait_ms", int(req.MaxWaitMillis)))
		if len(req.Topics) == 1 {
			attrs = append(attrs, attribute.String("messaging.destination.name", req.Topics[0].Topic))
		}
	default:
		return ctx
	}
	ctx, r.span = b.opts.Tracer.Start(parent, name, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
	return ctx
}

// produceTraceContext returns ctx with the remote span context of req's
// first record's traceparent (and tracestate) header, if it has one: the
// first record of the first batch of the first partition stands for the
// request, whose records may come from many traces. Only that record is
// decoded (record.RecordAt), with nothing before or after it.
func produceTraceContext(ctx context.Context, req *kmsg.ProduceRequest) context.Context {
	if len(req.Topics) == 0 || len(req.Topics[0].Partitions) == 0 {
		return ctx
	}
	var carrier propagation.MapCarrier
	for batch, err := range record.Batches(req.Topics[0].Partitions[0].Records) {
		if err != nil {
			return ctx
		}
		_ = record.RecordAt(batch, 0, func(rec *record.Record) error {
			for _, h := range rec.Headers {
				if h.Key == "traceparent" || h.Key == "tracestate" {
					if carrier == nil {
						carrier = propagation.MapCarrier{}
					}
					carrier[h.Key] = string(h.Value)
				}
			}
			return nil
		})
		break // the first batch only
	}
	if carrier["traceparent"] == "" {
		return ctx
	}
	return propagation.TraceContext{}.Extract(ctx, carrier)
}

// childSpan starts a span named name under r's request span, and returns
// ctx unchanged and a nil span when r is not traced.
func (b *Broker) childSpan(ctx context.Context, r *request, name string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	if r.span == nil {
		return ctx, nil
	}
	return b.opts.Tracer.Start(ctx, name, trace.WithAttributes(attrs...))
}

// tracedAppend is Appender.AppendFrom inside an ingest.append span. ctx
// carries the request's span, which ingest links its object to.
func (b *Broker) tracedAppend(ctx context.Context, r *request, timeout time.Duration, batches []ingest.Batch) (*ingest.Pending, error) {
	_, span := b.childSpan(ctx, r, "ingest.append", attribute.Int("floe.batches", len(batches)))
	p, err := b.ingest.AppendFrom(ctx, r.conn.src, timeout, batches)
	endSpan(span, err)
	return p, err
}

// tracedWait is Pending.WaitWithin inside an ingest.wait span, linked to
// the span of the object that carried the batches (package tracing says
// why a link).
func (b *Broker) tracedWait(ctx context.Context, r *request, p *ingest.Pending, timeout time.Duration) ([]coordapi.BatchResult, error) {
	_, span := b.childSpan(ctx, r, "ingest.wait")
	results, err := p.WaitWithin(ctx, timeout)
	if sc := p.ObjectSpanContext(); sc.IsValid() {
		span.AddLink(trace.Link{SpanContext: sc, Attributes: []attribute.KeyValue{attribute.String("floe.link", "object")}})
	}
	endSpan(span, err)
	return results, err
}

// endSpan ends span, recording err as its status.
func endSpan(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// startAnswer starts the kafka.answer span of a traced request, nil for an
// untraced one.
func (b *Broker) startAnswer(r *request) trace.Span {
	if r == nil || r.span == nil {
		return nil
	}
	_, span := b.opts.Tracer.Start(trace.ContextWithSpan(context.Background(), r.span), "kafka.answer")
	return span
}

// endRequest ends a traced request's answer span (if any) and its own
// span, recording err (the connection broke) as its status.
func endRequest(r *request, answer trace.Span, err error) {
	if answer != nil {
		endSpan(answer, err)
	}
	if r != nil && r.span != nil {
		endSpan(r.span, err)
	}
}
