package loadtest

import (
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Histogram bounds: microsecond resolution, 3 significant digits, up to 60s.
// A latency above the top is recorded as 60s rather than dropped, so a stall
// still shows in max and the high percentiles.
const (
	histLowest  = 1
	histHighest = int64(60 * time.Second / time.Microsecond)
	histSigFigs = 3
)

// Histogram is a concurrency-safe HDR latency histogram in microseconds.
// Each producer and consumer records into its own Histogram, so the lock is
// rarely contended; snapshots merge them.
type Histogram struct {
	mu struct {
		sync.Mutex
		h *hdrhistogram.Histogram
	}
}

// NewHistogram returns an empty Histogram.
func NewHistogram() *Histogram {
	h := &Histogram{}
	h.mu.h = newHDR()
	return h
}

func newHDR() *hdrhistogram.Histogram {
	return hdrhistogram.New(histLowest, histHighest, histSigFigs)
}

// Record adds one latency; negative values (clock skew between hosts) count
// as 0 and values above 60s as 60s.
func (h *Histogram) Record(d time.Duration) {
	us := int64(d / time.Microsecond)
	us = max(0, min(us, histHighest))
	h.mu.Lock()
	_ = h.mu.h.RecordValue(us) // in range by construction
	h.mu.Unlock()
}

// mergeInto adds h's counts to dst.
func (h *Histogram) mergeInto(dst *hdrhistogram.Histogram) {
	h.mu.Lock()
	dst.Merge(h.mu.h)
	h.mu.Unlock()
}

// merged returns one histogram holding the counts of all hs.
func merged(hs []*Histogram) *hdrhistogram.Histogram {
	out := newHDR()
	for _, h := range hs {
		h.mergeInto(out)
	}
	return out
}

// since returns the counts cur holds beyond prev, a histogram of what was
// recorded between the two snapshots (prev nil: all of cur). Both come from
// merged, so their bounds agree.
func since(cur, prev *hdrhistogram.Histogram) *hdrhistogram.Histogram {
	if prev == nil {
		return cur
	}
	c, p := cur.Export(), prev.Export()
	for i := range c.Counts {
		if i < len(p.Counts) {
			c.Counts[i] -= p.Counts[i]
		}
	}
	return hdrhistogram.Import(c)
}

// LatencyStats summarizes a latency distribution in milliseconds.
type LatencyStats struct {
	Count  int64   `json:"count"`
	MeanMs float64 `json:"mean_ms"`
	P50Ms  float64 `json:"p50_ms"`
	P90Ms  float64 `json:"p90_ms"`
	P99Ms  float64 `json:"p99_ms"`
	P999Ms float64 `json:"p999_ms"`
	MaxMs  float64 `json:"max_ms"`
}

// latencyStats reads percentiles from a microsecond histogram.
func latencyStats(h *hdrhistogram.Histogram) LatencyStats {
	if h.TotalCount() == 0 {
		return LatencyStats{}
	}
	ms := func(us int64) float64 { return float64(us) / 1000 }
	return LatencyStats{
		Count:  h.TotalCount(),
		MeanMs: h.Mean() / 1000,
		P50Ms:  ms(h.ValueAtQuantile(50)),
		P90Ms:  ms(h.ValueAtQuantile(90)),
		P99Ms:  ms(h.ValueAtQuantile(99)),
		P999Ms: ms(h.ValueAtQuantile(99.9)),
		MaxMs:  ms(h.Max()),
	}
}

// Stats summarizes the latencies h has recorded so far, for tools built on
// this package (the fleet simulator) that keep their own histograms.
func (h *Histogram) Stats() LatencyStats { return MergedStats(h) }

// MergedStats summarizes the latencies all hs recorded, as one
// distribution.
func MergedStats(hs ...*Histogram) LatencyStats { return latencyStats(merged(hs)) }
