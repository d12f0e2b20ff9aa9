// Package tracing sets up floe's OpenTelemetry traces: a tracer provider
// that samples parent-based with a ratio and exports by OTLP over HTTP
// (--otlp-endpoint, --trace-sample-ratio), and the W3C trace context of a
// request (a traceparent record header on Produce, the traceparent HTTP
// header on /kv).
//
// Tracing is off by default, and then free: no provider is made, the broker
// and ingest are given no tracer, and their hot paths test a nil tracer and
// do nothing else (no span, no context.WithValue, no allocation).
//
// What is traced, with the names of the spans:
//
//	kafka.produce (server)            a Produce request, read to answered
//	 ├─ ingest.append                 its batches into the open object buffer
//	 ├─ ingest.wait                   waiting for the object's upload and commit (links to ingest.object)
//	 └─ kafka.answer                  encoding and writing the response
//	ingest.object (a trace of its own, links to every kafka.produce it carries)
//	 ├─ objectstore.put               the upload, retries included (none for an inline object)
//	 └─ coordinator.commit            CommitObject
//	kafka.fetch (server)
//	 ├─ coordinator.find_batches      the coordinates of the batches to read
//	 ├─ fetch.read                    reading them through the chunk cache
//	 │   └─ cache.load                a chunk the cache missed: a GET (or a zone peer's chunk)
//	 └─ kafka.answer
//	GET /kv (server)
//	 ├─ kv.topic, kv.lookup           the topic, the key's offset and batch (coordinator)
//	 └─ kv.read_batch                 the batch through the chunk cache (cache.load on a miss)
//
// An object carries the batches of many produce requests, so its upload and
// commit cannot be a child of any one of them: each object is a span of its
// own (ingest.object, the root of its own trace) whose links name every
// produce request whose batches it carries, and each request's ingest.wait
// links back to it. A trace viewer then shows a produce with its wait and,
// one click away, the upload and commit that the wait was for, with the
// other requests that shared them.
package tracing

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Options configure a Provider.
type Options struct {
	// Endpoint is the OTLP/HTTP collector (--otlp-endpoint): a URL
	// (http://collector:4318, https://..., its path defaulting to
	// /v1/traces) or host:port, which means plain http. Empty: tracing
	// off. Default: "".
	Endpoint string
	// SampleRatio is the share of new traces sampled
	// (--trace-sample-ratio, whose default is 1), in [0, 1]; a request
	// that comes with a trace context follows its parent's decision
	// (parent-based, as OTEL_TRACES_SAMPLER=parentbased_traceidratio), so
	// 0 traces only the requests whose clients sampled them.
	SampleRatio float64
	// ServiceName is the resource's service.name: floe-broker or
	// floe-coordinator.
	ServiceName string
	// InstanceID is the resource's service.instance.id (the node id).
	InstanceID string
	// Exporter, when set, replaces the OTLP exporter and is called
	// synchronously as each span ends (tests: tracetest's in-memory
	// exporter). Endpoint is then ignored.
	Exporter sdktrace.SpanExporter
}

// Enabled reports whether opts turn tracing on.
func (o Options) Enabled() bool { return o.Endpoint != "" || o.Exporter != nil }

// Validate reports a bad option.
func (o Options) Validate() error {
	var errs []error
	if o.SampleRatio < 0 || o.SampleRatio > 1 {
		errs = append(errs, fmt.Errorf("--trace-sample-ratio %v: between 0 and 1", o.SampleRatio))
	}
	if o.Endpoint != "" {
		if _, err := endpointOptions(o.Endpoint); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Provider is a tracer provider and its exporter.
type Provider struct {
	tp *sdktrace.TracerProvider
}

// New returns a Provider, or nil with tracing off (!opts.Enabled()).
func New(ctx context.Context, opts Options) (*Provider, error) {
	if !opts.Enabled() {
		return nil, nil
	}
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	attrs := []attribute.KeyValue{attribute.String("service.name", opts.ServiceName)}
	if opts.InstanceID != "" {
		attrs = append(attrs, attribute.String("service.instance.id", opts.InstanceID))
	}
	tpOpts := []sdktrace.TracerProviderOption{
		sdktrace.WithResource(resource.NewSchemaless(attrs...)),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(opts.SampleRatio))),
	}
	if opts.Exporter != nil {
		tpOpts = append(tpOpts, sdktrace.WithSyncer(opts.Exporter))
	} else {
		eopts, err := endpointOptions(opts.Endpoint)
		if err != nil {
			return nil, err
		}
		exp, err := otlptracehttp.New(ctx, eopts...)
		if err != nil {
			return nil, fmt.Errorf("--otlp-endpoint %s: %w", opts.Endpoint, err)
		}
		tpOpts = append(tpOpts, sdktrace.WithBatcher(exp))
	}
	return &Provider{tp: sdktrace.NewTracerProvider(tpOpts...)}, nil
}

// endpointOptions turns --otlp-endpoint into the exporter's options.
func endpointOptions(endpoint string) ([]otlptracehttp.Option, error) {
	if !strings.Contains(endpoint, "://") {
		endpoint = "http://" + endpoint
	}
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("--otlp-endpoint %q: want http://host:port, https://host:port or host:port", endpoint)
	}
	opts := []otlptracehttp.Option{otlptracehttp.WithEndpoint(u.Host)}
	if u.Scheme == "http" {
		opts = append(opts, otlptracehttp.WithInsecure())
	}
	if u.Path != "" && u.Path != "/" {
		opts = append(opts, otlptracehttp.WithURLPath(u.Path))
	}
	return opts, nil
}

// Tracer returns the tracer named name (the package it traces), nil on a
// nil Provider: callers test a nil tracer to skip tracing altogether.
func (p *Provider) Tracer(name string) trace.Tracer {
	if p == nil {
		return nil
	}
	return p.tp.Tracer(name)
}

// Shutdown exports what is left and stops the exporter.
func (p *Provider) Shutdown(ctx context.Context) error {
	if p == nil {
		return nil
	}
	return p.tp.Shutdown(ctx)
}
