package tierplan

import (
	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/coordinator/layout"
)

// Job is an assigned job in memory: what the broker was given, and what
// its completion is checked against.
type Job struct {
	coordapi.TierJob
	// Gen is the partition's generation when the job was planned: a
	// completion after the partition's rows changed is refused.
	Gen uint64
	// Deadline is when its lease ends (ms): completions after it are
	// refused.
	Deadline int64
	// Broker is the broker it is assigned to.
	Broker int32
	// Inputs are a compaction job's input segments' objects, in order.
	Inputs []uint64
	// Seg is the row the swap writes, but for its object; its DataLength
	// is the job's batches' summed length.
	Seg layout.SegmentRow
	// TableFull says a table job stopped short of what was there to
	// take: its slot is queued again as it completes.
	TableFull bool
}

// Stats counts what tiering and retention did since Open.
type Stats struct {
	// JobsAssigned, JobsCompleted, JobsRefused and JobsAbandoned count
	// jobs by outcome; JobsExpired those whose lease ended first.
	JobsAssigned, JobsCompleted, JobsRefused, JobsAbandoned, JobsExpired int64
	// BytesConsolidated is the WAL bytes swapped into segments.
	BytesConsolidated int64
	// RetentionDeletions counts log start moves by retention.ms or
	// retention.bytes; RetentionBytes the bytes they removed.
	RetentionDeletions, RetentionBytes int64
}

// CompactionState is what the planner last found of one compacted
// partition, for metrics.
type CompactionState struct {
	// CleanBytes and DirtyBytes are the segment bytes below and at or
	// above the cleaner checkpoint; DirtyRatio is the cleanable dirty
	// share that min.cleanable.dirty.ratio is compared with.
	CleanBytes, DirtyBytes int64
	DirtyRatio             float64
	// LagMs is the age of the oldest uncleaned record (segments or WAL),
	// 0 when none; LastCleanedMs when the last pass completed, -1 never.
	LagMs, LastCleanedMs int64
}

// CompactionStats counts what compaction passes did since Open.
type CompactionStats struct {
	// Passes counts completed passes; BytesIn and RecordsIn what they read
	// of the segments they replaced, BytesOut and RecordsOut what they
	// wrote.
	Passes                                   int64
	BytesIn, BytesOut, RecordsIn, RecordsOut int64
}
