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

// TestThrottleFollowsIngest: the pace stays at the configured one while
// the broker ingests less than it can consolidate, rises to twice a
// sustained ingest above that, and falls back when the ingest stops; a
// counter that goes back (a restart) changes nothing.
func TestThrottleFollowsIngest(t *testing.T) {
	const mib = 1 << 20
	th := newIOThrottle(96 * mib)
	now := time.Unix(1_000_000, 0)
	var ingested int64
	step := func(perSecond int64, seconds int) float64 {
		t.Helper()
		var limit float64
		for range seconds {
			ingested += perSecond
			now = now.Add(time.Second)
			limit = th.follow(ingested, now)
			if got := float64(th.lim.Limit()); got != limit {
				t.Fatalf("follow returned %.0f, the limiter has %.0f", limit, got)
			}
		}
		return limit
	}
	th.follow(0, now)
	for _, tc := range []struct {
		name      string
		perSecond int64
		seconds   int
		min, max  float64 // the limit after, bytes per second
	}{
		{"ingest below half the pace", 20 * mib, 60, 96 * mib, 96 * mib},
		{"sustained ingest above it", 80 * mib, 60, 156 * mib, 160 * mib},
		{"ingest stopped", 0, 60, 96 * mib, 96 * mib},
	} {
		if got := step(tc.perSecond, tc.seconds); got < tc.min || got > tc.max {
			t.Fatalf("%s: limit %.1f MiB/s, want %.1f to %.1f", tc.name, got/mib, tc.min/mib, tc.max/mib)
		}
	}
	ingested = 0 // a restarted counter
	if got := th.follow(ingested, now.Add(time.Second)); got != 96*mib {
		t.Fatalf("after a counter reset: %.1f MiB/s", got/mib)
	}
}
