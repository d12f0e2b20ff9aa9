package tierplan

import "github.com/floe-io/floe/coordapi"

// Compaction planning. A compacted topic's partition has a cleaner
// checkpoint (its clean offset): the records below it were cleaned at
// least once. Its segments split into the clean part (below the
// checkpoint) and the dirty part; the WAL tier is never compacted (it is
// the uncleaned head, Kafka's active segment) and counts in neither. A
// partition is due for a pass, as Kafka's LogCleanerManager decides, when
// its cleanable dirty bytes (dirty segments whose newest record is older
// than min.compaction.lag.ms) are at least min.cleanable.dirty.ratio of
// the clean plus cleanable bytes, or when its oldest dirty record is older
// than max.compaction.lag.ms, or when a tombstone the last pass kept
// reached its delete horizon. A pass rewrites the segments from the log
// start through the cleanable ones (tiered/doc.go, Compaction).

// MaxCompactSegments bounds the input segments of one compaction job, so
// that its claim reply stays small; the rest wait for the next pass.
const MaxCompactSegments = 1000

// Segment is one segment row of a compacted partition, for planning.
type Segment struct {
	// Object is its object's number; Key and Size name it.
	Object uint64
	Key    string
	Size   int64
	// Coord is the row's coordinates, with its object's key and size.
	Coord coordapi.BatchCoord
	// CreatedMs is when its object was written.
	CreatedMs int64
}

// View is a compacted partition's segments and what the planner makes of
// them.
type View struct {
	// Segs are its segment rows from the log start, in order.
	Segs []Segment
	// Cleanable is how many of Segs (a prefix) a pass may rewrite: those
	// whose newest record is older than min.compaction.lag.ms, up to
	// MaxCompactSegments.
	Cleanable int
	// State is the view for metrics; Due says a pass is due.
	State CompactionState
	Due   bool
}

// Partition is what PlanCompaction needs of a partition beside its
// segments.
type Partition struct {
	// CleanOffset is the cleaner checkpoint; HorizonMs when a tombstone
	// the last pass kept reaches its delete horizon (-1: none).
	CleanOffset, HorizonMs int64
	// WALCreated returns when the partition's first WAL run was
	// committed; ok is false when it has none (or it cannot be read). It
	// is called only when no segment is dirty, for the lag.
	WALCreated func() (ms int64, ok bool)
}

// PlanCompaction decides from a partition's segment rows (in order, from
// its log start; none below its WAL start is a WAL batch) whether a pass
// is due at nowMs, and what the planner shows of it. v.State's
// LastCleanedMs is left to the caller.
func PlanCompaction(segs []Segment, p Partition, s CompactSettings, nowMs int64) (v View) {
	v.Segs = segs
	var cleanable int64
	oldestDirty := int64(-1) // timestamp of the first dirty segment's newest record
	for i, sg := range v.Segs {
		n := int64(sg.Coord.ByteLength)
		newest := sg.Coord.MaxTimestamp
		if newest < 0 {
			newest = sg.CreatedMs // no timestamp: when it was written stands in
		}
		if sg.Coord.LastOffset < p.CleanOffset {
			v.State.CleanBytes += n
		} else {
			v.State.DirtyBytes += n
			if oldestDirty < 0 {
				oldestDirty = newest
			}
		}
		if v.Cleanable == i && i < MaxCompactSegments && nowMs-newest >= s.MinLagMs {
			v.Cleanable = i + 1
			if sg.Coord.LastOffset >= p.CleanOffset {
				cleanable += n
			}
		}
	}
	if total := v.State.CleanBytes + cleanable; total > 0 {
		v.State.DirtyRatio = float64(cleanable) / float64(total)
	}
	// The oldest uncleaned record: in the first dirty segment, or the
	// first WAL batch.
	if oldestDirty >= 0 {
		v.State.LagMs = max(nowMs-oldestDirty, 0)
	} else if p.WALCreated != nil {
		if created, ok := p.WALCreated(); ok {
			v.State.LagMs = max(nowMs-created, 0)
		}
	}
	if v.Cleanable == 0 {
		return v
	}
	switch {
	case cleanable > 0 && v.State.DirtyRatio >= s.MinDirtyRatio:
		v.Due = true
	case cleanable > 0 && oldestDirty >= 0 && nowMs-oldestDirty >= s.MaxLagMs:
		v.Due = true // max.compaction.lag.ms: due whatever the ratio
	case p.HorizonMs >= 0 && nowMs >= p.HorizonMs:
		v.Due = true // tombstones reached their delete horizon
	}
	return v
}
