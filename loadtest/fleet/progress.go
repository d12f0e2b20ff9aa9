package fleet

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/floe-io/floe/loadtest"
)

// startProgress prints a progress line every cfg.Progress until the
// returned function is called (which waits for the printer to stop).
func (r *runner) startProgress(ctx context.Context) (stop func()) {
	if r.cfg.Progress <= 0 {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(r.cfg.Progress)
		defer t.Stop()
		last := time.Now()
		var lastCommits, lastBatches int64
		var lastCPU time.Duration
		if st, err := r.processNow(); err == nil {
			lastCPU = st.CPU
		}
		for {
			select {
			case <-ctx.Done():
				return
			case now := <-t.C:
				dt := now.Sub(last).Seconds()
				commits, batches := r.c.commits.Load(), r.c.batches.Load()
				var lag time.Duration
				for i := range r.lag {
					if next := r.lag[i].Load(); next > 0 {
						lag = max(lag, now.Sub(time.Unix(0, next)))
					}
				}
				lat := loadtest.MergedStats(r.commitLat[:]...)
				find := loadtest.MergedStats(r.findLat, r.multiLat)
				coord := ""
				if st, err := r.processNow(); err == nil {
					coord = fmt.Sprintf(" | coordinator %.2f cores, RSS %.0f MiB", (st.CPU-lastCPU).Seconds()/dt, mib(st.RSS))
					lastCPU = st.CPU
				}
				warm := ""
				if now.Before(r.warmEnd) {
					warm = " (warmup)"
				}
				line := fmt.Sprintf("%6.1fs  commits %7.0f/s  coords %9.0f/s | commit p50 %.2fms p99 %.2fms | find p99 %.2fms | behind %v%s | errors %d%s",
					now.Sub(r.t0).Seconds(), float64(commits-lastCommits)/dt, float64(batches-lastBatches)/dt,
					lat.P50Ms, lat.P99Ms, find.P99Ms, lag.Round(time.Millisecond), coord, r.errs.Total(), warm)
				if w := r.cfg.ProgressTo; w != nil {
					fmt.Fprintln(w, line)
				} else {
					r.log.Info(line)
				}
				last, lastCommits, lastBatches = now, commits, batches
			}
		}
	})
	return func() { cancel(); wg.Wait() }
}

// processNow reads the coordinator process's stats, when the probe names
// it.
func (r *runner) processNow() (ProcessStats, error) {
	if p := r.cfg.Probe; p != nil && p.PID > 0 {
		return p.coordinator()
	}
	return ProcessStats{}, fmt.Errorf("no coordinator pid")
}
