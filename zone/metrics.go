package zone

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
)

// Values of floe.cache.chunk_loads' source attribute: where a chunk load's
// bytes came from.
const (
	// SourceObjectStore: the object store, because this broker owns the
	// chunk, serves it to a peer, shares nothing, or read no whole chunk.
	SourceObjectStore = "object_store"
	// SourcePeer: the chunk's owner in the zone.
	SourcePeer = "peer"
	// SourcePeerFallback: the object store after the owner failed or
	// while it is backing off.
	SourcePeerFallback = "peer_fallback"
)

// loadMetrics count a Getter's chunk loads by source.
type loadMetrics struct {
	loads metric.Int64Counter
	attrs map[string]metric.AddOption
}

func newLoadMetrics(m metric.Meter) loadMetrics {
	if m == nil {
		m = noop.NewMeterProvider().Meter("zone")
	}
	lm := loadMetrics{attrs: map[string]metric.AddOption{}}
	var err error
	lm.loads, err = m.Int64Counter("floe.cache.chunk_loads", metric.WithUnit("{chunk}"),
		metric.WithDescription("Chunk loads of the cache by where the bytes came from: object_store, peer (the chunk's owner in the zone) or peer_fallback (the owner failed, then the object store)."))
	if err != nil {
		panic(err) // only on invalid names, a programming error
	}
	for _, s := range []string{SourceObjectStore, SourcePeer, SourcePeerFallback} {
		lm.attrs[s] = metric.WithAttributeSet(attribute.NewSet(attribute.String("source", s)))
	}
	return lm
}

func (lm loadMetrics) count(ctx context.Context, source string) {
	lm.loads.Add(context.WithoutCancel(ctx), 1, lm.attrs[source])
}

// servedMetrics count the chunks and bytes a Handler served to peers.
type servedMetrics struct {
	chunks, bytes metric.Int64Counter
}

func newServedMetrics(m metric.Meter) servedMetrics {
	if m == nil {
		m = noop.NewMeterProvider().Meter("zone")
	}
	var sm servedMetrics
	var err error
	if sm.chunks, err = m.Int64Counter("floe.zone.peer_served", metric.WithUnit("{chunk}"),
		metric.WithDescription("Chunks this broker served to the other brokers of its zone.")); err != nil {
		panic(err)
	}
	if sm.bytes, err = m.Int64Counter("floe.zone.peer_served.bytes", metric.WithUnit("By"),
		metric.WithDescription("Bytes of chunks this broker served to the other brokers of its zone.")); err != nil {
		panic(err)
	}
	return sm
}

func (sm servedMetrics) count(ctx context.Context, n int) {
	ctx = context.WithoutCancel(ctx)
	sm.chunks.Add(ctx, 1)
	sm.bytes.Add(ctx, int64(n))
}
