package coordinator

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/floe-io/floe/coordapi"
)

// TestTableJobCompacted: the table job of a topic whose cleanup.policy
// includes compact says so (the broker makes its table one of the latest
// value per key); after AlterConfigs away from compact the next job does
// not.
func TestTableJobCompacted(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.TierInterval = -1; o.TableInterval = time.Minute })
	ctx := context.Background()
	tp := e.topic("users", 1, map[string]string{coordapi.ConfigTableEnabled: "true", "cleanup.policy": "compact,delete", "retention.ms": "-1"})
	e.commit("w1", keyed(tp.ID, 0, "a", "b", "a"))
	// claimTable completes consolidation jobs, skips compaction jobs (a
	// compacted topic gets them; claimed and left to their lease, as the
	// table job is keyed apart) and returns the table job.
	var seg int
	claimTable := func() (coordapi.TierJob, bool) {
		t.Helper()
		for {
			job, ok := e.claimTable()
			if !ok || job.Kind == coordapi.TierJobTable {
				return job, ok
			}
			if job.Kind != coordapi.TierJobConsolidate {
				continue
			}
			var n int64
			for _, b := range job.Batches {
				n += int64(b.ByteLength)
			}
			seg++
			if err := e.c.CompleteTierJob(ctx, coordapi.CompleteTierJobRequest{JobID: job.ID, TopicID: job.TopicID, Partition: job.Partition,
				BaseOffset: job.BaseOffset, LastOffset: job.LastOffset, ObjectKey: fmt.Sprintf("seg%d", seg), ObjectSize: n + 1000, DataLength: n}); err != nil {
				t.Fatal(err)
			}
		}
	}
	tick := func(d time.Duration) {
		t.Helper()
		e.clock.Advance(d)
		if err := e.c.TierTick(ctx); err != nil {
			t.Fatal(err)
		}
	}
	tick(21 * time.Minute)
	// Claimed after the consolidation: a broker whose table jobs do not
	// read WAL batches (no TableWAL) gets segments only.
	job, ok := claimTable()
	if !ok || job.Table == nil || !job.Table.Compacted {
		t.Fatalf("table job of a compacted topic: ok %v %+v", ok, job.Table)
	}
	for _, r := range job.Table.Ranges {
		for _, sg := range r.Segments {
			if !sg.Segment {
				t.Fatalf("a WAL batch %+v in a job for a broker without TableWAL", sg)
			}
		}
	}
	if err := completeTable(e, job, coordapi.TableCovered{Partition: 0, Next: job.Table.Ranges[0].To}); err != nil {
		t.Fatal(err)
	}

	del := "delete"
	if err := e.c.AlterTopicConfigs(ctx, "users", []coordapi.ConfigOp{{Name: "cleanup.policy", Op: coordapi.OpSet, Value: &del}}, true, false); err != nil {
		t.Fatal(err)
	}
	e.commit("w2", keyed(tp.ID, 0, "c"))
	tick(21 * time.Minute)
	job, ok = claimTable() // after w2's consolidation
	for i := 0; i < 2 && !ok; i++ {
		tick(0)
		job, ok = claimTable()
	}
	if !ok || job.Table == nil || job.Table.Compacted {
		t.Fatalf("table job after cleanup.policy=delete: ok %v %+v", ok, job.Table)
	}
}
