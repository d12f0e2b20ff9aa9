package coordinator

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/floe-io/floe/coordapi"
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
	walBytes, err := gauge("floe.partition.wal_bytes", "By", "Each partition's bytes in the WAL tier (multi-partition WAL objects).")
	if err != nil {
		return nil, err
	}
	segBytes, err := gauge("floe.partition.segment_bytes", "By", "Each partition's bytes in segment objects.")
	if err != nil {
		return nil, err
	}
	segments, err := gauge("floe.partition.segments", "{segment}", "Each partition's segment objects.")
	if err != nil {
		return nil, err
	}
	walStart, err := gauge("floe.partition.wal_start_offset", "{offset}", "Each partition's tier boundary: offsets below it live only in segments.")
	if err != nil {
		return nil, err
	}
	lag, err := gauge("floe.partition.consolidation_lag", "ms", "Age of each partition's oldest WAL batch (0 when none): how far consolidation trails the log.")
	if err != nil {
		return nil, err
	}
	metaBytes, err := gauge("floe.coordinator.metadata_bytes", "By", "Encoded size of the coordinator's batch coordinates (WAL batch runs and segment rows) and object records: what storing the data costs it.")
	if err != nil {
		return nil, err
	}
	partMeta, err := gauge("floe.partition.metadata_bytes", "By", "Encoded size of each partition's batch coordinates (WAL batch runs and segment rows).")
	if err != nil {
		return nil, err
	}
	pebbleBytes, err := gauge("floe.coordinator.pebble_bytes", "By", "The coordinator's Pebble state on disk (sstables and WAL).")
	if err != nil {
		return nil, err
	}
	counter := func(name, unit, desc string) (metric.Int64ObservableCounter, error) {
		g, err := m.Int64ObservableCounter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		if err != nil {
			return nil, fmt.Errorf("coordinator: counter %s: %w", name, err)
		}
		return g, nil
	}
	jobs, err := counter("floe.coordinator.tier_jobs", "{job}", "Consolidation jobs by outcome: assigned, completed, refused, abandoned, expired.")
	if err != nil {
		return nil, err
	}
	consolidated, err := counter("floe.coordinator.consolidated_bytes", "By", "WAL bytes swapped into segments.")
	if err != nil {
		return nil, err
	}
	retDeletions, err := counter("floe.coordinator.retention_deletions", "{deletion}", "Log start moves by retention.ms or retention.bytes.")
	if err != nil {
		return nil, err
	}
	retBytes, err := counter("floe.coordinator.retention_bytes", "By", "Bytes retention.ms and retention.bytes removed.")
	if err != nil {
		return nil, err
	}
	cleanBytes, err := gauge("floe.partition.compaction.clean_bytes", "By", "Each compacted partition's segment bytes below its cleaner checkpoint (cleaned at least once).")
	if err != nil {
		return nil, err
	}
	dirtyBytes, err := gauge("floe.partition.compaction.dirty_bytes", "By", "Each compacted partition's segment bytes at or above its cleaner checkpoint (never cleaned).")
	if err != nil {
		return nil, err
	}
	dirtyRatio, err := m.Float64ObservableGauge("floe.partition.compaction.dirty_ratio", metric.WithUnit("1"),
		metric.WithDescription("Each compacted partition's cleanable dirty share, which min.cleanable.dirty.ratio is compared with (as of the last planning round)."))
	if err != nil {
		return nil, fmt.Errorf("coordinator: gauge dirty ratio: %w", err)
	}
	compactLag, err := gauge("floe.partition.compaction.lag", "ms", "Age of each compacted partition's oldest uncleaned record (0 when none): how far compaction trails the log.")
	if err != nil {
		return nil, err
	}
	lastCleaned, err := gauge("floe.partition.compaction.last_cleaned", "ms", "When each compacted partition's last compaction pass completed, in Unix milliseconds (-1: never).")
	if err != nil {
		return nil, err
	}
	passes, err := counter("floe.coordinator.compaction.passes", "{pass}", "Compaction passes completed.")
	if err != nil {
		return nil, err
	}
	compBytes, err := counter("floe.coordinator.compaction.bytes", "By", "Segment bytes compaction passes read (direction=in) and wrote (direction=out).")
	if err != nil {
		return nil, err
	}
	compRecords, err := counter("floe.coordinator.compaction.records", "{record}", "Records compaction passes read (direction=in) and kept (direction=out).")
	if err != nil {
		return nil, err
	}
	dirIn := metric.WithAttributes(attribute.String("direction", "in"))
	dirOut := metric.WithAttributes(attribute.String("direction", "out"))
	tableLag, err := gauge("floe.table.lag.offsets", "{offset}", "Each table.enabled topic's offsets not in its Iceberg table yet: the high watermarks less the covered offsets, summed over its partitions (of this shard).")
	if err != nil {
		return nil, err
	}
	tableLagSecs, err := m.Float64ObservableGauge("floe.table.lag.seconds", metric.WithUnit("s"),
		metric.WithDescription("How long the oldest record each table.enabled topic's Iceberg table lacks has been waiting (of this shard's partitions), from when a tier pass saw the high watermark pass it: exact to a tier interval (--tier-interval); 0 when the table covers the high watermark."))
	if err != nil {
		return nil, fmt.Errorf("coordinator: gauge floe.table.lag.seconds: %w", err)
	}
	return m.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		if err := c.enter(ctx); err != nil {
			return nil // closed: nothing to report
		}
		defer c.leave()
		for name, lag := range c.tableLags() {
			attrs := metric.WithAttributes(attribute.String("topic", name))
			o.ObserveInt64(tableLag, lag.offsets, attrs)
			o.ObserveFloat64(tableLagSecs, float64(lag.ms)/1000, attrs)
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
		o.ObserveInt64(topics, int64(len(c.mu.topicsByID)))
		for _, t := range c.mu.topicsByID {
			for p := range t.parts {
				st := &t.parts[p]
				attrs := metric.WithAttributes(attribute.String("topic", t.name), attribute.Int("partition", p))
				o.ObserveInt64(hwm, st.hwm, attrs)
				o.ObserveInt64(logStart, st.logStart, attrs)
				o.ObserveInt64(walBytes, st.walBytes(), attrs)
				o.ObserveInt64(segBytes, st.segBytes, attrs)
				o.ObserveInt64(segments, st.segments, attrs)
				o.ObserveInt64(walStart, st.walStart, attrs)
				o.ObserveInt64(partMeta, st.metaBytes, attrs)
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
			o.ObserveInt64(objects, byState[st].n, attrs)
			o.ObserveInt64(objectBytes, byState[st].bytes, attrs)
		}
		o.ObserveInt64(brokers, int64(len(c.brokers.Live())))
		nowMs := c.now().UnixMilli()
		for _, l := range lags {
			var age int64
			if l.st.walStart < l.st.hwm {
				if created, ok, err := c.firstWALCreated(l.id, l.partition, l.st); err == nil && ok {
					age = max(nowMs-created, 0)
				}
			}
			o.ObserveInt64(lag, age, l.attrs)
		}
		o.ObserveInt64(metaBytes, meta)
		o.ObserveInt64(pebbleBytes, int64(c.db.Metrics().DiskSpaceUsage()))
		ts := c.TierStats()
		for _, j := range []struct {
			outcome string
			n       int64
		}{{"assigned", ts.JobsAssigned}, {"completed", ts.JobsCompleted}, {"refused", ts.JobsRefused},
			{"abandoned", ts.JobsAbandoned}, {"expired", ts.JobsExpired}} {
			o.ObserveInt64(jobs, j.n, metric.WithAttributes(attribute.String("outcome", j.outcome)))
		}
		o.ObserveInt64(consolidated, ts.BytesConsolidated)
		o.ObserveInt64(retDeletions, ts.RetentionDeletions)
		o.ObserveInt64(retBytes, ts.RetentionBytes)
		for name, states := range c.CompactionStates() {
			for p, cs := range states {
				attrs := metric.WithAttributes(attribute.String("topic", name), attribute.Int("partition", p))
				o.ObserveInt64(cleanBytes, cs.CleanBytes, attrs)
				o.ObserveInt64(dirtyBytes, cs.DirtyBytes, attrs)
				o.ObserveFloat64(dirtyRatio, cs.DirtyRatio, attrs)
				o.ObserveInt64(compactLag, cs.LagMs, attrs)
				o.ObserveInt64(lastCleaned, cs.LastCleanedMs, attrs)
			}
		}
		cst := c.CompactionStats()
		o.ObserveInt64(passes, cst.Passes)
		o.ObserveInt64(compBytes, cst.BytesIn, dirIn)
		o.ObserveInt64(compBytes, cst.BytesOut, dirOut)
		o.ObserveInt64(compRecords, cst.RecordsIn, dirIn)
		o.ObserveInt64(compRecords, cst.RecordsOut, dirOut)
		return nil
	}, hwm, logStart, topics, objects, objectBytes, brokers, walBytes, segBytes, segments, walStart, lag, metaBytes, partMeta, pebbleBytes,
		jobs, consolidated, retDeletions, retBytes, cleanBytes, dirtyBytes, dirtyRatio, compactLag, lastCleaned, passes, compBytes, compRecords, tableLag, tableLagSecs)
}
