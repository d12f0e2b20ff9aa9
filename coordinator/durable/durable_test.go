package durable

import "testing"

// Each step notes commits written or made durable, or forgets the
// partition, then checks what the tracker answers for partition "p".
func TestTracker(t *testing.T) {
	type check struct {
		hwm        int64 // the high watermark in memory, for ReadLimit
		limit      int64
		ok         bool // ReadLimit without markers
		okMarkers  bool // ReadLimit with markers
		covers     int64
		coversOK   bool
		allDurable bool
	}
	mark := func(hwm int64, marker bool) []Mark[string] { return []Mark[string]{{"p", hwm, marker}} }
	var d Tracker[string]
	for _, step := range []struct {
		name string
		do   func()
		want check
	}{
		{"nothing written: durable whole", func() {},
			check{hwm: 10, limit: 10, ok: true, okMarkers: true, covers: 10, coversOK: true, allDurable: true}},
		{"first commit in flight: unknown", func() { d.Writing(mark(15, false)) },
			check{hwm: 15, ok: false, okMarkers: false, covers: 1, coversOK: false}},
		{"first commit durable", func() { d.Durable(mark(15, false)) },
			check{hwm: 15, limit: 15, ok: true, okMarkers: true, covers: 15, coversOK: true, allDurable: true}},
		{"second in flight: read to the first", func() { d.Writing(mark(20, false)) },
			check{hwm: 20, limit: 15, ok: true, okMarkers: true, covers: 15, coversOK: true, allDurable: false}},
		{"beyond the durable: not covered", func() {},
			check{hwm: 20, limit: 15, ok: true, okMarkers: true, covers: 16, coversOK: false}},
		{"a marker in flight", func() { d.Writing(mark(21, true)) },
			check{hwm: 21, limit: 15, ok: true, okMarkers: false, covers: 10, coversOK: false}},
		{"durable out of order: the highest stays", func() { d.Durable(mark(21, true)); d.Durable(mark(20, false)) },
			check{hwm: 21, limit: 21, ok: true, okMarkers: true, covers: 21, coversOK: true, allDurable: true}},
		{"memory behind the tracker: memory's", func() {},
			check{hwm: 18, limit: 18, ok: true, okMarkers: true, covers: 21, coversOK: true, allDurable: true}},
		{"forgotten while a commit is in flight", func() { d.Writing(mark(30, false)); d.Forget("p"); d.Durable(mark(30, false)) },
			check{hwm: 30, limit: 30, ok: true, okMarkers: true, covers: 30, coversOK: true, allDurable: true}},
	} {
		step.do()
		w := step.want
		limit, ok := d.ReadLimit("p", w.hwm, false)
		if ok != w.ok || ok && limit != w.limit {
			t.Errorf("%s: ReadLimit(%d) = %d, %v; want %d, %v", step.name, w.hwm, limit, ok, w.limit, w.ok)
		}
		if _, ok := d.ReadLimit("p", w.hwm, true); ok != w.okMarkers {
			t.Errorf("%s: ReadLimit(%d, markers) ok %v, want %v", step.name, w.hwm, ok, w.okMarkers)
		}
		if got := d.Covers("p", w.covers); got != w.coversOK {
			t.Errorf("%s: Covers(%d) = %v, want %v", step.name, w.covers, got, w.coversOK)
		}
		if got := d.AllDurable("p"); got != w.allDurable {
			t.Errorf("%s: AllDurable = %v, want %v", step.name, got, w.allDurable)
		}
	}
	if d.Noted("p") {
		t.Error("a forgotten partition, whose in-flight commit became durable after, is noted")
	}
	if _, ok := d.ReadLimit("other", 7, true); !ok {
		t.Error("a partition never written is not durable")
	}
}
