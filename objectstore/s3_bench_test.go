package objectstore_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/floe-io/floe/internal/testkit/miniotest"
)

// BenchmarkS3GetRange times ranged GETs against a local MinIO (the e2e
// harness's): one at a time for lengths from 1 KiB to 4 MiB, and ten 12 KB
// GETs at once (a hierarchical view's fetch of one key's ten batches,
// issue 16), on warm connections and on a new client's. It reports the p50 of each. On MinIO a small GET costs about
// the same whatever its length, since MinIO reads and checks a whole
// erasure block for any range: the floor of a view's fetch.
//
//	go test ./objectstore -run '^$' -bench S3GetRange -benchtime 60x
func BenchmarkS3GetRange(b *testing.B) {
	m := miniotest.Start(b)
	s := m.Store(b)
	ctx := context.Background()
	const objects = 20
	data := make([]byte, 12<<20)
	for i := range objects {
		if err := s.Put(ctx, fmt.Sprintf("obj-%d", i), data); err != nil {
			b.Fatal(err)
		}
	}
	p50 := func(ds []time.Duration) float64 {
		slices.Sort(ds)
		return float64(ds[len(ds)/2].Microseconds()) / 1000
	}
	for _, n := range []int64{1 << 10, 12_000, 256 << 10, 1 << 20, 4 << 20} {
		b.Run(fmt.Sprintf("len=%d", n), func(b *testing.B) {
			ds := make([]time.Duration, 0, b.N)
			for i := range b.N {
				start := time.Now()
				if _, err := s.GetRange(ctx, fmt.Sprintf("obj-%d", i%objects), int64(i%10)*1_000_000+12_345, n); err != nil {
					b.Fatal(err)
				}
				ds = append(ds, time.Since(start))
			}
			b.ReportMetric(p50(ds), "p50-ms")
		})
	}
	// Ten at once, on warm connections and on a new client's (a broker's
	// first fetch opens its connections to the store).
	for _, fresh := range []bool{false, true} {
		b.Run(fmt.Sprintf("ten-12KB-at-once/new-client=%v", fresh), func(b *testing.B) {
			ds := make([]time.Duration, 0, b.N)
			for i := range b.N {
				cl := s
				if fresh {
					cl = m.Store(b)
				}
				start := time.Now()
				var wg sync.WaitGroup
				for j := range 10 {
					wg.Go(func() {
						if _, err := cl.GetRange(ctx, fmt.Sprintf("obj-%d", (i+j)%objects), int64(j)*1_000_000+12_345, 12_000); err != nil {
							b.Error(err)
						}
					})
				}
				wg.Wait()
				ds = append(ds, time.Since(start))
			}
			b.ReportMetric(p50(ds), "p50-ms")
		})
	}
}
