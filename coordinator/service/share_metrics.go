package service

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/coordinator"
	"github.com/floe-io/floe/groups/sharegroups"
)

// shareOutcomes are the outcome label values of floe.share_group.records,
// each with its count.
var shareOutcomes = []struct {
	name  string
	count func(sharegroups.Counts) int64
}{
	{"acquired", func(c sharegroups.Counts) int64 { return c.Acquired }},
	{"redelivered", func(c sharegroups.Counts) int64 { return c.Redelivered }},
	{"acknowledged", func(c sharegroups.Counts) int64 { return c.Acknowledged }},
	{"released", func(c sharegroups.Counts) int64 { return c.Released }},
	{"rejected", func(c sharegroups.Counts) int64 { return c.Rejected }},
	{"gap", func(c sharegroups.Counts) int64 { return c.Gap }},
	{"archived_limit", func(c sharegroups.Counts) int64 { return c.ArchivedLimit }},
	{"archived_log_start", func(c sharegroups.Counts) int64 { return c.ArchivedLogStart }},
	{"archived_aborted", func(c sharegroups.Counts) int64 { return c.ArchivedAborted }},
}

// registerShare exposes the share groups' metrics on m, computed at each
// collection from memory only, as registerLag does: the groups' counts and
// share-partitions (groups.Groups.ShareMetrics) and the high watermarks of their
// partitions (highWatermarks: every shard's).
//
//	floe.share_group.records{group,topic,outcome}     records by outcome (counter)
//	floe.share_group.lock_timeouts{group,topic}       records whose lock expired (counter)
//	floe.share_group.lag{group,topic,partition}       bound - SPSO - completed (>= 0)
//	floe.share_group.lag_sum{group}                    the group's lag over its share-partitions
//	floe.share_group.in_flight_records{group}         records acquired and not yet done with
//
// The counters start at zero with the process (or a new HA leader). The
// lag's bound is the high watermark, or the last stable offset under
// share.isolation.level read_committed, as DescribeShareGroupOffsets
// answers (KIP-1226). Series are bounded
// as registerLag's: lag_sum and in_flight_records have one per group; the
// per-topic and per-partition series cover whole groups in name order
// while they add up to at most maxSeries, and the groups past that have
// only their per-group gauges.
func (s *Service) registerShare(m metric.Meter, maxSeries int) (metric.Registration, error) {
	records, err := m.Int64ObservableCounter("floe.share_group.records", metric.WithUnit("{record}"),
		metric.WithDescription("Share group records by outcome: acquired (first delivery), redelivered, acknowledged, released, rejected, gap, archived_limit, archived_log_start, archived_aborted."))
	if err != nil {
		return nil, fmt.Errorf("service: counter share records: %w", err)
	}
	timeouts, err := m.Int64ObservableCounter("floe.share_group.lock_timeouts", metric.WithUnit("{record}"),
		metric.WithDescription("Share group records whose acquisition lock expired before they were acknowledged."))
	if err != nil {
		return nil, fmt.Errorf("service: counter share lock timeouts: %w", err)
	}
	lag, err := m.Int64ObservableGauge("floe.share_group.lag", metric.WithUnit("{record}"),
		metric.WithDescription("Records of each share-partition below its high watermark (last stable offset under read_committed) not yet acknowledged or archived (KIP-1226's lag)."))
	if err != nil {
		return nil, fmt.Errorf("service: gauge share lag: %w", err)
	}
	sum, err := m.Int64ObservableGauge("floe.share_group.lag_sum", metric.WithUnit("{record}"),
		metric.WithDescription("Each share group's lag summed over its share-partitions."))
	if err != nil {
		return nil, fmt.Errorf("service: gauge share lag sum: %w", err)
	}
	inFlight, err := m.Int64ObservableGauge("floe.share_group.in_flight_records", metric.WithUnit("{record}"),
		metric.WithDescription("Each share group's records acquired by its members and not yet acknowledged, released or timed out."))
	if err != nil {
		return nil, fmt.Errorf("service: gauge share in flight: %w", err)
	}
	return m.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		for _, g := range s.shareMetrics(ctx, maxSeries) {
			gattr := attribute.String("group", g.Group)
			o.ObserveInt64(sum, g.lagSum, metric.WithAttributes(gattr))
			o.ObserveInt64(inFlight, g.inFlight, metric.WithAttributes(gattr))
			if g.capped {
				continue
			}
			for ti, t := range g.Topics {
				tattr := attribute.String("topic", t.Topic)
				for _, out := range shareOutcomes {
					o.ObserveInt64(records, out.count(t.Counts), metric.WithAttributes(gattr, tattr, attribute.String("outcome", out.name)))
				}
				o.ObserveInt64(timeouts, t.Counts.LockTimeouts, metric.WithAttributes(gattr, tattr))
				for pi, p := range t.Partitions {
					if g.lags[ti][pi] < 0 {
						continue
					}
					o.ObserveInt64(lag, g.lags[ti][pi], metric.WithAttributes(gattr, tattr, attribute.Int("partition", int(p.Partition))))
				}
			}
		}
		return nil
	}, records, timeouts, lag, sum, inFlight)
}

// shareGroupMetrics is one share group's metrics with its lags worked out.
type shareGroupMetrics struct {
	sharegroups.GroupMetrics
	// lags are by topic and partition, as Topics; -1 where the high
	// watermark is unknown (another shard's partition, or a topic deleted
	// meanwhile), which counts nowhere.
	lags     [][]int64
	lagSum   int64
	inFlight int64
	// capped: only the per-group gauges are reported.
	capped bool
}

// shareMetrics reads every share group's metrics and the high watermarks
// of their partitions in one look-up, and caps the series as capLags does.
func (s *Service) shareMetrics(ctx context.Context, maxSeries int) []shareGroupMetrics {
	var out []shareGroupMetrics
	if err := s.groups.ShareMetrics(ctx, func(m sharegroups.GroupMetrics) {
		out = append(out, shareGroupMetrics{GroupMetrics: m})
	}); err != nil {
		return nil // the topics could not be listed: nothing to report
	}
	var qs []coordinator.WatermarkQuery
	for _, g := range out {
		for _, t := range g.Topics {
			for _, p := range t.Partitions {
				// A view's lag is worked out from its base partition's offsets.
				qs = append(qs, coordinator.WatermarkQuery{Topic: t.DataTopic, Partition: p.Partition, TopicID: coordapi.TopicID(t.DataTopicID)})
			}
		}
	}
	if err := s.highWatermarks(ctx, qs); err != nil {
		return nil // closed: nothing to report
	}
	series, q := 0, 0
	for i := range out {
		g := &out[i]
		n := 0
		g.lags = make([][]int64, len(g.Topics))
		for ti, t := range g.Topics {
			n += len(shareOutcomes) + 1 + len(t.Partitions)
			g.lags[ti] = make([]int64, len(t.Partitions))
			for pi, p := range t.Partitions {
				g.inFlight += p.InFlight
				l := int64(-1)
				if qs[q].Found {
					bound := qs[q].HWM
					if g.ReadCommitted {
						bound = qs[q].LSO
					}
					l = max(bound-p.Start-p.Completed, 0)
					g.lagSum += l
				}
				g.lags[ti][pi] = l
				q++
			}
		}
		if series+n > maxSeries {
			series = maxSeries // every later group: per-group gauges only
			g.capped = true
			continue
		}
		series += n
	}
	return out
}
