package ha

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// registerMetrics exposes the node's Status as gauges read at each
// collection: floe.coordinator.ha.leader (1 on the leader, with the id),
// .term, .applied, .replay_lag, .snapshot_age, .stream_messages,
// .stream_bytes and .failovers (takeovers by this node).
func (n *Node) registerMetrics(m metric.Meter) (func(), error) {
	type spec struct {
		name, unit, desc string
		value            func(Status) int64
	}
	specs := []spec{
		{"floe.coordinator.ha.leader", "", "1 while this coordinator leads, else 0.", func(s Status) int64 {
			if s.Role == RoleLeader {
				return 1
			}
			return 0
		}},
		{"floe.coordinator.ha.term", "{term}", "The term of the leader, as this coordinator last saw it.", func(s Status) int64 { return int64(s.Term) }},
		{"floe.coordinator.ha.applied", "{message}", "The log sequence this coordinator's state is applied up to.", func(s Status) int64 { return int64(s.Applied) }},
		{"floe.coordinator.ha.replay_lag", "{message}", "Log messages a standby has not applied yet (0 on the leader).", func(s Status) int64 { return int64(s.Lag) }},
		{"floe.coordinator.ha.snapshot_age", "s", "Seconds since the newest snapshot this coordinator took or restored was taken; -1 for none.", func(s Status) int64 {
			if s.SnapshotTime.IsZero() {
				return -1
			}
			return int64(time.Since(s.SnapshotTime).Seconds())
		}},
		{"floe.coordinator.ha.stream_messages", "{message}", "Messages in the coordinator log, as last seen by the leader.", func(s Status) int64 { return int64(s.StreamMessages) }},
		{"floe.coordinator.ha.stream_bytes", "By", "Bytes in the coordinator log, as last seen by the leader.", func(s Status) int64 { return int64(s.StreamBytes) }},
		{"floe.coordinator.ha.failovers", "{takeover}", "Times this coordinator took the lead.", func(s Status) int64 { return s.Failovers }},
	}
	gauges := make([]metric.Int64ObservableGauge, len(specs))
	insts := make([]metric.Observable, len(specs))
	for i, sp := range specs {
		g, err := m.Int64ObservableGauge(sp.name, metric.WithUnit(sp.unit), metric.WithDescription(sp.desc))
		if err != nil {
			return nil, fmt.Errorf("ha: gauge %s: %w", sp.name, err)
		}
		gauges[i], insts[i] = g, g
	}
	reg, err := m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		s := n.Status()
		attrs := metric.WithAttributes(attribute.String("id", n.opts.ID), attribute.String("role", string(s.Role)))
		for i, sp := range specs {
			o.ObserveInt64(gauges[i], sp.value(s), attrs)
		}
		return nil
	}, insts...)
	if err != nil {
		return nil, fmt.Errorf("ha: register metrics: %w", err)
	}
	return func() { _ = reg.Unregister() }, nil
}
