package loadtest

import (
	"context"
	"testing"
	"time"
)

// TestLimiterLowRate checks that a low rate is kept on average, without an
// opening burst.
func TestLimiterLowRate(t *testing.T) {
	lim := newLimiter(50)
	if lim.Allow() {
		t.Fatal("limiter opened with a burst")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	for range 10 {
		if err := lim.Wait(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// 10 events at 50/s: the 10th is due at 200ms.
	if took := time.Since(start); took < 180*time.Millisecond || took > 2*time.Second {
		t.Errorf("10 events at 50/s took %v, want about 200ms", took)
	}
	if newLimiter(0) != nil {
		t.Error("rate 0 is not flat out")
	}
}
