package tiered

import (
	"context"
	"fmt"
	"math"

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
type ioThrottle struct {
	lim *rate.Limiter
}

// newIOThrottle returns a throttle of bytesPerSecond, nil for none (0).
func newIOThrottle(bytesPerSecond int64) *ioThrottle {
	if bytesPerSecond <= 0 {
		return nil
	}
	return &ioThrottle{lim: rate.NewLimiter(rate.Limit(bytesPerSecond), int(min(bytesPerSecond, throttleBurst)))}
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
