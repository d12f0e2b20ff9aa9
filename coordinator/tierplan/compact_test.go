package tierplan

import (
	"testing"

	"github.com/floe-io/floe/coordapi"
)

// seg is a segment of n bytes covering [base, last] whose newest record
// is at ts (-1: none; its object was written at created).
func seg(base, last int64, n int32, ts, created int64) Segment {
	return Segment{Coord: coordapi.BatchCoord{BaseOffset: base, LastOffset: last, ByteLength: n, MaxTimestamp: ts, Segment: true}, CreatedMs: created}
}

// TestPlanCompaction: what a pass may rewrite and whether it is due, as
// Kafka's LogCleanerManager decides: by the dirty ratio, by
// max.compaction.lag.ms, by a tombstone horizon.
func TestPlanCompaction(t *testing.T) {
	const now = 100_000
	base := CompactSettings{Compacts: true, MinDirtyRatio: 0.5, MaxLagMs: 1 << 40}
	three := []Segment{seg(0, 9, 100, 1000, 0), seg(10, 19, 100, 2000, 0), seg(20, 29, 100, 3000, 0)}
	for _, tc := range []struct {
		name      string
		segs      []Segment
		p         Partition
		s         CompactSettings
		cleanable int
		state     CompactionState
		due       bool
	}{
		{name: "nothing", s: base},
		{name: "all dirty", segs: three, s: base, cleanable: 3,
			state: CompactionState{DirtyBytes: 300, DirtyRatio: 1, LagMs: now - 1000}, due: true},
		{name: "ratio under the minimum", segs: three, p: Partition{CleanOffset: 20, HorizonMs: -1}, s: base, cleanable: 3,
			state: CompactionState{CleanBytes: 200, DirtyBytes: 100, DirtyRatio: 1.0 / 3, LagMs: now - 3000}},
		{name: "ratio at the minimum", segs: three, p: Partition{CleanOffset: 10, HorizonMs: -1}, s: base, cleanable: 3,
			state: CompactionState{CleanBytes: 100, DirtyBytes: 200, DirtyRatio: 2.0 / 3, LagMs: now - 2000}, due: true},
		{name: "min lag holds the newest back", segs: three, p: Partition{CleanOffset: 10, HorizonMs: -1},
			s: CompactSettings{Compacts: true, MinDirtyRatio: 0.5, MinLagMs: now - 2500, MaxLagMs: 1 << 40}, cleanable: 2,
			state: CompactionState{CleanBytes: 100, DirtyBytes: 200, DirtyRatio: 0.5, LagMs: now - 2000}, due: true},
		{name: "max lag whatever the ratio", segs: three, p: Partition{CleanOffset: 20, HorizonMs: -1},
			s: CompactSettings{Compacts: true, MinDirtyRatio: 0.9, MaxLagMs: now - 3000}, cleanable: 3,
			state: CompactionState{CleanBytes: 200, DirtyBytes: 100, DirtyRatio: 1.0 / 3, LagMs: now - 3000}, due: true},
		{name: "tombstone horizon", segs: three, p: Partition{CleanOffset: 30, HorizonMs: now}, s: base, cleanable: 3,
			state: CompactionState{CleanBytes: 300}, due: true},
		{name: "tombstone horizon ahead", segs: three, p: Partition{CleanOffset: 30, HorizonMs: now + 1}, s: base, cleanable: 3,
			state: CompactionState{CleanBytes: 300}},
		{name: "all clean: the lag is the WAL's", segs: three, s: base, cleanable: 3,
			p:     Partition{CleanOffset: 30, HorizonMs: -1, WALCreated: func() (int64, bool) { return now - 7, true }},
			state: CompactionState{CleanBytes: 300, LagMs: 7}},
		{name: "no timestamp: the object's time", segs: []Segment{seg(0, 9, 100, -1, 500)}, s: base, cleanable: 1,
			state: CompactionState{DirtyBytes: 100, DirtyRatio: 1, LagMs: now - 500}, due: true},
		{name: "none old enough", segs: three, p: Partition{HorizonMs: now},
			s:     CompactSettings{Compacts: true, MinDirtyRatio: 0.5, MinLagMs: now, MaxLagMs: 1 << 40},
			state: CompactionState{DirtyBytes: 300, LagMs: now - 1000}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := PlanCompaction(tc.segs, tc.p, tc.s, now)
			if v.Cleanable != tc.cleanable || v.State != tc.state || v.Due != tc.due {
				t.Fatalf("cleanable %d, state %+v, due %v\nwant %d, %+v, %v", v.Cleanable, v.State, v.Due, tc.cleanable, tc.state, tc.due)
			}
		})
	}
	t.Run("bounded", func(t *testing.T) {
		segs := make([]Segment, MaxCompactSegments+5)
		for i := range segs {
			segs[i] = seg(int64(i), int64(i), 1, 0, 0)
		}
		if v := PlanCompaction(segs, Partition{HorizonMs: -1}, base, now); v.Cleanable != MaxCompactSegments || !v.Due {
			t.Fatalf("cleanable %d due %v, want %d and due", v.Cleanable, v.Due, MaxCompactSegments)
		}
	})
}
