package tierplan

import (
	"testing"

	"github.com/floe-io/floe/coordinator/layout"
)

// TestCut: which WAL runs a consolidation job takes, and whether they
// make a job now. Runs are (commit ms, bytes, batches), in order.
func TestCut(t *testing.T) {
	const now = 100_000
	s := Settings{LocalMs: 10_000, LocalBytes: -1, SegmentBytes: 1000, SegmentMs: 50_000}
	type run struct {
		createdMs, n int64
		batches      int
	}
	for _, tc := range []struct {
		name     string
		s        Settings
		walBytes int64
		runs     []run
		taken    int
		ready    bool
	}{
		{name: "none past retention", s: s, runs: []run{{now - 5000, 10, 1}}},
		{name: "a full segment", s: s, runs: []run{{0, 600, 1}, {1, 400, 1}, {2, 1, 1}}, taken: 2, ready: true},
		{name: "stops at retention, short and young: waits", s: s, runs: []run{{now - 15_000, 10, 1}, {now - 5000, 10, 1}}, taken: 1},
		{name: "short but twice retention old", s: s, runs: []run{{now - 20_000, 10, 1}, {now - 5000, 10, 1}}, taken: 1, ready: true},
		{name: "segment.ms span", s: s, runs: []run{{0, 10, 1}, {49_999, 10, 1}, {50_000, 10, 1}}, taken: 2, ready: true},
		{name: "batch bound", s: s, runs: []run{{0, 1, MaxJobBatches - 1}, {0, 1, 2}}, taken: 1, ready: true},
		{name: "first run over a segment", s: s, runs: []run{{0, 5000, 1}, {0, 1, 1}}, taken: 1, ready: true},
		{name: "first run over the largest segment", s: s, runs: []run{{0, layout.MaxSegmentData + 1, 1}}},
		{name: "over local bytes: young runs go", s: Settings{LocalMs: 10_000, LocalBytes: 100, SegmentBytes: 1000, SegmentMs: 50_000}, walBytes: 101,
			runs: []run{{now, 10, 1}, {now, 10, 1}}, taken: 2, ready: true},
		{name: "under local bytes: by time", s: Settings{LocalMs: 10_000, LocalBytes: 100, SegmentBytes: 1000, SegmentMs: 50_000}, walBytes: 100,
			runs: []run{{now, 10, 1}}},
		{name: "no time retention", s: Settings{LocalMs: -1, LocalBytes: -1, SegmentBytes: 1000, SegmentMs: 50_000}, runs: []run{{0, 10, 1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewCut(tc.s, tc.walBytes, now)
			taken := 0
			for _, r := range tc.runs {
				if !c.Take(r.createdMs, r.n, r.batches) {
					break
				}
				taken++
			}
			if taken != tc.taken || c.Ready() != tc.ready {
				t.Fatalf("took %d runs, ready %v; want %d, %v", taken, c.Ready(), tc.taken, tc.ready)
			}
		})
	}
}
