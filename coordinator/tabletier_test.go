package coordinator

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/coordinator/layout"
	"github.com/floe-io/floe/coordinator/tierplan"
)

// consolidateAll claims and completes every due consolidation job as a
// broker without table jobs would, and fails on a table job.
func (e *testEnv) consolidateAll(seg *int) {
	e.t.Helper()
	ctx := context.Background()
	for {
		job, ok, err := e.c.ClaimTierJob(ctx, coordapi.ClaimTierJobRequest{BrokerID: 7})
		if err != nil {
			e.t.Fatal(err)
		}
		if !ok {
			return
		}
		if job.Kind != coordapi.TierJobConsolidate {
			e.t.Fatalf("a broker without table jobs claimed a job of kind %d", job.Kind)
		}
		var n int64
		for _, b := range job.Batches {
			n += int64(b.ByteLength)
		}
		*seg++
		if err := e.c.CompleteTierJob(ctx, coordapi.CompleteTierJobRequest{JobID: job.ID, TopicID: job.TopicID, Partition: job.Partition,
			BaseOffset: job.BaseOffset, LastOffset: job.LastOffset, ObjectKey: "seg" + string(rune('a'+*seg)), ObjectSize: n + 1000, DataLength: n}); err != nil {
			e.t.Fatal(err)
		}
	}
}

// claimTable claims as a broker that runs table jobs; ok false when no
// job is due.
func (e *testEnv) claimTable() (coordapi.TierJob, bool) {
	e.t.Helper()
	job, ok, err := e.c.ClaimTierJob(context.Background(), coordapi.ClaimTierJobRequest{BrokerID: 8, Tables: true})
	if err != nil {
		e.t.Fatal(err)
	}
	return job, ok
}

func completeTable(e *testEnv, job coordapi.TierJob, covered ...coordapi.TableCovered) error {
	return e.c.CompleteTierJob(context.Background(), coordapi.CompleteTierJobRequest{JobID: job.ID, TopicID: job.TopicID, Partition: job.Partition,
		Table: &coordapi.TableResult{SnapshotID: 1, Covered: covered}})
}

// rangesOf formats a table job's ranges as partition:from-to/segments.
func rangesOf(job coordapi.TierJob) []string {
	var out []string
	for _, r := range job.Table.Ranges {
		s := ""
		for _, sg := range r.Segments {
			s += "," + sg.ObjectKey
		}
		out = append(out, string(rune('0'+r.Partition))+":"+itoa(r.From)+"-"+itoa(r.To)+s)
	}
	return out
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// TestTableJobPlanning: a table.enabled topic gets one table job for its
// partitions' records in segments, from the covered offsets on, only
// claimed by brokers that run table jobs, at most once per TableInterval,
// planned again when its lease ends; a report short of its ranges is
// refused; a topic without the config never gets one.
func TestTableJobPlanning(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.TierInterval = -1; o.TableInterval = 5 * time.Minute })
	ctx := context.Background()
	// retention.ms=-1: the batches' timestamps are from 1970.
	tp := e.topic("orders", 2, map[string]string{coordapi.ConfigTableEnabled: "true", coordapi.ConfigTablePartitioning: "hour(timestamp)", "retention.ms": "-1"})
	other := e.topic("plain", 1, map[string]string{"retention.ms": "-1"})
	e.commit("w1", plain(tp.ID, 0, 2), plain(tp.ID, 0, 1), plain(tp.ID, 1, 4), plain(other.ID, 0, 3))
	tick := func(d time.Duration) {
		t.Helper()
		e.clock.Advance(d)
		if err := e.c.TierTick(ctx); err != nil {
			t.Fatal(err)
		}
	}
	var seg int
	tick(21 * time.Minute) // past the WAL retention: consolidation first
	e.consolidateAll(&seg) // a broker without table jobs never gets a table job
	if seg != 3 {
		t.Fatalf("%d consolidation jobs, want 3", seg)
	}
	tick(0)
	e.consolidateAll(&seg)
	job, ok := e.claimTable()
	if !ok || job.Kind != coordapi.TierJobTable || job.Partition != -1 || job.TopicID != tp.ID || job.Table == nil {
		t.Fatalf("table job: ok %v %+v", ok, job)
	}
	if job.Table.TopicName != "orders" || job.Table.Partitioning != "hour(timestamp)" || job.Table.ValueSchema != "" || job.Table.Compacted {
		t.Fatalf("table job's table: %+v", job.Table)
	}
	if got := rangesOf(job); len(got) != 2 || got[0] != "0:0-5"+got[0][5:] || got[1][:5] != "1:0-5" {
		t.Fatalf("ranges %v", got)
	}
	for _, r := range job.Table.Ranges {
		if len(r.Segments) == 0 || r.Segments[0].BaseOffset > r.From || r.Segments[len(r.Segments)-1].LastOffset != r.To-1 || !r.Segments[0].Segment {
			t.Fatalf("range %+v: its segments do not hold it", r)
		}
	}
	if _, ok := e.claimTable(); ok {
		t.Fatal("a second job while the first runs")
	}
	if err := completeTable(e, job, coordapi.TableCovered{Partition: 0, Next: 4}, coordapi.TableCovered{Partition: 1, Next: 5}); !errors.Is(err, kerr.StaleBrokerEpoch) {
		t.Fatalf("a report short of a range: %v", err)
	}

	// Planned again (the refusal dropped the job), but only after the
	// interval.
	tick(time.Minute)
	if _, ok := e.claimTable(); ok {
		t.Fatal("a table job within the interval")
	}
	tick(5 * time.Minute)
	job, ok = e.claimTable()
	if !ok {
		t.Fatal("no table job after the interval")
	}
	if err := completeTable(e, job, coordapi.TableCovered{Partition: 0, Next: 5}, coordapi.TableCovered{Partition: 1, Next: 5}); err != nil {
		t.Fatal(err)
	}
	if cov := e.c.TableCovered(tp.ID); cov[0] != 5 || cov[1] != 5 {
		t.Fatalf("covered %v", cov)
	}
	if lags := e.c.tableLags(); lags["orders"] != (tierplan.TableLag{}) || len(lags) != 1 {
		t.Fatalf("table lags %v, want orders 0 and no other topic", lags)
	}
	// Nothing new: no job, however long.
	tick(10 * time.Minute)
	if job, ok := e.claimTable(); ok {
		t.Fatalf("a job with nothing new: %+v", job)
	}

	// New records reach the table once consolidated, from the covered
	// offset; a job whose lease ends is planned again.
	e.commit("w2", plain(tp.ID, 1, 2))
	if lags := e.c.tableLags(); lags["orders"] != (tierplan.TableLag{Offsets: 3}) {
		t.Fatalf("table lags %v, want orders 3 offsets, no tier pass saw them yet", lags)
	}
	tick(0) // a pass sees them: they wait from now
	tick(21 * time.Minute)
	if lags := e.c.tableLags(); lags["orders"] != (tierplan.TableLag{Offsets: 3, Ms: (21 * time.Minute).Milliseconds()}) {
		t.Fatalf("table lags %v, want orders 3 offsets for 21 minutes", lags)
	}
	e.consolidateAll(&seg)
	tick(0)
	job, ok = e.claimTable()
	if got := rangesOf(job); !ok || len(got) != 1 || got[0][:5] != "1:5-8" {
		t.Fatalf("after new records: ok %v, ranges %v", ok, got)
	}
	tick(3 * time.Minute) // past the lease
	if err := completeTable(e, job, coordapi.TableCovered{Partition: 1, Next: 8}); err == nil {
		t.Fatal("a completion after the lease was accepted")
	}
	tick(5 * time.Minute)
	if job2, ok := e.claimTable(); !ok || job2.ID == job.ID || rangesOf(job2)[0][:5] != "1:5-8" {
		t.Fatalf("the job again after its lease: ok %v %+v", ok, job2)
	}
	// A topic without the config never gets a table job.
	if _, ok := e.c.TableCovered(other.ID)[0]; ok {
		t.Fatal("the plain topic has a covered offset")
	}
}

// TestTableJobTransactions: a table job never reaches the last stable
// offset (an open transaction's first offset), and carries the aborted
// transactions of its range, as a compaction job does.
func TestTableJobTransactions(t *testing.T) {
	e, _ := txnEnv(t)
	ctx := context.Background()
	tp := e.topic("orders", 1, map[string]string{coordapi.ConfigTableEnabled: "true", "retention.ms": "-1"})
	p0 := coordapi.TopicPartition{TopicID: tp.ID, Partition: 0}
	aborted := e.initTxn("aborted", 60000)
	e.addParts("aborted", aborted, p0)
	e.commit("w1", txnBatch("aborted", tp.ID, 0, 4, aborted.ProducerID, 0, 0)) // 0-4
	if err := e.endTxn("aborted", aborted, false); err != nil {                // marker at 5
		t.Fatal(err)
	}
	e.commit("w2", plain(tp.ID, 0, 1)) // 6-7
	open := e.initTxn("open", 60000)
	e.addParts("open", open, p0)
	e.commit("w3", txnBatch("open", tp.ID, 0, 1, open.ProducerID, 0, 0)) // 8-9, open
	if st := e.state(tp.ID, 0); st.LastStableOffset != 8 || st.HighWatermark != 10 {
		t.Fatalf("state %+v", st)
	}
	e.clock.Advance(21 * time.Minute)
	if err := e.c.TierTick(ctx); err != nil {
		t.Fatal(err)
	}
	var seg int
	e.consolidateAll(&seg)
	if err := e.c.TierTick(ctx); err != nil {
		t.Fatal(err)
	}
	job, ok := e.claimTable()
	if !ok || len(job.Table.Ranges) != 1 {
		t.Fatalf("table job: ok %v %+v", ok, job.Table)
	}
	r := job.Table.Ranges[0]
	if r.From != 0 || r.To != 8 {
		t.Fatalf("range %d-%d, want 0-8: never past the last stable offset", r.From, r.To)
	}
	if len(r.Aborted) != 1 || r.Aborted[0].ProducerID != aborted.ProducerID || r.Aborted[0].FirstOffset != 0 {
		t.Fatalf("aborted transactions %+v", r.Aborted)
	}
}

// TestTableHold: retention never moves a table topic's log start past
// what its table took: nothing before the first job reports, then up to
// its covered offset; a topic without a table is not held.
func TestTableHold(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.TierInterval = -1 })
	ctx := context.Background()
	// retention.ms=1000: the batches' timestamps (1970) are long past it.
	tp := e.topic("orders", 1, map[string]string{coordapi.ConfigTableEnabled: "true", "retention.ms": "1000"})
	other := e.topic("plain", 1, map[string]string{"retention.ms": "1000"})
	e.commit("w1", plain(tp.ID, 0, 2), plain(tp.ID, 0, 1), plain(other.ID, 0, 4))
	tick := func() {
		t.Helper()
		if err := e.c.TierTick(ctx); err != nil {
			t.Fatal(err)
		}
	}
	tick()
	if st := e.state(other.ID, 0); st.LogStartOffset != 5 {
		t.Fatalf("the topic without a table: log start %d, want 5", st.LogStartOffset)
	}
	for _, step := range []struct {
		covered, wantStart int64
	}{
		{-1, 0}, // no job has reported: nothing deleted
		{3, 3},
		{5, 5},
	} {
		if step.covered >= 0 {
			e.c.tier.SetTableCovered(tp.ID, 0, step.covered)
		}
		tick()
		if st := e.state(tp.ID, 0); st.LogStartOffset != step.wantStart {
			t.Fatalf("covered %d: log start %d, want %d", step.covered, st.LogStartOffset, step.wantStart)
		}
	}
}

// TestTableMaintainPlanning: a table topic gets a table maintenance job at
// its first tier pass and then once per TableMaintainInterval, only
// claimed by brokers that run them, alongside (not instead of) its table
// job, carrying table.retention.ms, the clock and the orphan grace; its
// completion frees it, and a topic without a table gets none.
func TestTableMaintainPlanning(t *testing.T) {
	e := newEnv(t, func(o *Options) {
		o.TierInterval = -1
		o.TableMaintainInterval = 24 * time.Hour
		o.TierJobLease = 2 * time.Minute
	})
	ctx := context.Background()
	tp := e.topic("orders", 1, map[string]string{coordapi.ConfigTableEnabled: "true", coordapi.ConfigTableRetentionMs: "604800000", "retention.ms": "-1"})
	forever := e.topic("forever", 1, map[string]string{coordapi.ConfigTableEnabled: "true", "retention.ms": "-1"})
	e.topic("plain", 1, map[string]string{"retention.ms": "-1"})
	tick := func(d time.Duration) {
		t.Helper()
		e.clock.Advance(d)
		if err := e.c.TierTick(ctx); err != nil {
			t.Fatal(err)
		}
	}
	claim := func(req coordapi.ClaimTierJobRequest) []coordapi.TierJob {
		t.Helper()
		var jobs []coordapi.TierJob
		for {
			job, ok, err := e.c.ClaimTierJob(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				return jobs
			}
			jobs = append(jobs, job)
		}
	}
	tick(time.Minute)
	if jobs := claim(coordapi.ClaimTierJobRequest{BrokerID: 7, Tables: true}); len(jobs) != 0 {
		t.Fatalf("a broker without maintenance claimed %+v", jobs)
	}
	jobs := claim(coordapi.ClaimTierJobRequest{BrokerID: 8, Tables: true, TableMaintain: true})
	if len(jobs) != 2 {
		t.Fatalf("%d maintenance jobs, want one per table topic: %+v", len(jobs), jobs)
	}
	byTopic := map[coordapi.TopicID]coordapi.TierJob{}
	for _, j := range jobs {
		if j.Kind != coordapi.TierJobTableMaintain || j.Partition != -2 || j.Maintain == nil {
			t.Fatalf("job %+v", j)
		}
		byTopic[j.TopicID] = j
	}
	nowMs := e.clock.Now().UnixMilli()
	for _, tc := range []struct {
		id        coordapi.TopicID
		name      string
		retention int64
	}{{tp.ID, "orders", 604800000}, {forever.ID, "forever", -1}} {
		want := coordapi.TableMaintainJob{TopicName: tc.name, NowMs: nowMs, RetentionMs: tc.retention, OrphanGraceMs: time.Hour.Milliseconds()}
		if got := byTopic[tc.id].Maintain; got == nil || *got != want {
			t.Fatalf("%s's job %+v, want %+v", tc.name, got, want)
		}
	}
	report := func(j coordapi.TierJob) error {
		return e.c.CompleteTierJob(ctx, coordapi.CompleteTierJobRequest{JobID: j.ID, TopicID: j.TopicID, Partition: j.Partition,
			Table: &coordapi.TableResult{SnapshotID: 9, Rows: 100}})
	}
	if err := report(byTopic[tp.ID]); err != nil {
		t.Fatal(err)
	}
	if err := report(byTopic[tp.ID]); !errors.Is(err, kerr.StaleBrokerEpoch) {
		t.Fatalf("a second report of a completed job: %v", err)
	}
	// Not again within the interval, whatever became of the last (the
	// other topic's lease ended unreported).
	tick(23 * time.Hour)
	if jobs := claim(coordapi.ClaimTierJobRequest{BrokerID: 8, TableMaintain: true}); len(jobs) != 1 || jobs[0].TopicID != forever.ID {
		t.Fatalf("within the interval: %+v, want only the expired lease's job again", jobs)
	} else if err := report(jobs[0]); err != nil {
		t.Fatal(err)
	}
	// A day after each was built: orders now, forever (built again
	// when its lease ended, at 23h) a day after that.
	tick(time.Hour)
	if jobs := claim(coordapi.ClaimTierJobRequest{BrokerID: 8, TableMaintain: true}); len(jobs) != 1 || jobs[0].TopicID != tp.ID {
		t.Fatalf("after the interval: %+v, want orders'", jobs)
	} else if err := report(jobs[0]); err != nil {
		t.Fatal(err)
	}
	tick(22 * time.Hour)
	if jobs := claim(coordapi.ClaimTierJobRequest{BrokerID: 8, TableMaintain: true}); len(jobs) != 0 {
		t.Fatalf("%+v before forever's interval", jobs)
	}
	tick(time.Hour)
	if jobs := claim(coordapi.ClaimTierJobRequest{BrokerID: 8, TableMaintain: true}); len(jobs) != 1 || jobs[0].TopicID != forever.ID {
		t.Fatalf("after the interval: %+v, want forever's", jobs)
	}
}

// TestTableCoveredPersisted: the covered offsets a table job reports
// outlive a restart (their row, family 'c'): the reopened coordinator
// holds retention at them and plans the next job from them without a
// job reporting first; the row goes with its topic.
func TestTableCoveredPersisted(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.TierInterval = -1 })
	ctx := context.Background()
	// retention.ms=1000: the batches' timestamps (1970) are long past it.
	tp := e.topic("orders", 1, map[string]string{coordapi.ConfigTableEnabled: "true", "retention.ms": "1000"})
	e.commit("w1", plain(tp.ID, 0, 2), plain(tp.ID, 0, 1))
	tick := func(d time.Duration) {
		t.Helper()
		e.clock.Advance(d)
		if err := e.c.TierTick(ctx); err != nil {
			t.Fatal(err)
		}
	}
	var seg int
	tick(21 * time.Minute)
	e.consolidateAll(&seg)
	tick(0)
	if st := e.state(tp.ID, 0); st.LogStartOffset != 0 {
		t.Fatalf("log start %d before the table took anything", st.LogStartOffset)
	}
	job, ok := e.claimTable()
	if !ok {
		t.Fatal("no table job")
	}
	if err := completeTable(e, job, coordapi.TableCovered{Partition: 0, Next: 5}); err != nil {
		t.Fatal(err)
	}
	e.commit("w2", plain(tp.ID, 0, 2)) // 5-7

	e.reopen()
	if cov := e.c.TableCovered(tp.ID); cov[0] != 5 || len(cov) != 1 {
		t.Fatalf("covered after a restart %v, want partition 0 at 5", cov)
	}
	tick(21 * time.Minute) // retention, held at 5; then consolidation
	if st := e.state(tp.ID, 0); st.LogStartOffset != 5 {
		t.Fatalf("log start %d after a restart, want the covered 5", st.LogStartOffset)
	}
	e.consolidateAll(&seg)
	tick(0)
	job, ok = e.claimTable()
	if got := rangesOf(job); !ok || len(got) != 1 || got[0][:5] != "0:5-8" {
		t.Fatalf("the first job after a restart: ok %v, ranges %v; want 0:5-8", ok, got)
	}

	if _, err := e.c.DeleteTopic(ctx, "orders"); err != nil {
		t.Fatal(err)
	}
	if _, closer, err := e.c.db.Get(layout.TableCoveredKey(tp.ID)); err == nil {
		closer.Close()
		t.Fatal("the covered offsets row outlived its topic")
	}
}

// TestTableJobFull: a table job that stops short of what segments hold
// (its byte budget) queues the next as it completes, without waiting for
// the interval, until the table has caught up; then the interval holds.
func TestTableJobFull(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.TierInterval = -1; o.TableInterval = time.Hour })
	ctx := context.Background()
	tp := e.topic("orders", 1, map[string]string{coordapi.ConfigTableEnabled: "true", "retention.ms": "-1"})
	e.c.tier.SetTableLimits(1, 0) // a segment a job
	var seg int
	for _, w := range []string{"w1", "w2", "w3"} { // a segment each: 0-1, 2-3, 4-5
		e.commit(w, plain(tp.ID, 0, 1))
		e.clock.Advance(21 * time.Minute)
		if err := e.c.TierTick(ctx); err != nil {
			t.Fatal(err)
		}
		e.consolidateAll(&seg)
	}
	if err := e.c.TierTick(ctx); err != nil {
		t.Fatal(err)
	}
	var got []string
	for {
		job, ok := e.claimTable()
		if !ok {
			break
		}
		got = append(got, rangesOf(job)...)
		r := job.Table.Ranges[0]
		if err := completeTable(e, job, coordapi.TableCovered{Partition: 0, Next: r.To}); err != nil {
			t.Fatal(err)
		}
	}
	if len(got) != seg || seg < 2 {
		t.Fatalf("jobs %v for %d segments, within one interval: want a job a segment", got, seg)
	}
	if cov := e.c.TableCovered(tp.ID); cov[0] != 6 {
		t.Fatalf("covered %v, want 6", cov)
	}
	// Caught up: new records wait for the interval.
	e.commit("w4", plain(tp.ID, 0, 1))
	e.clock.Advance(21 * time.Minute)
	if err := e.c.TierTick(ctx); err != nil {
		t.Fatal(err)
	}
	e.consolidateAll(&seg)
	if err := e.c.TierTick(ctx); err != nil {
		t.Fatal(err)
	}
	if job, ok := e.claimTable(); ok {
		t.Fatalf("a job within the interval after catching up: %v", rangesOf(job))
	}
}

// TestTableJobBudget: a job's byte budget holds across its partitions
// (only its first segment may exceed it), and the partition whose oldest
// uncovered record has waited longest goes first.
func TestTableJobBudget(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.TierInterval = -1; o.TableInterval = time.Hour })
	ctx := context.Background()
	tp := e.topic("orders", 2, map[string]string{coordapi.ConfigTableEnabled: "true", "retention.ms": "-1"})
	e.c.tier.SetTableLimits(1, 0)
	var seg int
	for _, p := range []int32{1, 0} { // partition 1's records first: it waits longest
		e.commit("w"+itoa(int64(p)), plain(tp.ID, p, 1))
		e.clock.Advance(21 * time.Minute)
		if err := e.c.TierTick(ctx); err != nil {
			t.Fatal(err)
		}
		e.consolidateAll(&seg)
	}
	if err := e.c.TierTick(ctx); err != nil {
		t.Fatal(err)
	}
	var got []string
	for {
		job, ok := e.claimTable()
		if !ok {
			break
		}
		if len(job.Table.Ranges) != 1 {
			t.Fatalf("a job of budget 1 with ranges %v: want one segment", rangesOf(job))
		}
		got = append(got, rangesOf(job)[0][:5])
		r := job.Table.Ranges[0]
		if err := completeTable(e, job, coordapi.TableCovered{Partition: r.Partition, Next: r.To}); err != nil {
			t.Fatal(err)
		}
	}
	if want := []string{"1:0-2", "0:0-2"}; !slices.Equal(got, want) {
		t.Fatalf("jobs %v, want %v", got, want)
	}
}

// TestTableJobsConcurrent: up to tierplan.MaxTableJobs (here tc.jobs) table jobs
// of one topic run at once, on disjoint partitions; a job that stops short
// queues its slot again as it completes; every partition's segments are
// claimed once, in order, and the covered offsets end at the segments'
// end whatever order the jobs complete in.
func TestTableJobsConcurrent(t *testing.T) {
	for _, tc := range []struct {
		name       string
		partitions int
		jobs       int
		jobBytes   int64 // 0: the default budget
		// atOnce is how many jobs are claimed before any completes.
		atOnce int
		// total is how many jobs write the table (a segment a job on a
		// budget of 1).
		total int
		// lifo completes the newest claimed job first.
		lifo bool
	}{
		{name: "8 partitions 4 jobs", partitions: 8, jobs: 4, jobBytes: 1, atOnce: 4, total: 16},
		{name: "8 partitions 4 jobs newest first", partitions: 8, jobs: 4, jobBytes: 1, atOnce: 4, total: 16, lifo: true},
		{name: "2 partitions 4 jobs", partitions: 2, jobs: 4, jobBytes: 1, atOnce: 2, total: 4},
		{name: "3 partitions 1 job", partitions: 3, jobs: 1, jobBytes: 1, atOnce: 1, total: 6},
		{name: "4 partitions one budget", partitions: 4, jobs: 4, atOnce: 1, total: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, func(o *Options) { o.TierInterval = -1; o.TableInterval = time.Hour })
			ctx := context.Background()
			tp := e.topic("orders", int32(tc.partitions), map[string]string{coordapi.ConfigTableEnabled: "true", "retention.ms": "-1"})
			e.c.tier.SetTableLimits(tc.jobBytes, tc.jobs)
			var seg int
			for round := range 2 { // two segments a partition: 0-1, 2-3 (a commit is two offsets)
				for p := range int32(tc.partitions) {
					e.commit("w"+itoa(int64(round))+"-"+itoa(int64(p)), plain(tp.ID, p, 1))
				}
				e.clock.Advance(21 * time.Minute)
				if err := e.c.TierTick(ctx); err != nil {
					t.Fatal(err)
				}
				e.consolidateAll(&seg)
			}
			if err := e.c.TierTick(ctx); err != nil {
				t.Fatal(err)
			}
			var running []coordapi.TierJob
			claimed := map[int32]int64{} // each partition's next offset to claim
			claimAll := func() {
				for {
					job, ok := e.claimTable()
					if !ok {
						return
					}
					for _, r := range job.Table.Ranges {
						for _, o := range running {
							for _, or := range o.Table.Ranges {
								if or.Partition == r.Partition {
									t.Fatalf("job %v and running job %v share partition %d", rangesOf(job), rangesOf(o), r.Partition)
								}
							}
						}
						if r.From != claimed[r.Partition] {
							t.Fatalf("job %v: partition %d from %d, want %d", rangesOf(job), r.Partition, r.From, claimed[r.Partition])
						}
						claimed[r.Partition] = r.To
					}
					running = append(running, job)
				}
			}
			claimAll()
			if len(running) != tc.atOnce {
				t.Fatalf("%d jobs at once, want %d", len(running), tc.atOnce)
			}
			total := 0
			for len(running) > 0 {
				i := 0
				if tc.lifo {
					i = len(running) - 1
				}
				job := running[i]
				running = slices.Delete(running, i, i+1)
				total++
				var cov []coordapi.TableCovered
				for _, r := range job.Table.Ranges {
					cov = append(cov, coordapi.TableCovered{Partition: r.Partition, Next: r.To})
				}
				if err := completeTable(e, job, cov...); err != nil {
					t.Fatal(err)
				}
				claimAll()
				if len(running) > tc.jobs {
					t.Fatalf("%d jobs at once, at most %d", len(running), tc.jobs)
				}
			}
			if total != tc.total {
				t.Fatalf("%d jobs, want %d", total, tc.total)
			}
			cov := e.c.TableCovered(tp.ID)
			for p := range int32(tc.partitions) {
				if cov[p] != 4 || claimed[p] != 4 {
					t.Fatalf("partition %d covered %d, claimed to %d; want 4 (covered %v)", p, cov[p], claimed[p], cov)
				}
			}
		})
	}
}

// TestTableJobReadsWAL: for a broker that claims with TableWAL, a table
// job runs to the last stable offset through WAL batches, without waiting
// for consolidation; a broker without it gets nothing until the records
// are in segments; the next job starts where the first ended, whether
// its records are consolidated since or not.
func TestTableJobReadsWAL(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.TierInterval = -1; o.TableInterval = time.Second })
	ctx := context.Background()
	tp := e.topic("orders", 2, map[string]string{coordapi.ConfigTableEnabled: "true", "retention.ms": "-1"})
	claim := func(wal bool) (coordapi.TierJob, bool) {
		t.Helper()
		job, ok, err := e.c.ClaimTierJob(ctx, coordapi.ClaimTierJobRequest{BrokerID: 8, Tables: true, TableWAL: wal})
		if err != nil {
			t.Fatal(err)
		}
		return job, ok
	}
	e.commit("w1", plain(tp.ID, 0, 1), plain(tp.ID, 1, 1))
	e.clock.Advance(2 * time.Second)
	if err := e.c.TierTick(ctx); err != nil {
		t.Fatal(err)
	}
	if job, ok := claim(false); ok {
		t.Fatalf("a job of WAL batches for a broker without TableWAL: %v", rangesOf(job))
	}
	if err := e.c.TierTick(ctx); err != nil {
		t.Fatal(err)
	}
	job, ok := claim(true)
	if !ok {
		t.Fatal("no table job of WAL batches")
	}
	if got, want := rangesOf(job), []string{"0:0-2,w1", "1:0-2,w1"}; !slices.Equal(got, want) {
		t.Fatalf("ranges %v, want %v", got, want)
	}
	for _, r := range job.Table.Ranges {
		for _, b := range r.Segments {
			if b.Segment || b.ByteLength <= 0 || b.ObjectSize <= 0 {
				t.Fatalf("batch %+v: want a WAL batch with its object's size", b)
			}
		}
	}
	if err := completeTable(e, job, coordapi.TableCovered{Partition: 0, Next: 2}, coordapi.TableCovered{Partition: 1, Next: 2}); err != nil {
		t.Fatal(err)
	}
	// w2 consolidated with w1 into a segment before the next job: the job
	// starts at the covered offset within it.
	e.commit("w2", plain(tp.ID, 0, 1))
	e.clock.Advance(21 * time.Minute)
	if err := e.c.TierTick(ctx); err != nil {
		t.Fatal(err)
	}
	var seg int
	e.consolidateAll(&seg)
	if err := e.c.TierTick(ctx); err != nil {
		t.Fatal(err)
	}
	job, ok = claim(true)
	if !ok || len(job.Table.Ranges) != 1 {
		t.Fatalf("job %v (ok %v), want partition 0 from 2", rangesOf(job), ok)
	}
	if r := job.Table.Ranges[0]; r.Partition != 0 || r.From != 2 || r.To != 4 || !r.Segments[0].Segment {
		t.Fatalf("range %v, want 0:2-4 in a segment", rangesOf(job))
	}
}

// TestTableJobsConcurrentLease: when the leases of a topic's concurrent
// table jobs end, their slots are planned again over the same ranges,
// still on disjoint partitions, and the late completions are refused.
func TestTableJobsConcurrentLease(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.TierInterval = -1; o.TableInterval = time.Hour })
	ctx := context.Background()
	tp := e.topic("orders", 3, map[string]string{coordapi.ConfigTableEnabled: "true", "retention.ms": "-1"})
	e.c.tier.SetTableLimits(1, 0)
	for p := range int32(3) {
		e.commit("w"+itoa(int64(p)), plain(tp.ID, p, 1))
	}
	e.clock.Advance(21 * time.Minute)
	if err := e.c.TierTick(ctx); err != nil {
		t.Fatal(err)
	}
	var seg int
	e.consolidateAll(&seg)
	if err := e.c.TierTick(ctx); err != nil {
		t.Fatal(err)
	}
	claimAll := func() (jobs []coordapi.TierJob, ranges []string) {
		for {
			job, ok := e.claimTable()
			if !ok {
				slices.Sort(ranges)
				return jobs, ranges
			}
			jobs = append(jobs, job)
			ranges = append(ranges, rangesOf(job)...)
		}
	}
	first, ranges := claimAll()
	if want := []string{"0:0-2", "1:0-2", "2:0-2"}; len(first) != 3 || !slices.Equal(trimSegments(ranges), want) {
		t.Fatalf("jobs %v, want one a partition: %v", ranges, want)
	}
	e.clock.Advance(time.Duration(first[0].LeaseMs+1) * time.Millisecond)
	again, ranges2 := claimAll()
	if len(again) != 3 || !slices.Equal(ranges2, ranges) {
		t.Fatalf("after the leases: jobs %v, want %v again", ranges2, ranges)
	}
	for _, job := range first {
		r := job.Table.Ranges[0]
		if err := completeTable(e, job, coordapi.TableCovered{Partition: r.Partition, Next: r.To}); !errors.Is(err, kerr.StaleBrokerEpoch) {
			t.Fatalf("completion of expired job %v: %v, want STALE_BROKER_EPOCH", rangesOf(job), err)
		}
	}
	for _, job := range again {
		r := job.Table.Ranges[0]
		if err := completeTable(e, job, coordapi.TableCovered{Partition: r.Partition, Next: r.To}); err != nil {
			t.Fatal(err)
		}
	}
	if cov := e.c.TableCovered(tp.ID); cov[0] != 2 || cov[1] != 2 || cov[2] != 2 {
		t.Fatalf("covered %v", cov)
	}
}

// trimSegments drops rangesOf's segment names.
func trimSegments(ranges []string) []string {
	out := make([]string, len(ranges))
	for i, r := range ranges {
		out[i], _, _ = strings.Cut(r, ",")
	}
	return out
}
