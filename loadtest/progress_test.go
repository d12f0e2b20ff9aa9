package loadtest

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/floe-io/floe/internal/testkit"
)

// producing matches a progress line's non-zero produce rate.
var producing = regexp.MustCompile(`produced +[1-9][0-9]* rec/s`)

// The progress printer prints a line every cfg.Progress with the rates
// since the last one: records acknowledged show as a produce rate.
func TestProgressLines(t *testing.T) {
	var out testkit.Buffer
	r := &runner{cfg: &Config{Progress: time.Millisecond, ProgressTo: &out}, errs: &ErrorCounts{}, t0: time.Now()}
	stop := r.startProgress(context.Background())
	r.pc.acked.Add(500)
	testkit.CheckFor(t, 10*time.Second, time.Millisecond, func() error {
		if s := out.String(); !producing.MatchString(s) || !strings.Contains(s, "errors 0") {
			return fmt.Errorf("progress so far: %q", s)
		}
		return nil
	})
	stop()
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	for _, l := range lines {
		if !strings.Contains(l, "produced") || !strings.Contains(l, "consumed") {
			t.Errorf("progress line %q", l)
		}
	}
}

// since keeps only what was recorded after the earlier snapshot, so an
// interval's p99 shows a stall that the run's p99 would average away.
func TestSinceSnapshot(t *testing.T) {
	h := NewHistogram()
	for range 1000 {
		h.Record(time.Millisecond)
	}
	before := merged([]*Histogram{h})
	for range 10 {
		h.Record(2 * time.Second)
	}
	after := merged([]*Histogram{h})
	win := latencyStats(since(after, before))
	if win.Count != 10 || win.P50Ms < 1999 || win.P50Ms > 2003 {
		t.Errorf("interval after the stall: %+v, want 10 latencies of about 2000 ms", win)
	}
	if all := latencyStats(since(after, nil)); all.Count != 1010 {
		t.Errorf("since nil counted %d, want 1010", all.Count)
	}
}
