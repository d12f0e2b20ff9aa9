package node

import (
	"context"
	"net/http"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/floe-io/floe/cache"
	"github.com/floe-io/floe/kvindex"
	"github.com/floe-io/floe/tracing"
)

// Traces (package tracing draws the spans): the node makes the provider
// (Config.Tracing), gives its tracer to the broker (Produce, Fetch) and to
// ingest (objects), and wraps what the chunk cache loads (cache.load) and
// /kv (a server span, its lookups and reads). Without Config.Tracing, the
// default, none of these wrappers is made.

// tracerName names the tracer of every span the node's parts start.
const tracerName = "github.com/floe-io/floe"

// startTracing makes the tracer provider when Config.Tracing turns it on.
func (n *Node) startTracing(ctx context.Context) error {
	opts := n.cfg.Tracing
	if !opts.Enabled() {
		return nil
	}
	if opts.ServiceName == "" {
		opts.ServiceName = "floe-broker"
	}
	if opts.InstanceID == "" {
		opts.InstanceID = strconv.Itoa(int(n.cfg.Broker.NodeID))
	}
	p, err := tracing.New(ctx, opts)
	if err != nil {
		return err
	}
	n.tracing, n.tracer = p, p.Tracer(tracerName)
	n.log.Info("tracing on", "otlp_endpoint", opts.Endpoint, "sample_ratio", opts.SampleRatio)
	return nil
}

// tracedGetter is the chunk cache's source with a cache.load span for
// each load made inside a traced request: a fetch's or a /kv lookup's miss
// (the cache's load carries its first reader's context). Loads outside one
// (read-ahead of an untraced reader, consolidation jobs) are not traced.
type tracedGetter struct {
	cache.Getter
	tracer trace.Tracer
}

func (g tracedGetter) GetRange(ctx context.Context, key string, offset, length int64) ([]byte, error) {
	if !trace.SpanFromContext(ctx).IsRecording() {
		return g.Getter.GetRange(ctx, key, offset, length)
	}
	ctx, span := g.tracer.Start(ctx, "cache.load", trace.WithAttributes(
		attribute.String("floe.object.key", key), attribute.Int64("floe.offset", offset), attribute.Int64("floe.length", length)))
	data, err := g.Getter.GetRange(ctx, key, offset, length)
	endSpan(span, err)
	return data, err
}

// tracedKV is /kv's service with a span for each step of a lookup.
type tracedKV struct {
	kvindex.Service
	tracer trace.Tracer
}

func (s tracedKV) Topic(ctx context.Context, name string) (kvindex.TopicInfo, error) {
	ctx, span := s.tracer.Start(ctx, "kv.topic")
	t, err := s.Service.Topic(ctx, name)
	endSpan(span, err)
	return t, err
}

func (s tracedKV) Lookup(ctx context.Context, topicID [16]byte, partition int32, key []byte) (kvindex.LookupResult, error) {
	ctx, span := s.tracer.Start(ctx, "kv.lookup", trace.WithAttributes(attribute.Int("floe.partition", int(partition))))
	l, err := s.Service.Lookup(ctx, topicID, partition, key)
	endSpan(span, err)
	return l, err
}

func (s tracedKV) ReadBatch(ctx context.Context, ref kvindex.BatchRef, from, length int32) ([]byte, error) {
	ctx, span := s.tracer.Start(ctx, "kv.read_batch", trace.WithAttributes(attribute.Int("floe.length", int(length))))
	data, err := s.Service.ReadBatch(ctx, ref, from, length)
	endSpan(span, err)
	return data, err
}

func (s tracedKV) ResolveSegment(ctx context.Context, seg kvindex.BatchRef, offset int64) (kvindex.BatchRef, error) {
	ctx, span := s.tracer.Start(ctx, "kv.resolve_segment")
	ref, err := s.Service.ResolveSegment(ctx, seg, offset)
	endSpan(span, err)
	return ref, err
}

// tracedHTTP serves h inside a server span named name, a child of the
// request's traceparent header when it has one. The path is not recorded:
// a /kv path holds the key.
func tracedHTTP(h http.Handler, tracer trace.Tracer, name string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := propagation.TraceContext{}.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
		ctx, span := tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(attribute.String("http.request.method", r.Method)))
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		h.ServeHTTP(sw, r.WithContext(ctx))
		span.SetAttributes(attribute.Int("http.response.status_code", sw.status))
		if sw.status >= 500 {
			span.SetStatus(codes.Error, http.StatusText(sw.status))
		}
		span.End()
	})
}

// statusWriter remembers the status written.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

// endSpan ends span, recording err as its status.
func endSpan(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}
