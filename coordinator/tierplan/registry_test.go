package tierplan

import (
	"context"
	"errors"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/floe-io/floe/coordapi"
)

// key is a test partition key.
type key struct {
	topic     coordapi.TopicID
	partition int32
}

func (k key) Topic() coordapi.TopicID { return k.topic }
func (k key) Partition() int32        { return k.partition }

var topicA, topicB = coordapi.TopicID{1}, coordapi.TopicID{2}

// newTestRegistry returns a registry whose table topics' covered offsets
// rows are rows.
func newTestRegistry(rows map[coordapi.TopicID]map[int32]int64) *Registry[key] {
	return NewRegistry(Config[key]{
		Key: func(id coordapi.TopicID, p int32) key { return key{id, p} },
		ReadCovered: func(id coordapi.TopicID, covered map[int32]int64) error {
			if rows[id] == nil && rows != nil {
				return errors.New("unreadable")
			}
			maps.Copy(covered, rows[id])
			return nil
		},
	})
}

func all(coordapi.TierJobKind) bool { return true }

// TestRegistryJobs: the life of jobs in the registry, step by step: the
// queue dedupes and skips keys with an active job, Next takes only what
// the broker accepts, ids follow each other, and completions, refusals,
// leases and abandons end jobs and count.
func TestRegistryJobs(t *testing.T) {
	r := newTestRegistry(nil)
	a0, a1 := key{topicA, 0}, key{topicA, 1}
	r.Queue(a0, coordapi.TierJobConsolidate)
	r.Queue(a0, coordapi.TierJobConsolidate) // deduped
	r.Queue(a0, coordapi.TierJobCompact)     // another kind: queued
	r.Queue(a1, coordapi.TierJobTable)
	if _, _, ok := r.Next(func(k coordapi.TierJobKind) bool { return k == coordapi.TierJobTableMaintain }); ok {
		t.Fatal("Next took a kind it was not to")
	}
	d, busy, ok := r.Next(func(k coordapi.TierJobKind) bool { return k == coordapi.TierJobTable })
	if !ok || busy || d != (Due[key]{a1, coordapi.TierJobTable}) {
		t.Fatalf("Next(table) = %v %v %v", d, busy, ok)
	}
	d, _, _ = r.Next(all)
	j1 := &Job{Deadline: 100}
	if d.Key != a0 || d.Kind != coordapi.TierJobConsolidate || !r.Assign(d, j1, 7) {
		t.Fatalf("first due %v not assigned", d)
	}
	if j1.Broker != 7 || j1.ID == 0 {
		t.Fatalf("assigned %+v", j1)
	}
	if r.Assign(d, &Job{}, 8) {
		t.Fatal("a second job of a busy key was assigned")
	}
	r.Queue(a0, coordapi.TierJobConsolidate) // busy: not queued
	d, busy, ok = r.Next(all)
	if !ok || !busy || d.Kind != coordapi.TierJobCompact {
		t.Fatalf("the compaction queued before a0 was busy: %v busy %v ok %v", d, busy, ok)
	}
	if _, _, ok := r.Next(all); ok {
		t.Fatal("queued while busy")
	}

	// Completions: an unknown id, and a lease ended, are refused.
	if job, _ := r.Check(a0, j1.ID+1, 0); job != nil {
		t.Fatal("Check took another id")
	}
	if job, ok := r.Check(a0, j1.ID, 50); job != j1 || !ok {
		t.Fatal("Check refused the job within its lease")
	}
	r.Completed(a0, j1, 1000)
	r.Completed(a0, j1, 0) // again: counted, nothing to drop
	j2 := &Job{Deadline: 100}
	r.Queue(a0, coordapi.TierJobConsolidate)
	d, _, _ = r.Next(all)
	if !r.Assign(d, j2, 1) || j2.ID != j1.ID+1 {
		t.Fatalf("ids: %d after %d", j2.ID, j1.ID)
	}
	if job, ok := r.Check(a0, j2.ID, 100); job != j2 || ok {
		t.Fatal("Check took a job past its lease")
	}
	if job, _ := r.Check(a0, j2.ID, 0); job != nil {
		t.Fatal("the expired job is still active")
	}

	// A lease that ends queues the key again; an abandoned job does not.
	j3, j4 := &Job{Deadline: 10}, &Job{Deadline: 1000}
	r.Queue(a0, coordapi.TierJobConsolidate)
	r.Queue(a1, coordapi.TierJobConsolidate)
	d, _, _ = r.Next(all)
	r.Assign(d, j3, 1)
	d, _, _ = r.Next(all)
	r.Assign(d, j4, 1)
	r.Expire(10)
	if d, _, ok := r.Next(all); !ok || d.Key != a0 {
		t.Fatalf("after the lease: %v %v", d, ok)
	}
	r.Abandon(j4.ID, "test")
	r.Abandon(j4.ID, "test") // unknown: nothing
	if _, _, ok := r.Next(all); ok {
		t.Fatal("an abandoned job was queued again")
	}
	r.Refuse(a1, j4) // no longer active: counted only
	r.Retained(40)
	r.Retained(2)
	want := Stats{JobsAssigned: 4, JobsCompleted: 2, JobsRefused: 4, JobsAbandoned: 1, JobsExpired: 1,
		BytesConsolidated: 1000, RetentionDeletions: 2, RetentionBytes: 42}
	if got := r.Stats(); got != want {
		t.Fatalf("stats %+v\nwant  %+v", got, want)
	}
}

// TestRegistryIDs: job ids start at random, within 2^63 / shards.
func TestRegistryIDs(t *testing.T) {
	for _, shards := range []int{0, 1, 4, 1000} {
		r := NewRegistry(Config[key]{Shards: shards})
		limit := uint64(1) << 63
		if shards > 1 {
			limit /= uint64(shards)
		}
		if id := r.mu.nextID; id == 0 || id > limit/2 {
			t.Errorf("%d shards: first id %d, want in [1, %d]", shards, id, limit/2)
		}
	}
}

// TestRegistryCompaction: the views kept, the passes queued and counted.
func TestRegistryCompaction(t *testing.T) {
	r := newTestRegistry(nil)
	a0, a1 := key{topicA, 0}, key{topicA, 1}
	r.SetCompaction(a0, CompactionState{CleanBytes: 1}, true)
	r.SetCompaction(a1, CompactionState{CleanBytes: 2}, false)
	if d, _, ok := r.Next(all); !ok || d != (Due[key]{a0, coordapi.TierJobCompact}) {
		t.Fatalf("due %v %v", d, ok)
	}
	if _, _, ok := r.Next(all); ok {
		t.Fatal("a pass not due was queued")
	}
	r.KeepCompaction(map[key]bool{a1: true})
	if got := r.Compaction(); len(got) != 1 || got[a1].CleanBytes != 2 {
		t.Fatalf("views %v", got)
	}
	j := &Job{}
	r.Compacted(a0, j, CompactionStats{Passes: 1, BytesIn: 10, BytesOut: 4, RecordsIn: 3, RecordsOut: 1})
	r.Compacted(a0, j, CompactionStats{Passes: 1, BytesIn: 1})
	if got, want := r.CompactionStats(), (CompactionStats{Passes: 2, BytesIn: 11, BytesOut: 4, RecordsIn: 3, RecordsOut: 1}); got != want {
		t.Fatalf("compaction stats %+v, want %+v", got, want)
	}
	if r.Stats().JobsCompleted != 2 {
		t.Fatal("passes are not counted as completed jobs")
	}
}

// TestTableJobPart: slot 0 keeps the single job's key, the others follow
// the maintenance job's.
func TestTableJobPart(t *testing.T) {
	for slot, want := range []int32{-1, -3, -4, -5} {
		if got := TableJobPart(slot); got != want {
			t.Errorf("slot %d: %d, want %d", slot, got, want)
		}
	}
}

// TestSpan: a table job covers from the covered offset (not below the log
// start) to the LSO, and not into the WAL unless it reads it.
func TestSpan(t *testing.T) {
	p := TablePart{LogStart: 10, WALStart: 50, Stable: 70, HWM: 80}
	for _, tc := range []struct {
		name           string
		covered        int64
		known, wal     bool
		wantFrom, want int64
	}{
		{"unknown: the log start", 0, false, false, 10, 50},
		{"covered below the log start", 5, true, false, 10, 50},
		{"covered", 30, true, false, 30, 50},
		{"through the WAL", 30, true, true, 30, 70},
		{"LSO below the WAL start", 30, true, false, 30, 50},
	} {
		from, to := Span(p, tc.covered, tc.known, tc.wal)
		if from != tc.wantFrom || to != tc.want {
			t.Errorf("%s: [%d, %d), want [%d, %d)", tc.name, from, to, tc.wantFrom, tc.want)
		}
	}
	if from, to := Span(TablePart{WALStart: 50, Stable: 20}, 0, false, false); from != 0 || to != 20 {
		t.Errorf("LSO in segments: [%d, %d)", from, to)
	}
}

// TestPlanTables: a table topic gets its maintenance job at once and then
// every maintenance interval; table jobs, one a waiting partition up to
// the slots (SetTableLimits), within the interval only after a full job;
// dropped topics are forgotten.
func TestPlanTables(t *testing.T) {
	ctx := context.Background()
	r := newTestRegistry(map[coordapi.TopicID]map[int32]int64{topicA: {0: 5}, topicB: {}})
	r.SetTableLimits(0, 2)
	parts := []TablePart{
		{Partition: 0, WALStart: 5, Stable: 5, HWM: 5},   // covered
		{Partition: 1, WALStart: 9, Stable: 9, HWM: 9},   // waiting
		{Partition: 2, WALStart: 9, Stable: 9, HWM: 9},   // waiting
		{Partition: 3, WALStart: 9, Stable: 12, HWM: 12}, // waiting, in the WAL
	}
	topics := map[coordapi.TopicID][]TablePart{topicA: parts}
	drain := func() (out []Due[key]) {
		for {
			d, _, ok := r.Next(all)
			if !ok {
				return out
			}
			out = append(out, d)
		}
	}
	if err := r.PlanTables(ctx, topics, 1000, time.Minute, time.Hour); err != nil {
		t.Fatal(err)
	}
	got := drain()
	want := []Due[key]{{key{topicA, TableMaintainPart}, coordapi.TierJobTableMaintain},
		{key{topicA, TableJobPart(0)}, coordapi.TierJobTable}, {key{topicA, TableJobPart(1)}, coordapi.TierJobTable}}
	if !slices.Equal(got, want) {
		t.Fatalf("first pass queued %v\nwant %v", got, want)
	}
	r.TableMaintained(topicA, 1000)
	r.TablePlanned(topicA, 1000, false)
	if err := r.PlanTables(ctx, topics, 2000, time.Minute, time.Hour); err != nil {
		t.Fatal(err)
	}
	if got := drain(); len(got) != 0 {
		t.Fatalf("within the intervals: %v", got)
	}
	r.TablePlanned(topicA, 1000, true) // full: the next is due at once
	if err := r.PlanTables(ctx, topics, 2000, time.Minute, time.Hour); err != nil {
		t.Fatal(err)
	}
	if got := drain(); len(got) != 2 {
		t.Fatalf("after a full job: %v", got)
	}

	// The spans of a slot: partitions others hold are not its, the
	// longest waiting first.
	job := &Job{}
	job.Kind, job.Table = coordapi.TierJobTable, &coordapi.TableJob{Ranges: []coordapi.TableRange{{Partition: 2}}}
	if !r.Assign(Due[key]{key{topicA, TableJobPart(1)}, coordapi.TierJobTable}, job, 1) {
		t.Fatal("not assigned")
	}
	sp, spans, budget := r.TableSpans(key{topicA, TableJobPart(0)}, slices.Clone(parts), false)
	if len(sp) != 3 || sp[0].Partition != 1 || sp[2].Partition != 0 || budget != MaxTableJobBytes {
		t.Fatalf("spans of %v, budget %d", sp, budget)
	}
	if spans[0] != [2]int64{0, 9} || spans[1] != [2]int64{0, 9} || spans[2] != [2]int64{5, 5} {
		t.Fatalf("spans %v", spans)
	}
	// A job overlapping the one on partition 2 is not assigned, and queued
	// again to be built again.
	over := &Job{}
	over.Kind, over.Table = coordapi.TierJobTable, &coordapi.TableJob{Ranges: []coordapi.TableRange{{Partition: 1}, {Partition: 2}}}
	if r.Assign(Due[key]{key{topicA, TableJobPart(0)}, coordapi.TierJobTable}, over, 1) {
		t.Fatal("an overlapping table job was assigned")
	}
	if got := drain(); len(got) != 1 || got[0].Key != (key{topicA, TableJobPart(0)}) {
		t.Fatalf("not queued again: %v", got)
	}

	// Its completion learns its own partitions' covered offsets only.
	row := r.TableCompleted(key{topicA, TableJobPart(1)}, job, []coordapi.TableCovered{{Partition: 2, Next: 9}, {Partition: 1, Next: 9}})
	if !maps.Equal(row, map[int32]int64{0: 5, 2: 9}) {
		t.Fatalf("row %v", row)
	}
	if row := r.TableCompleted(key{topicA, TableJobPart(1)}, job, []coordapi.TableCovered{{Partition: 2, Next: 9}}); row != nil {
		t.Fatalf("unchanged, yet a row %v", row)
	}
	if r.TableHold(topicA, 2) != 9 || r.TableHold(topicA, 1) != -1 {
		t.Fatal("holds")
	}
	if dropped := r.DropTables(func(id coordapi.TopicID) bool { return id != topicA }); !slices.Equal(dropped, []coordapi.TopicID{topicA}) {
		t.Fatalf("dropped %v", dropped)
	}
	if cov := r.TableCovered(topicA); !maps.Equal(cov, map[int32]int64{0: 5}) {
		t.Fatalf("after the drop, read again: %v", cov)
	}
}

// TestTableCoveredUnreadable: a row that cannot be read starts the
// planner from the log start.
func TestTableCoveredUnreadable(t *testing.T) {
	r := newTestRegistry(map[coordapi.TopicID]map[int32]int64{topicA: {0: 5}})
	if cov := r.TableCovered(topicB); len(cov) != 0 {
		t.Fatalf("covered %v", cov)
	}
	if r.TableHold(topicA, 0) != 5 {
		t.Fatal("the row was not read")
	}
}

// TestTableLags: the offsets past the covered offsets, summed by topic,
// and how long the oldest uncovered record the passes saw has waited.
func TestTableLags(t *testing.T) {
	r := newTestRegistry(map[coordapi.TopicID]map[int32]int64{topicA: {0: 5}, topicB: {}})
	ctx := context.Background()
	a := []TablePart{{Partition: 0, HWM: 8}, {Partition: 1, LogStart: 2, HWM: 4}}
	if err := r.PlanTables(ctx, map[coordapi.TopicID][]TablePart{topicA: a}, 1000, time.Minute, time.Hour); err != nil {
		t.Fatal(err)
	}
	lags := r.TableLags([]LagPart{
		{ID: topicA, Name: "a", Partition: 0, HWM: 8},
		{ID: topicA, Name: "a", Partition: 1, LogStart: 2, HWM: 4},
		{ID: topicB, Name: "b", Partition: 0, HWM: 0},
	}, 5000)
	if want := map[string]TableLag{"a": {Offsets: 5, Ms: 4000}, "b": {}}; !maps.Equal(lags, want) {
		t.Fatalf("lags %v, want %v", lags, want)
	}
}

// TestSawHWM: a partition keeps the high watermarks the tier passes saw
// grow from the first past its covered offset on; past MaxHWMSeen it
// keeps every other one but the first, whose time the lag reads.
func TestSawHWM(t *testing.T) {
	for _, tc := range []struct {
		name    string
		covered int64
		seen    []HWMSeen // (ms, hwm) the passes saw, in order
		want    []HWMSeen
	}{
		{name: "nothing uncovered", covered: 10, seen: []HWMSeen{{1, 5}, {2, 10}}, want: []HWMSeen{}},
		{name: "from the first past covered", covered: 10, seen: []HWMSeen{{1, 5}, {2, 12}, {3, 12}, {4, 20}}, want: []HWMSeen{{2, 12}, {4, 20}}},
		{name: "unchanged is not kept", covered: 0, seen: []HWMSeen{{1, 5}, {2, 5}, {3, 5}}, want: []HWMSeen{{1, 5}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := &Table{covered: map[int32]int64{0: tc.covered}}
			for _, s := range tc.seen {
				ts.sawHWM(TablePart{Partition: 0, HWM: s.HWM}, s.Ms)
			}
			if got := ts.grew[0]; len(got) != len(tc.want) || (len(got) > 0 && !slices.Equal(got, tc.want)) {
				t.Fatalf("kept %v, want %v", got, tc.want)
			}
		})
	}
	t.Run("bounded", func(t *testing.T) {
		ts := &Table{covered: map[int32]int64{}}
		for i := range int64(10 * MaxHWMSeen) {
			ts.sawHWM(TablePart{Partition: 0, HWM: i + 1}, i)
		}
		if g := ts.grew[0]; len(g) > MaxHWMSeen || g[0] != (HWMSeen{0, 1}) {
			t.Fatalf("%d kept, the first %v; want at most %d, the first (0, 1)", len(g), g[0], MaxHWMSeen)
		}
	})
}
