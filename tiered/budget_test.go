package tiered

import (
	"fmt"
	"testing"
	"time"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/objectstore"
)

// TestConsolidatorJobBuffers checks the jobs' buffer budget: with room for
// one job's reservation, jobs run one at a time (the others wait for it,
// claimed), read ahead only with what is left, and never hold more than
// the budget; every job completes.
func TestConsolidatorJobBuffers(t *testing.T) {
	const maxRead = 4096
	// Six ranges of one batch each (one object a batch, so no two merge).
	fx := buildWAL(t, []int{1, 1, 1, 1, 1, 1}, false)
	var queue []coordapi.TierJob
	for id := range uint64(3) {
		j := fx.job
		j.ID = 300 + id
		queue = append(queue, j)
	}
	jobs := newFakeJobs(queue...)
	gate := make(chan struct{})
	wal := &fakeWAL{inner: newCache(t, fx.store), gate: gate, entered: make(chan struct{}, 64)}
	segs := objectstore.NewMemory()
	limit := int64(objectstore.UploadBufferBytes + maxRead)
	con, err := NewConsolidator(jobs, wal, segs, ConsolidatorOptions{Prefix: consPrefix, PollInterval: time.Hour,
		Concurrency: 3, ReadConcurrency: 4, MaxReadBytes: maxRead, JobBufferBytes: limit})
	if err != nil {
		t.Fatal(err)
	}
	var largest, total int64
	for _, bc := range fx.job.Batches {
		largest = max(largest, int64(bc.ByteLength))
		total += int64(bc.ByteLength)
	}
	if total+objectstore.UploadBufferBytes > limit {
		t.Fatalf("the job's %d batch bytes do not fit the read-ahead room; make maxRead larger", total)
	}
	reservation := objectstore.UploadBufferBytes + largest
	if 2*reservation <= limit {
		t.Fatal("the budget holds two reservations; the test needs room for one")
	}
	runInBackground(t, con)

	// The first job reads (its first range and, with the room left, the
	// rest ahead); the other two are claimed and wait for the budget.
	<-wal.entered
	waitState(t, jobs, "three jobs claimed", func(claims, _, _ int) bool { return claims >= 3 })
	if n := wal.inFlight.Load(); n < 1 || n > 4 {
		t.Fatalf("%d reads in flight, want one job's: 1 to ReadConcurrency (4)", n)
	}
	for range wal.inFlight.Load() - 1 {
		<-wal.entered
	}
	if used, _ := con.budget.usage(); used > limit || used < reservation {
		t.Fatalf("budget holds %d bytes with one job reading, want its reservation %d and read-ahead, at most %d", used, reservation, limit)
	}
	close(gate) // every read may go on
	waitState(t, jobs, "three completed jobs", func(_, completed, _ int) bool { return completed == 3 })

	used, peak := con.budget.usage()
	if used != 0 {
		t.Errorf("budget holds %d bytes after the jobs, want 0", used)
	}
	if peak > limit {
		t.Errorf("budget peaked at %d bytes, above its %d", peak, limit)
	}
	if peak >= 2*reservation {
		t.Errorf("budget peaked at %d bytes: two jobs held reservations (%d each) at once", peak, reservation)
	}
	if m := wal.maxSeen.Load(); m > 4 {
		t.Errorf("%d reads in flight at once, above ReadConcurrency 4", m)
	}
	if n := len(segments(t, segs)); n != 3 {
		t.Errorf("%d segments written, want 3", n)
	}
}

// TestJobBudgetReadAhead checks that a job reads ahead only with the
// bytes the budget has left: with none left, one range at a time.
func TestJobBudgetReadAhead(t *testing.T) {
	for _, tc := range []struct {
		name      string
		room      int64 // budget bytes beyond the reservation
		wantAtMax int32 // most reads in flight at once
	}{
		{"no room: one read at a time", 0, 1},
		{"room for all: ReadConcurrency", 1 << 20, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := buildWAL(t, []int{1, 1, 1, 1, 1, 1, 1, 1}, false)
			var largest int64
			for _, bc := range fx.job.Batches {
				largest = max(largest, int64(bc.ByteLength))
			}
			jobs := newFakeJobs(fx.job)
			gate := make(chan struct{})
			wal := &fakeWAL{inner: newCache(t, fx.store), gate: gate, entered: make(chan struct{}, 64)}
			maxRead := largest
			con, err := NewConsolidator(jobs, wal, objectstore.NewMemory(), ConsolidatorOptions{Prefix: consPrefix,
				PollInterval: time.Hour, Concurrency: 1, ReadConcurrency: 3, MaxReadBytes: maxRead,
				JobBufferBytes: objectstore.UploadBufferBytes + largest + tc.room})
			if err != nil {
				t.Fatal(err)
			}
			runInBackground(t, con)
			for range tc.wantAtMax {
				<-wal.entered
			}
			if n := wal.inFlight.Load(); n != tc.wantAtMax {
				t.Fatalf("%d reads in flight, want %d", n, tc.wantAtMax)
			}
			close(gate)
			waitState(t, jobs, "the job completed", func(_, completed, _ int) bool { return completed == 1 })
			if m := wal.maxSeen.Load(); m != tc.wantAtMax {
				t.Errorf("at most %d reads in flight, want %d", m, tc.wantAtMax)
			}
			if _, peak := con.budget.usage(); peak > con.budget.limit {
				t.Errorf("budget peaked at %d, above its %d", peak, con.budget.limit)
			}
		})
	}
}

// TestJobBufferBytesValidate checks that a budget below an upload part and
// one read is refused.
func TestJobBufferBytesValidate(t *testing.T) {
	for _, tc := range []struct {
		opts ConsolidatorOptions
		ok   bool
	}{
		{ConsolidatorOptions{}, true},
		{ConsolidatorOptions{JobBufferBytes: -1}, false},
		{ConsolidatorOptions{JobBufferBytes: objectstore.UploadBufferBytes + DefaultMaxReadBytes - 1}, false},
		{ConsolidatorOptions{JobBufferBytes: objectstore.UploadBufferBytes + DefaultMaxReadBytes}, true},
		{ConsolidatorOptions{JobBufferBytes: objectstore.UploadBufferBytes + 4096, MaxReadBytes: 4096}, true},
		{ConsolidatorOptions{JobBufferBytes: objectstore.UploadBufferBytes + 4095, MaxReadBytes: 4096}, false},
	} {
		t.Run(fmt.Sprint(tc.opts.JobBufferBytes, "/", tc.opts.MaxReadBytes), func(t *testing.T) {
			if err := tc.opts.Validate(); (err == nil) != tc.ok {
				t.Errorf("Validate() = %v, want ok %v", err, tc.ok)
			}
		})
	}
}
