package objectstore

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// firstHangs is a Memory store whose first call of every pair hangs until
// cancelled: every request is hedged, and every hedge wins.
type firstHangs struct {
	*Memory
	calls atomic.Int64
}

func (s *firstHangs) Put(ctx context.Context, key string, data []byte) error {
	if s.calls.Add(1)%2 == 1 {
		<-ctx.Done()
		return ctx.Err()
	}
	return s.Memory.Put(ctx, key, data)
}

// TestHedgeRecordsWhatTheCallerWaited: when the hedge wins, the latency
// recorded for the kind is the time the caller waited, at least the hedge
// delay. Leaving such requests out kept only those faster than the delay,
// and the quantile drifted down with each recompute.
func TestHedgeRecordsWhatTheCallerWaited(t *testing.T) {
	const cold = 5 * time.Millisecond
	h := NewHedged(&firstHangs{Memory: NewMemory()}, HedgeOptions{MinDelay: time.Millisecond, ColdDelay: cold, MaxFraction: 1})
	for range minSamples {
		if err := h.Put(context.Background(), "k/x", []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	if sent, won := h.Hedges(); sent != minSamples || won != minSamples {
		t.Fatalf("hedges sent/won %d/%d, want %d each", sent, won, minSamples)
	}
	if q := h.kinds[hedgePut][sizeClass(1)].quantile(0.5, 0); q < cold {
		t.Fatalf("median recorded %v, want at least the %v each caller waited", q, cold)
	}
}
