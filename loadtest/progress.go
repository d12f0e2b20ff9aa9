package loadtest

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// startProgress prints a progress line every cfg.Progress until the
// returned function is called (which waits for the printer to stop).
func (r *runner) startProgress(ctx context.Context) (stop func()) {
	if r.cfg.Progress <= 0 {
		return func() {}
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(r.cfg.Progress)
		defer t.Stop()
		last := time.Now()
		var lastProd, lastBytes, lastCons, lastKV int64
		var lastProdHist, lastE2EHist *hdrhistogram.Histogram
		for {
			select {
			case <-ctx.Done():
				return
			case now := <-t.C:
				dt := now.Sub(last).Seconds()
				prod, bytes, cons := r.pc.acked.Load(), r.pc.ackedBytes.Load(), r.cc.records.Load()
				var kv int64
				if r.kv != nil {
					kv = r.kv.c.lookups.Load()
				}
				var hs []*Histogram
				for _, p := range r.producers {
					hs = append(hs, p.hist)
				}
				prodHist := merged(hs)
				lat := latencyStats(prodHist)
				var cs []*Histogram
				for _, c := range r.consumers {
					cs = append(cs, c.hist)
				}
				e2eHist := merged(cs)
				r.progressLine(progress{
					elapsed:   now.Sub(r.t0),
					prodRate:  perSec(float64(prod-lastProd), dt),
					prodMiB:   perSec(float64(bytes-lastBytes)/mib, dt),
					consRate:  perSec(float64(cons-lastCons), dt),
					kvRate:    perSec(float64(kv-lastKV), dt),
					p50:       lat.P50Ms,
					p99:       lat.P99Ms,
					winP99:    latencyStats(since(prodHist, lastProdHist)).P99Ms,
					winE2EP99: latencyStats(since(e2eHist, lastE2EHist)).P99Ms,
					errors:    r.errs.Total(),
					warmingUp: now.Before(r.warmupEnd),
				})
				last, lastProd, lastBytes, lastCons, lastKV = now, prod, bytes, cons, kv
				lastProdHist, lastE2EHist = prodHist, e2eHist
			}
		}
	})
	return func() { cancel(); wg.Wait() }
}

// progress is one progress line.
type progress struct {
	elapsed                             time.Duration
	prodRate, prodMiB, consRate, kvRate float64
	p50, p99                            float64
	// winP99 and winE2EP99 are the produce and end-to-end p99 of this
	// line's interval alone, where p50 and p99 are since the start: a
	// stall shows in the line of the moment it happened.
	winP99, winE2EP99 float64
	errors            int64
	warmingUp         bool
}

func (r *runner) progressLine(p progress) {
	if w := r.cfg.ProgressTo; w != nil {
		warm := ""
		if p.warmingUp {
			warm = " (warmup)"
		}
		kv := ""
		if r.kv != nil {
			kv = fmt.Sprintf(" | kv %.0f/s", p.kvRate)
		}
		fmt.Fprintf(w, "%7.1fs  produced %8.0f rec/s %8.2f MiB/s | consumed %8.0f rec/s | produce p50 %.2fms p99 %.2fms | interval p99 produce %.2fms e2e %.2fms%s | errors %d%s\n",
			p.elapsed.Seconds(), p.prodRate, p.prodMiB, p.consRate, p.p50, p.p99, p.winP99, p.winE2EP99, kv, p.errors, warm)
		return
	}
	r.log.Info("progress", "elapsed", p.elapsed.Round(time.Millisecond), "produced_rps", int64(p.prodRate),
		"produced_mibps", fmt.Sprintf("%.2f", p.prodMiB), "consumed_rps", int64(p.consRate), "kv_rps", int64(p.kvRate),
		"produce_p50_ms", p.p50, "produce_p99_ms", p.p99, "interval_produce_p99_ms", p.winP99, "interval_e2e_p99_ms", p.winE2EP99, "errors", p.errors, "warmup", p.warmingUp)
}
