package coordinator

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// RegisterMetrics exposes the coordinator's state on m as gauges read from
// memory at each collection: every partition's high watermark and log start
// offset, the topic count, objects and their bytes by state, and the live
// brokers. Unregister the returned registration before Close.
func (c *Coordinator) RegisterMetrics(m metric.Meter) (metric.Registration, error) {
	gauge := func(name, unit, desc string) (metric.Int64ObservableGauge, error) {
		g, err := m.Int64ObservableGauge(name, metric.WithUnit(unit), metric.WithDescription(desc))
		if err != nil {
			return nil, fmt.Errorf("coordinator: gauge %s: %w", name, err)
		}
		return g, nil
	}
	hwm, err := gauge("floe.partition.high_watermark", "{offset}", "Each partition's high watermark.")
	if err != nil {
		return nil, err
	}
	logStart, err := gauge("floe.partition.log_start_offset", "{offset}", "Each partition's log start offset.")
	if err != nil {
		return nil, err
	}
	topics, err := gauge("floe.coordinator.topics", "{topic}", "Topics in the coordinator.")
	if err != nil {
		return nil, err
	}
	objects, err := gauge("floe.coordinator.objects", "{object}", "Objects the coordinator knows, by state.")
	if err != nil {
		return nil, err
	}
	objectBytes, err := gauge("floe.coordinator.object_bytes", "By", "Size of the objects the coordinator knows, by state.")
	if err != nil {
		return nil, err
	}
	brokers, err := gauge("floe.coordinator.brokers", "{broker}", "Live brokers in the registry.")
	if err != nil {
		return nil, err
	}
	return m.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		if err := c.enter(ctx); err != nil {
			return nil // closed: nothing to report
		}
		defer c.leave()
		type objStat struct{ n, bytes int64 }
		byState := map[ObjectState]objStat{}
		c.mu.RLock()
		o.ObserveInt64(topics, int64(len(c.mu.topicsByID)))
		for _, t := range c.mu.topicsByID {
			for p := range t.parts {
				attrs := metric.WithAttributes(attribute.String("topic", t.name), attribute.Int("partition", p))
				o.ObserveInt64(hwm, t.parts[p].hwm, attrs)
				o.ObserveInt64(logStart, t.parts[p].logStart, attrs)
			}
		}
		for _, obj := range c.mu.objects {
			s := byState[obj.state]
			s.n++
			s.bytes += obj.size
			byState[obj.state] = s
		}
		c.mu.RUnlock()
		for _, st := range []ObjectState{ObjectLive, ObjectGarbage} {
			attrs := metric.WithAttributes(attribute.String("state", st.String()))
			o.ObserveInt64(objects, byState[st].n, attrs)
			o.ObserveInt64(objectBytes, byState[st].bytes, attrs)
		}
		o.ObserveInt64(brokers, int64(len(c.liveBrokers())))
		return nil
	}, hwm, logStart, topics, objects, objectBytes, brokers)
}
