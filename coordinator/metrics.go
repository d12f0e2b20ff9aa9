package coordinator

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/coordinator/instruments"
	"github.com/floe-io/floe/coordinator/layout"
)

// RegisterMetrics exposes the coordinator's state on m as gauges read from
// memory at each collection: every partition's high watermark, log start
// offset, tier boundary, bytes in each tier, segment count and
// consolidation lag (one Pebble seek each), the topic count, objects and
// their bytes by state, the live brokers and the Pebble state's size; and
// the tier counters (TierStats); and for compacted partitions the
// planner's view (CompactionStates) with the compaction counters
// (CompactionStats); and each table topic's lag (floe.table.lag.offsets
// and floe.table.lag.seconds).
// Unregister the returned registration before Close.
func (c *Coordinator) RegisterMetrics(m metric.Meter) (metric.Registration, error) {
	in, err := instruments.New(m)
	if err != nil {
		return nil, err
	}
	dirIn := metric.WithAttributes(attribute.String("direction", "in"))
	dirOut := metric.WithAttributes(attribute.String("direction", "out"))
	return m.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		if err := c.enter(ctx); err != nil {
			return nil // closed: nothing to report
		}
		defer c.leave()
		for name, lag := range c.tableLags() {
			attrs := metric.WithAttributes(attribute.String("topic", name))
			o.ObserveInt64(in.TableLag, lag.Offsets, attrs)
			o.ObserveFloat64(in.TableLagSeconds, float64(lag.Ms)/1000, attrs)
		}
		type objStat struct{ n, bytes int64 }
		byState := map[ObjectState]objStat{}
		type lagged struct {
			id        coordapi.TopicID
			partition int32
			st        partState
			attrs     metric.MeasurementOption
		}
		var (
			lags []lagged
			meta int64
		)
		c.mu.RLock()
		o.ObserveInt64(in.Topics, int64(len(c.mu.topicsByID)))
		for _, t := range c.mu.topicsByID {
			for p := range t.parts {
				st := &t.parts[p]
				attrs := metric.WithAttributes(attribute.String("topic", t.name), attribute.Int("partition", p))
				o.ObserveInt64(in.HWM, st.hwm, attrs)
				o.ObserveInt64(in.LogStart, st.logStart, attrs)
				o.ObserveInt64(in.WALBytes, st.walBytes(), attrs)
				o.ObserveInt64(in.SegBytes, st.segBytes, attrs)
				o.ObserveInt64(in.Segments, st.segments, attrs)
				o.ObserveInt64(in.WALStart, st.walStart, attrs)
				o.ObserveInt64(in.PartitionMetaBytes, st.metaBytes, attrs)
				meta += st.metaBytes
				lags = append(lags, lagged{t.id, int32(p), *st, attrs})
			}
		}
		for _, obj := range c.mu.objects {
			meta += int64(len(layout.ObjectKey(obj.num)) + len(obj.encode()))
			s := byState[obj.state]
			s.n++
			s.bytes += obj.size
			byState[obj.state] = s
		}
		c.mu.RUnlock()
		for _, st := range []ObjectState{ObjectLive, ObjectGarbage} {
			attrs := metric.WithAttributes(attribute.String("state", st.String()))
			o.ObserveInt64(in.Objects, byState[st].n, attrs)
			o.ObserveInt64(in.ObjectBytes, byState[st].bytes, attrs)
		}
		o.ObserveInt64(in.Brokers, int64(len(c.brokers.Live())))
		nowMs := c.now().UnixMilli()
		for _, l := range lags {
			var age int64
			if l.st.walStart < l.st.hwm {
				if created, ok, err := c.firstWALCreated(l.id, l.partition, l.st); err == nil && ok {
					age = max(nowMs-created, 0)
				}
			}
			o.ObserveInt64(in.ConsolidationLag, age, l.attrs)
		}
		o.ObserveInt64(in.MetaBytes, meta)
		o.ObserveInt64(in.PebbleBytes, int64(c.db.Metrics().DiskSpaceUsage()))
		ts := c.TierStats()
		for _, j := range []struct {
			outcome string
			n       int64
		}{{"assigned", ts.JobsAssigned}, {"completed", ts.JobsCompleted}, {"refused", ts.JobsRefused},
			{"abandoned", ts.JobsAbandoned}, {"expired", ts.JobsExpired}} {
			o.ObserveInt64(in.TierJobs, j.n, metric.WithAttributes(attribute.String("outcome", j.outcome)))
		}
		o.ObserveInt64(in.Consolidated, ts.BytesConsolidated)
		o.ObserveInt64(in.RetentionDeletions, ts.RetentionDeletions)
		o.ObserveInt64(in.RetentionBytes, ts.RetentionBytes)
		for name, states := range c.CompactionStates() {
			for p, cs := range states {
				attrs := metric.WithAttributes(attribute.String("topic", name), attribute.Int("partition", p))
				o.ObserveInt64(in.CleanBytes, cs.CleanBytes, attrs)
				o.ObserveInt64(in.DirtyBytes, cs.DirtyBytes, attrs)
				o.ObserveFloat64(in.DirtyRatio, cs.DirtyRatio, attrs)
				o.ObserveInt64(in.CompactionLag, cs.LagMs, attrs)
				o.ObserveInt64(in.LastCleaned, cs.LastCleanedMs, attrs)
			}
		}
		cst := c.CompactionStats()
		o.ObserveInt64(in.CompactionPasses, cst.Passes)
		o.ObserveInt64(in.CompactionBytes, cst.BytesIn, dirIn)
		o.ObserveInt64(in.CompactionBytes, cst.BytesOut, dirOut)
		o.ObserveInt64(in.CompactionRecords, cst.RecordsIn, dirIn)
		o.ObserveInt64(in.CompactionRecords, cst.RecordsOut, dirOut)
		return nil
	}, in.All()...)
}
