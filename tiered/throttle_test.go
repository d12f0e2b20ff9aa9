package tiered

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/floe-io/floe/objectstore"
)

// TestIOThrottleCountsReadsAndWrites runs a job under a throttle that
// barely refills (1 B/s, a 1 MiB burst) and checks that the job took from
// it the bytes it read and the bytes it wrote.
func TestIOThrottleCountsReadsAndWrites(t *testing.T) {
	fx := buildWAL(t, []int{3, 2, 4}, false)
	jobs := newFakeJobs(fx.job)
	segs := objectstore.NewMemory()
	con, err := NewConsolidator(jobs, newCache(t, fx.store), segs, ConsolidatorOptions{Prefix: consPrefix,
		PollInterval: time.Hour, Concurrency: 1, IOBytesPerSecond: 1})
	if err != nil {
		t.Fatal(err)
	}
	// Rate 1 B/s makes a burst of 1 byte; give the test a 1 MiB bucket.
	con.io = &ioThrottle{lim: newIOThrottle(throttleBurst).lim}
	con.io.lim.SetLimit(1)
	start := time.Now()
	if ran, err := con.RunOnce(t.Context()); !ran || err != nil {
		t.Fatalf("RunOnce = %v, %v", ran, err)
	}
	var read int64
	for _, r := range planRanges(fx.job.Batches, con.opts.MaxReadBytes) {
		read += r.length
	}
	objs := segments(t, segs)
	if len(objs) != 1 {
		t.Fatalf("%d segments, want 1", len(objs))
	}
	want := float64(throttleBurst - read - objs[0].Size)
	slack := time.Since(start).Seconds() + 1 // the refill meanwhile, at 1 B/s
	if got := con.io.lim.Tokens(); got > want+slack || got < want-1 {
		t.Errorf("throttle has %.0f bytes left, want %.0f: the job read %d and wrote %d bytes", got, want, read, objs[0].Size)
	}
}

// TestIOThrottleWait checks that a nil throttle never waits and that a
// wait ends with its context.
func TestIOThrottleWait(t *testing.T) {
	var none *ioThrottle
	if err := none.wait(t.Context(), 1<<40); err != nil {
		t.Fatalf("nil throttle: %v", err)
	}
	if newIOThrottle(0) != nil {
		t.Error("newIOThrottle(0) is not nil")
	}
	th := newIOThrottle(1)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := th.wait(ctx, 10); !errors.Is(err, context.Canceled) {
		t.Errorf("wait with a cancelled context: %v", err)
	}
}
