// Package metrics owns floe's OpenTelemetry meter provider and the
// Prometheus registry behind the HTTP port's /metrics. Parts take a
// metric.Meter in their options (no global provider); a nil Meter means
// no-op instruments, which is what unit tests use.
package metrics

import (
	"context"
	"fmt"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// Provider is one process's meter provider and its Prometheus exposition.
type Provider struct {
	mp  *sdkmetric.MeterProvider
	reg *prometheus.Registry
}

// New returns a Provider whose instruments are exposed by Handler, together
// with Go runtime and process collectors.
func New() (*Provider, error) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	exp, err := otelprom.New(otelprom.WithRegisterer(reg), otelprom.WithoutScopeInfo())
	if err != nil {
		return nil, fmt.Errorf("prometheus exporter: %w", err)
	}
	mp := sdkmetric.NewMeterProvider(
		sdkmetric.WithReader(exp),
		sdkmetric.WithView(latencyView),
	)
	return &Provider{mp: mp, reg: reg}, nil
}

// latencyBuckets suit floe's latencies: sub-millisecond /kv hits up to
// multi-second object-store stalls (seconds).
var latencyBuckets = []float64{
	0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
	0.1, 0.25, 0.5, 1, 2.5, 5, 10,
}

// latencyView gives every histogram in seconds floe's latency buckets.
func latencyView(inst sdkmetric.Instrument) (sdkmetric.Stream, bool) {
	if inst.Kind != sdkmetric.InstrumentKindHistogram || inst.Unit != "s" {
		return sdkmetric.Stream{}, false
	}
	return sdkmetric.Stream{
		Name:        inst.Name,
		Description: inst.Description,
		Unit:        inst.Unit,
		Aggregation: sdkmetric.AggregationExplicitBucketHistogram{Boundaries: latencyBuckets},
	}, true
}

// Meter returns a meter for the named part ("floe/broker", ...).
func (p *Provider) Meter(name string) metric.Meter { return p.mp.Meter(name) }

// Handler serves the Prometheus text exposition.
func (p *Provider) Handler() http.Handler {
	return promhttp.HandlerFor(p.reg, promhttp.HandlerOpts{})
}

// Shutdown flushes and stops the provider.
func (p *Provider) Shutdown(ctx context.Context) error { return p.mp.Shutdown(ctx) }

// OrNoop returns m, or a no-op meter when m is nil.
func OrNoop(m metric.Meter) metric.Meter {
	if m == nil {
		return noop.NewMeterProvider().Meter("")
	}
	return m
}
