package tiered

import (
	"context"
	"fmt"
	"math"
	"time"

	"golang.org/x/time/rate"

	"github.com/floe-io/floe/objectstore"
)

// throttleBurst is the most bytes one wait of the tier jobs' I/O throttle
// covers: a larger read or write waits in steps of it, so that the jobs'
// I/O is spread out, not sent in bursts of a read's size.
const throttleBurst = 1 << 20

// ioThrottle paces the bytes a Consolidator's jobs read and write
// (ConsolidatorOptions.IOBytesPerSecond), as Kafka's
// log.cleaner.io.max.bytes.per.second paces its cleaner: a shared token
// bucket every job waits on before each read and each write of an upload.
// A nil *ioThrottle does not pace.
//
// The pace follows the broker's ingest (ConsolidatorOptions.Ingested):
// consolidation reads and writes every byte ingested once, so a fixed pace
// below twice the ingest rate would let the WAL grow without end. follow
// raises the limit to ingestFactor times the ingest rate (an average over
// about ingestWindow) when that is more than the configured pace, and
// brings it back down as the ingest falls.
type ioThrottle struct {
	lim  *rate.Limiter
	base float64 // the configured bytes per second
	// rate is the ingest rate's moving average, bytes per second; last
	// and lastAt the sample it was updated from. Only follow touches them.
	rate   float64
	last   int64
	lastAt time.Time
}

// ingestFactor is how many times the ingest rate the tier jobs may move:
// a byte read and a byte written for each byte ingested. More costs the
// hot path on a small machine: the 60 MiB/s soak on two cores
// (scripts/soak-tiered.sh, 6 minutes) kept the WAL level at 2 and at 2.5,
// with produce p99 43.7 and 153.6 ms (42.0 at the fixed 96 MiB/s pace,
// whose WAL grew by 750 MiB a minute).
const ingestFactor = 2

// ingestWindow is about how long the ingest rate's average looks back.
const ingestWindow = 10 * time.Second

// newIOThrottle returns a throttle of bytesPerSecond, nil for none (0).
func newIOThrottle(bytesPerSecond int64) *ioThrottle {
	if bytesPerSecond <= 0 {
		return nil
	}
	return &ioThrottle{lim: rate.NewLimiter(rate.Limit(bytesPerSecond), int(min(bytesPerSecond, throttleBurst))),
		base: float64(bytesPerSecond)}
}

// follow takes a sample of the bytes ingested so far (a counter) at now,
// and sets the limit to the larger of the configured pace and ingestFactor
// times the ingest rate's moving average. It returns the limit set.
func (t *ioThrottle) follow(ingested int64, now time.Time) float64 {
	if t.lastAt.IsZero() || ingested < t.last || !now.After(t.lastAt) {
		t.last, t.lastAt = ingested, now // the first sample, or a counter reset
		return float64(t.lim.Limit())
	}
	dt := now.Sub(t.lastAt)
	r := float64(ingested-t.last) / dt.Seconds()
	// An exponential moving average with the window's time constant.
	a := min(1, dt.Seconds()/ingestWindow.Seconds())
	t.rate += a * (r - t.rate)
	t.last, t.lastAt = ingested, now
	limit := max(t.base, ingestFactor*t.rate)
	t.lim.SetLimitAt(now, rate.Limit(limit))
	return limit
}

// wait waits until n more bytes may move, or ctx ends.
func (t *ioThrottle) wait(ctx context.Context, n int64) error {
	if t == nil {
		return nil
	}
	burst := int64(t.lim.Burst())
	for n > 0 {
		k := min(n, burst)
		if err := t.lim.WaitN(ctx, int(min(k, math.MaxInt32))); err != nil {
			return fmt.Errorf("tier job I/O throttle: %w", err)
		}
		n -= k
	}
	return nil
}

// throttledUpload is an Upload whose writes wait for the throttle.
type throttledUpload struct {
	objectstore.Upload
	ctx context.Context
	t   *ioThrottle
}

func (u *throttledUpload) Write(p []byte) (int, error) {
	if err := u.t.wait(u.ctx, int64(len(p))); err != nil {
		return 0, err
	}
	return u.Upload.Write(p)
}
