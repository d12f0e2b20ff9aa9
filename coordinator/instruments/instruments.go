// Package instruments declares the coordinator's metrics: each
// instrument's name, unit and description (docs/metrics.md lists them),
// created on a meter. It holds no state of the coordinator's: the
// coordinator observes the instruments from memory at each collection
// (coordinator.RegisterMetrics), so that the schema of what it exports
// reads in one place.
package instruments

import (
	"fmt"

	"go.opentelemetry.io/otel/metric"
)

// Set is every instrument of the coordinator, each commented with its
// metric name.
type Set struct {
	HWM                metric.Int64ObservableGauge   // floe.partition.high_watermark
	LogStart           metric.Int64ObservableGauge   // floe.partition.log_start_offset
	Topics             metric.Int64ObservableGauge   // floe.coordinator.topics
	Objects            metric.Int64ObservableGauge   // floe.coordinator.objects
	ObjectBytes        metric.Int64ObservableGauge   // floe.coordinator.object_bytes
	Brokers            metric.Int64ObservableGauge   // floe.coordinator.brokers
	WALBytes           metric.Int64ObservableGauge   // floe.partition.wal_bytes
	SegBytes           metric.Int64ObservableGauge   // floe.partition.segment_bytes
	Segments           metric.Int64ObservableGauge   // floe.partition.segments
	WALStart           metric.Int64ObservableGauge   // floe.partition.wal_start_offset
	ConsolidationLag   metric.Int64ObservableGauge   // floe.partition.consolidation_lag
	MetaBytes          metric.Int64ObservableGauge   // floe.coordinator.metadata_bytes
	PartitionMetaBytes metric.Int64ObservableGauge   // floe.partition.metadata_bytes
	PebbleBytes        metric.Int64ObservableGauge   // floe.coordinator.pebble_bytes
	TierJobs           metric.Int64ObservableCounter // floe.coordinator.tier_jobs
	Consolidated       metric.Int64ObservableCounter // floe.coordinator.consolidated_bytes
	RetentionDeletions metric.Int64ObservableCounter // floe.coordinator.retention_deletions
	RetentionBytes     metric.Int64ObservableCounter // floe.coordinator.retention_bytes
	CleanBytes         metric.Int64ObservableGauge   // floe.partition.compaction.clean_bytes
	DirtyBytes         metric.Int64ObservableGauge   // floe.partition.compaction.dirty_bytes
	DirtyRatio         metric.Float64ObservableGauge // floe.partition.compaction.dirty_ratio
	CompactionLag      metric.Int64ObservableGauge   // floe.partition.compaction.lag
	LastCleaned        metric.Int64ObservableGauge   // floe.partition.compaction.last_cleaned
	CompactionPasses   metric.Int64ObservableCounter // floe.coordinator.compaction.passes
	CompactionBytes    metric.Int64ObservableCounter // floe.coordinator.compaction.bytes
	CompactionRecords  metric.Int64ObservableCounter // floe.coordinator.compaction.records
	TableLag           metric.Int64ObservableGauge   // floe.table.lag.offsets
	TableLagSeconds    metric.Float64ObservableGauge // floe.table.lag.seconds
}

// New creates the coordinator's instruments on m.
func New(m metric.Meter) (*Set, error) {
	s := new(Set)
	var err error
	gauge := func(name, unit, desc string) (metric.Int64ObservableGauge, error) {
		g, err := m.Int64ObservableGauge(name, metric.WithUnit(unit), metric.WithDescription(desc))
		if err != nil {
			return nil, fmt.Errorf("coordinator: gauge %s: %w", name, err)
		}
		return g, nil
	}
	s.HWM, err = gauge("floe.partition.high_watermark", "{offset}", "Each partition's high watermark.")
	if err != nil {
		return nil, err
	}
	s.LogStart, err = gauge("floe.partition.log_start_offset", "{offset}", "Each partition's log start offset.")
	if err != nil {
		return nil, err
	}
	s.Topics, err = gauge("floe.coordinator.topics", "{topic}", "Topics in the coordinator.")
	if err != nil {
		return nil, err
	}
	s.Objects, err = gauge("floe.coordinator.objects", "{object}", "Objects the coordinator knows, by state.")
	if err != nil {
		return nil, err
	}
	s.ObjectBytes, err = gauge("floe.coordinator.object_bytes", "By", "Size of the objects the coordinator knows, by state.")
	if err != nil {
		return nil, err
	}
	s.Brokers, err = gauge("floe.coordinator.brokers", "{broker}", "Live brokers in the registry.")
	if err != nil {
		return nil, err
	}
	s.WALBytes, err = gauge("floe.partition.wal_bytes", "By", "Each partition's bytes in the WAL tier (multi-partition WAL objects).")
	if err != nil {
		return nil, err
	}
	s.SegBytes, err = gauge("floe.partition.segment_bytes", "By", "Each partition's bytes in segment objects.")
	if err != nil {
		return nil, err
	}
	s.Segments, err = gauge("floe.partition.segments", "{segment}", "Each partition's segment objects.")
	if err != nil {
		return nil, err
	}
	s.WALStart, err = gauge("floe.partition.wal_start_offset", "{offset}", "Each partition's tier boundary: offsets below it live only in segments.")
	if err != nil {
		return nil, err
	}
	s.ConsolidationLag, err = gauge("floe.partition.consolidation_lag", "ms", "Age of each partition's oldest WAL batch (0 when none): how far consolidation trails the log.")
	if err != nil {
		return nil, err
	}
	s.MetaBytes, err = gauge("floe.coordinator.metadata_bytes", "By", "Encoded size of the coordinator's batch coordinates (WAL batch runs and segment rows) and object records: what storing the data costs it.")
	if err != nil {
		return nil, err
	}
	s.PartitionMetaBytes, err = gauge("floe.partition.metadata_bytes", "By", "Encoded size of each partition's batch coordinates (WAL batch runs and segment rows).")
	if err != nil {
		return nil, err
	}
	s.PebbleBytes, err = gauge("floe.coordinator.pebble_bytes", "By", "The coordinator's Pebble state on disk (sstables and WAL).")
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
	s.TierJobs, err = counter("floe.coordinator.tier_jobs", "{job}", "Consolidation jobs by outcome: assigned, completed, refused, abandoned, expired.")
	if err != nil {
		return nil, err
	}
	s.Consolidated, err = counter("floe.coordinator.consolidated_bytes", "By", "WAL bytes swapped into segments.")
	if err != nil {
		return nil, err
	}
	s.RetentionDeletions, err = counter("floe.coordinator.retention_deletions", "{deletion}", "Log start moves by retention.ms or retention.bytes.")
	if err != nil {
		return nil, err
	}
	s.RetentionBytes, err = counter("floe.coordinator.retention_bytes", "By", "Bytes retention.ms and retention.bytes removed.")
	if err != nil {
		return nil, err
	}
	s.CleanBytes, err = gauge("floe.partition.compaction.clean_bytes", "By", "Each compacted partition's segment bytes below its cleaner checkpoint (cleaned at least once).")
	if err != nil {
		return nil, err
	}
	s.DirtyBytes, err = gauge("floe.partition.compaction.dirty_bytes", "By", "Each compacted partition's segment bytes at or above its cleaner checkpoint (never cleaned).")
	if err != nil {
		return nil, err
	}
	s.DirtyRatio, err = m.Float64ObservableGauge("floe.partition.compaction.dirty_ratio", metric.WithUnit("1"),
		metric.WithDescription("Each compacted partition's cleanable dirty share, which min.cleanable.dirty.ratio is compared with (as of the last planning round)."))
	if err != nil {
		return nil, fmt.Errorf("coordinator: gauge dirty ratio: %w", err)
	}
	s.CompactionLag, err = gauge("floe.partition.compaction.lag", "ms", "Age of each compacted partition's oldest uncleaned record (0 when none): how far compaction trails the log.")
	if err != nil {
		return nil, err
	}
	s.LastCleaned, err = gauge("floe.partition.compaction.last_cleaned", "ms", "When each compacted partition's last compaction pass completed, in Unix milliseconds (-1: never).")
	if err != nil {
		return nil, err
	}
	s.CompactionPasses, err = counter("floe.coordinator.compaction.passes", "{pass}", "Compaction passes completed.")
	if err != nil {
		return nil, err
	}
	s.CompactionBytes, err = counter("floe.coordinator.compaction.bytes", "By", "Segment bytes compaction passes read (direction=in) and wrote (direction=out).")
	if err != nil {
		return nil, err
	}
	s.CompactionRecords, err = counter("floe.coordinator.compaction.records", "{record}", "Records compaction passes read (direction=in) and kept (direction=out).")
	if err != nil {
		return nil, err
	}
	s.TableLag, err = gauge("floe.table.lag.offsets", "{offset}", "Each table.enabled topic's offsets not in its Iceberg table yet: the high watermarks less the covered offsets, summed over its partitions (of this shard).")
	if err != nil {
		return nil, err
	}
	s.TableLagSeconds, err = m.Float64ObservableGauge("floe.table.lag.seconds", metric.WithUnit("s"),
		metric.WithDescription("How long the oldest record each table.enabled topic's Iceberg table lacks has been waiting (of this shard's partitions), from when a tier pass saw the high watermark pass it: exact to a tier interval (--tier-interval); 0 when the table covers the high watermark."))
	if err != nil {
		return nil, fmt.Errorf("coordinator: gauge floe.table.lag.seconds: %w", err)
	}
	return s, nil
}

// All lists every instrument of s, for metric.Meter.RegisterCallback.
func (s *Set) All() []metric.Observable {
	return []metric.Observable{s.HWM, s.LogStart, s.Topics, s.Objects, s.ObjectBytes, s.Brokers, s.WALBytes, s.SegBytes, s.Segments, s.WALStart, s.ConsolidationLag, s.MetaBytes, s.PartitionMetaBytes, s.PebbleBytes, s.TierJobs, s.Consolidated, s.RetentionDeletions, s.RetentionBytes, s.CleanBytes, s.DirtyBytes, s.DirtyRatio, s.CompactionLag, s.LastCleaned, s.CompactionPasses, s.CompactionBytes, s.CompactionRecords, s.TableLag, s.TableLagSeconds}
}
