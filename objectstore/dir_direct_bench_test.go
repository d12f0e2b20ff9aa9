//go:build linux

package objectstore

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// cpuTime is the process's user and system CPU time so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// newBenchDir returns a Dir under b's temp dir, writing through the page
// cache unless direct (and the file system takes O_DIRECT).
func newBenchDir(b *testing.B, direct bool) *Dir {
	d, err := NewDir(filepath.Join(b.TempDir(), "objects"))
	if err != nil {
		b.Fatal(err)
	}
	if !direct {
		d.w.refuseDirect()
	} else if !directSupported(b, d.root) {
		b.Skipf("no O_DIRECT on %s", d.root)
	}
	return d
}

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
			cpu := cpuTime(b)
			b.ResetTimer()
			for i := range b.N {
				if err := d.Put(ctx, fmt.Sprintf("wal/%08d", i), data); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64((cpuTime(b)-cpu).Microseconds())/1000/float64(b.N), "cpu-ms/op")
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
			cpu := cpuTime(b)
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
			b.ReportMetric(float64((cpuTime(b)-cpu).Microseconds())/1000/float64(b.N), "cpu-ms/op")
		})
	}
}

// BenchmarkDirPutSmall puts 1 KiB objects (a low-load produce's), one at a
// time, with O_DIRECT (as Put wrote every object before directWriteMin)
// and through the page cache (as Put writes objects below it), back to
// back and paced at 100 Puts a second (issue 11's one producer at 100
// requests/s, the device idle between Puts). It reports the Put's p50 and
// p90.
//
//	go test ./objectstore -run '^$' -bench DirPutSmall -benchtime 300x -count 2
func BenchmarkDirPutSmall(b *testing.B) {
	for _, pace := range []time.Duration{0, 10 * time.Millisecond} {
		for _, direct := range []bool{true, false} {
			b.Run(fmt.Sprintf("pace=%v/direct=%v", pace, direct), func(b *testing.B) {
				d := newBenchDir(b, direct)
				d.w.directMin = 0
				data := make([]byte, 1024)
				ctx := context.Background()
				var tick <-chan time.Time
				if pace > 0 {
					t := time.NewTicker(pace)
					defer t.Stop()
					tick = t.C
				}
				lat := make([]time.Duration, 0, b.N)
				b.ResetTimer()
				for i := range b.N {
					if tick != nil {
						<-tick
					}
					start := time.Now()
					if err := d.Put(ctx, fmt.Sprintf("wal/%08d", i), data); err != nil {
						b.Fatal(err)
					}
					lat = append(lat, time.Since(start))
				}
				b.StopTimer()
				slices.Sort(lat)
				b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
				b.ReportMetric(float64(lat[len(lat)*9/10].Microseconds())/1000, "p90-ms")
			})
		}
	}
}
