package node

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// registerObservers exposes state the parts keep as counters and gauges:
// the chunk cache's and the /kv batch cache's statistics and, with the embedded coordinator, its
// partitions' offsets and objects.
func (n *Node) registerObservers(m metric.Meter) error {
	counter := func(name, unit, desc string) metric.Int64ObservableCounter {
		c, err := m.Int64ObservableCounter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		if err != nil {
			panic(err) // only on invalid names, a programming error
		}
		return c
	}
	hits := counter("floe.cache.hits", "{access}", "Chunk accesses served from memory.")
	misses := counter("floe.cache.misses", "{access}", "Chunk accesses that waited for a load.")
	gets := counter("floe.cache.gets", "{request}", "Chunk loads the cache issued: ranged GETs of the object store or, with zone cache sharing, requests to the chunk's owner (floe.cache.chunk_loads by source).")
	loaded := counter("floe.cache.loaded", "By", "Bytes the cache loaded, from the object store or a peer of its zone.")
	evictions := counter("floe.cache.evictions", "{chunk}", "Chunks evicted from memory.")
	readAheads := counter("floe.cache.read_aheads", "{chunk}", "Read-ahead loads started.")
	gauge := func(name, unit, desc string) metric.Int64ObservableGauge {
		g, err := m.Int64ObservableGauge(name, metric.WithUnit(unit), metric.WithDescription(desc))
		if err != nil {
			panic(err) // only on invalid names, a programming error
		}
		return g
	}
	resident := gauge("floe.cache.resident", "By", "Bytes held by resident chunks.")
	kvHits := counter("floe.kv.batch_cache.hits", "{lookup}", "/kv lookups whose batch was in the batch cache (decoded, or an uncompressed one's record index).")
	kvMisses := counter("floe.kv.batch_cache.misses", "{lookup}", "/kv lookups whose batch was not in the batch cache.")
	kvLoads := counter("floe.kv.batch_cache.loads", "{batch}", "Batches /kv read and indexed (compressed ones decoded) for the batch cache.")
	kvEvictions := counter("floe.kv.batch_cache.evictions", "{batch}", "Batches evicted from the /kv batch cache.")
	kvResident := gauge("floe.kv.batch_cache.resident", "By", "Bytes held by the /kv batch cache.")
	_, err := m.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		st := n.cache.Stats()
		o.ObserveInt64(hits, st.Hits)
		o.ObserveInt64(misses, st.Misses)
		o.ObserveInt64(gets, st.Gets)
		o.ObserveInt64(loaded, st.BytesLoaded)
		o.ObserveInt64(evictions, st.Evictions)
		o.ObserveInt64(readAheads, st.ReadAheads)
		o.ObserveInt64(resident, st.Bytes)
		kv := n.kvCache.Stats()
		o.ObserveInt64(kvHits, kv.Hits)
		o.ObserveInt64(kvMisses, kv.Misses)
		o.ObserveInt64(kvLoads, kv.Loads)
		o.ObserveInt64(kvEvictions, kv.Evictions)
		o.ObserveInt64(kvResident, kv.Bytes)
		return nil
	}, hits, misses, gets, loaded, evictions, readAheads, resident, kvHits, kvMisses, kvLoads, kvEvictions, kvResident)
	if err != nil {
		return err
	}
	// Partition offsets and objects are the coordinator service's to
	// report (service.Options.Meters), embedded or the cluster's.
	return nil
}

// kvObserver records /kv lookup latency by HTTP status.
func (n *Node) kvObserver() func(status int, d time.Duration) {
	h, err := n.metrics.Meter("floe/kv").Float64Histogram("floe.kv.lookup.duration", metric.WithUnit("s"),
		metric.WithDescription("GET /kv/{topic}/{key} latency by HTTP status."))
	if err != nil {
		return nil
	}
	attrs := map[int]metric.MeasurementOption{}
	for _, code := range []int{200, 400, 404, 405, 500, 503} {
		attrs[code] = metric.WithAttributes(attribute.Int("http.response.status_code", code))
	}
	return func(status int, d time.Duration) {
		a, ok := attrs[status]
		if !ok {
			a = metric.WithAttributes(attribute.Int("http.response.status_code", status))
		}
		h.Record(context.Background(), d.Seconds(), a)
	}
}
