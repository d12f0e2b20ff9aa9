package objectstore_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/floe-io/floe/internal/testkit"
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
	for _, n := range []int64{1 << 10, 12_000, 256 << 10, 1 << 20, 4 << 20} {
		b.Run(fmt.Sprintf("len=%d", n), func(b *testing.B) {
			ds := make([]time.Duration, 0, b.N)
			minio0 := cpuOf(b, m.PID())
			for i := range b.N {
				start := time.Now()
				if _, err := s.GetRange(ctx, fmt.Sprintf("obj-%d", i%objects), int64(i%10)*1_000_000+12_345, n); err != nil {
					b.Fatal(err)
				}
				ds = append(ds, time.Since(start))
			}
			b.ReportMetric(p50(ds), "p50-ms")
			b.ReportMetric(float64((cpuOf(b, m.PID())-minio0).Microseconds())/1000/float64(b.N), "minio-cpu-ms/get")
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

// BenchmarkS3Put times PutObject against a local MinIO (the e2e harness's),
// one at a time, for WAL-object sizes from 1 to 8 MiB: the p50, and the CPU
// time MinIO and this process ran per PUT. On 2 shared cores a PUT's CPU on
// both sides bounds how fast a broker on MinIO can roll objects (issue 18).
//
//	go test ./objectstore -run '^$' -bench S3Put -benchtime 40x
func BenchmarkS3Put(b *testing.B) {
	m := miniotest.Start(b)
	s := m.Store(b)
	ctx := context.Background()
	for _, n := range []int{1 << 20, 2 << 20, 8 << 20} {
		b.Run(fmt.Sprintf("len=%d", n), func(b *testing.B) {
			data := make([]byte, n)
			for i := range data {
				data[i] = byte(i * 7)
			}
			ds := make([]time.Duration, 0, b.N)
			minio0, self0 := cpuOf(b, m.PID()), cpuOf(b, os.Getpid())
			b.ResetTimer()
			for i := range b.N {
				start := time.Now()
				if err := s.Put(ctx, fmt.Sprintf("put-%d-%d", n, i), data); err != nil {
					b.Fatal(err)
				}
				ds = append(ds, time.Since(start))
			}
			b.StopTimer()
			minio1, self1 := cpuOf(b, m.PID()), cpuOf(b, os.Getpid())
			perPut := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(b.N) }
			b.ReportMetric(p50(ds), "p50-ms")
			b.ReportMetric(perPut(minio1-minio0), "minio-cpu-ms/put")
			b.ReportMetric(perPut(self1-self0), "client-cpu-ms/put")
		})
	}
}

func cpuOf(b *testing.B, pid int) time.Duration {
	d, err := testkit.ProcessCPU(pid)
	if err != nil {
		b.Fatal(err)
	}
	return d
}

// p50 is the median of ds, in milliseconds.
func p50(ds []time.Duration) float64 {
	slices.Sort(ds)
	return float64(ds[len(ds)/2].Microseconds()) / 1000
}
