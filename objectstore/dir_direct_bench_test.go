package objectstore

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
)

// BenchmarkDirPutObject puts full-size objects (8 MiB, ingest's default
// --ingest-max-bytes, from a page-aligned buffer as ingest's are) one after
// the other, with O_DIRECT and through the page cache. It reports MB/s and
// the CPU time a Put costs the process (cpu-ms/op): the page cache copy
// and its reclaim are what O_DIRECT saves at saturation.
//
//	go test ./objectstore -run '^$' -bench DirPutObject -benchtime 40x -count 2
func BenchmarkDirPutObject(b *testing.B) {
	for _, direct := range []bool{true, false} {
		b.Run(fmt.Sprintf("direct=%v", direct), func(b *testing.B) {
			d := newBenchDir(b, direct)
			data := make([]byte, 8<<20) // a large allocation: page-aligned
			for i := range data {
				data[i] = byte(i * 7)
			}
			ctx := context.Background()
			b.SetBytes(int64(len(data)))
			cpu := benchCPU(b)
			b.ResetTimer()
			for i := range b.N {
				if err := d.Put(ctx, fmt.Sprintf("wal/%08d", i), data); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64((benchCPU(b)-cpu).Microseconds())/1000/float64(b.N), "cpu-ms/op")
		})
	}
}

// BenchmarkDirGetRangeCold reads one cache chunk (4 MiB, --cache-chunk-bytes'
// default) from each of b.N objects put with O_DIRECT, so not in the page
// cache: as a consumer catching up past the chunk cache does. It reads
// with O_DIRECT (ranges of directReadMin or more) and through the page
// cache's read-ahead.
//
//	go test ./objectstore -run '^$' -bench DirGetRangeCold -benchtime 40x -count 2
func BenchmarkDirGetRangeCold(b *testing.B) {
	for _, direct := range []bool{true, false} {
		b.Run(fmt.Sprintf("direct=%v", direct), func(b *testing.B) {
			d := newBenchDir(b, true)
			data := make([]byte, 8<<20)
			ctx := context.Background()
			for i := range b.N {
				if err := d.Put(ctx, fmt.Sprintf("wal/%08d", i), data); err != nil {
					b.Fatal(err)
				}
			}
			if !direct {
				d.w.refuseDirect() // GetRange reads through the page cache
			}
			const chunk = 4 << 20
			b.SetBytes(chunk)
			var next atomic.Int64
			b.SetParallelism(4) // a fetch reads up to --fetch-concurrency ranges at once
			cpu := benchCPU(b)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					i := next.Add(1) - 1
					got, err := d.GetRange(ctx, fmt.Sprintf("wal/%08d", i), 12345, chunk)
					if err != nil || len(got) != chunk {
						b.Errorf("GetRange: %d bytes, %v", len(got), err)
						return
					}
				}
			})
			b.StopTimer()
			b.ReportMetric(float64((benchCPU(b)-cpu).Microseconds())/1000/float64(b.N), "cpu-ms/op")
		})
	}
}
