package service

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/coordinator"
	"github.com/floe-io/floe/groups"
)

// DefaultMaxLagSeries is Options.MaxLagSeries' default.
const DefaultMaxLagSeries = 10000

// registerLag exposes consumer lag on m, computed at each collection from
// memory only: the groups' committed offsets (groups.CommittedOffsets) and
// the high watermarks of their partitions (coordinator.HighWatermarks), no
// Pebble read and no request.
//
//	floe.consumer_group.lag{group,topic,partition}  high watermark - committed offset (>= 0)
//	floe.consumer_group.lag_sum{group}               the group's lag over its partitions
//
// A committed offset of a topic that no longer exists, or that was
// recreated since the commit (its topic id differs), counts nowhere.
// Series are bounded: lag_sum has one per group; the per-partition gauge
// covers whole groups in name order while their partitions add up to at
// most maxSeries, and the groups past that have only their lag_sum, so that
// a cluster with many groups does not flood its Prometheus.
func (s *Service) registerLag(m metric.Meter, maxSeries int) (metric.Registration, error) {
	lag, err := m.Int64ObservableGauge("floe.consumer_group.lag", metric.WithUnit("{record}"),
		metric.WithDescription("Records between each consumer group's committed offset and its partition's high watermark."))
	if err != nil {
		return nil, fmt.Errorf("service: gauge lag: %w", err)
	}
	sum, err := m.Int64ObservableGauge("floe.consumer_group.lag_sum", metric.WithUnit("{record}"),
		metric.WithDescription("Each consumer group's lag summed over the partitions it committed offsets for."))
	if err != nil {
		return nil, fmt.Errorf("service: gauge lag sum: %w", err)
	}
	return m.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		for _, g := range s.lags(ctx, maxSeries) {
			o.ObserveInt64(sum, g.sum, metric.WithAttributes(attribute.String("group", g.name)))
			for _, p := range g.parts {
				o.ObserveInt64(lag, p.lag, metric.WithAttributes(
					attribute.String("group", g.name), attribute.String("topic", p.topic), attribute.Int("partition", int(p.partition))))
			}
		}
		return nil
	}, lag, sum)
}

// groupLag is one group's lag: its sum, and by partition unless capped.
type groupLag struct {
	name  string
	sum   int64
	parts []partLag
}

type partLag struct {
	topic     string
	partition int32
	lag       int64
}

// lags computes every group's lag, in group name order, with the
// partitions of the first groups whose partitions add up to at most
// maxSeries. The groups' offsets are gathered first, each group's lock held
// only to copy them, then their high watermarks in one look-up.
func (s *Service) lags(ctx context.Context, maxSeries int) []groupLag {
	var offsets []groups.CommittedOffset
	s.groups.CommittedOffsets(func(c groups.CommittedOffset) {
		if c.Partition >= 0 && c.Offset >= 0 {
			offsets = append(offsets, c)
		}
	})
	qs := make([]coordinator.WatermarkQuery, len(offsets))
	for i, c := range offsets {
		qs[i] = coordinator.WatermarkQuery{Topic: c.Topic, Partition: c.Partition, TopicID: coordapi.TopicID(c.TopicID)}
	}
	if err := s.highWatermarks(ctx, qs); err != nil {
		return nil // closed: nothing to report
	}
	byGroup := map[string]*groupLag{}
	for i, c := range offsets {
		if !qs[i].Found {
			continue
		}
		g := byGroup[c.Group]
		if g == nil {
			g = &groupLag{name: c.Group}
			byGroup[c.Group] = g
		}
		l := max(qs[i].HWM-c.Offset, 0)
		g.sum += l
		g.parts = append(g.parts, partLag{c.Topic, c.Partition, l})
	}
	out := make([]groupLag, 0, len(byGroup))
	for _, g := range byGroup {
		out = append(out, *g)
	}
	capLags(out, maxSeries)
	return out
}

// peerWatermarksTimeout bounds how long a collection waits for the other
// shards' high watermarks: a shard failing over leaves its partitions out
// of one collection rather than holding up the scrape.
const peerWatermarksTimeout = 2 * time.Second

// highWatermarks answers qs from this shard's memory (coordinator.
// HighWatermarks) and, on shard 0 of a sharded coordinator, the partitions
// other shards own from those shards: one FindBatchesMulti a shard, asked
// at an offset past every partition's end, which each answers with the
// partition's state and OFFSET_OUT_OF_RANGE, reading no batch. A shard
// that does not answer leaves its partitions not found.
func (s *Service) highWatermarks(ctx context.Context, qs []coordinator.WatermarkQuery) error {
	if err := s.coord.HighWatermarks(ctx, qs); err != nil {
		return err
	}
	if s.router == nil {
		return nil
	}
	var reqs []coordapi.FindBatchesRequest
	var at []int
	for i := range qs {
		if qs[i].Elsewhere {
			reqs = append(reqs, coordapi.FindBatchesRequest{TopicID: qs[i].TopicID, Partition: qs[i].Partition, Offset: math.MaxInt64})
			at = append(at, i)
		}
	}
	if len(reqs) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, peerWatermarksTimeout)
	defer cancel()
	res, err := s.router.FindBatchesMulti(ctx, reqs)
	if err != nil {
		s.log.Debug("lag: the other shards' high watermarks", "err", err)
		return nil
	}
	for j, r := range res {
		if r.ErrorCode == 0 || r.ErrorCode == kerr.OffsetOutOfRange.Code {
			q := &qs[at[j]]
			q.HWM, q.LSO, q.Found = r.HighWatermark, r.LastStableOffset, true
		}
	}
	return nil
}

// capLags sorts groups by name and drops the partitions of every group past
// the first ones whose partitions add up to at most maxSeries.
func capLags(groups []groupLag, maxSeries int) {
	slices.SortFunc(groups, func(a, b groupLag) int { return strings.Compare(a.name, b.name) })
	series := 0
	for i := range groups {
		if series+len(groups[i].parts) > maxSeries {
			series = maxSeries // every later group: lag_sum only
			groups[i].parts = nil
			continue
		}
		series += len(groups[i].parts)
	}
}
