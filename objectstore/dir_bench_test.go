package objectstore

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/floe-io/floe/internal/testkit"
)

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

// benchCPU is this process's CPU time so far; the benchmark skips where
// it cannot be read.
func benchCPU(b *testing.B) time.Duration {
	d, err := testkit.ProcessCPU(os.Getpid())
	if err != nil {
		b.Skip(err)
	}
	return d
}

// reportLatency reports the p50 and p90 of lat (sorted in place), in ms.
func reportLatency(b *testing.B, lat []time.Duration) {
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*9/10].Microseconds())/1000, "p90-ms")
}

// BenchmarkDirPut times one small Put at a time (1 KiB, a low-load
// produce's object) and reports its p50 and p90: the object's part of the
// embedded default's produce latency (issue 11's floor). Its cases:
//
//   - synced-writer: beside another writer on the same file system that
//     appends to a file and syncs it, as the coordinator's Pebble WAL does.
//
//   - pace: Puts back to back (0s), or 100 a second (10ms, issue 11's one
//     producer at 100 requests/s: the device idle between Puts).
//
//   - direct: with O_DIRECT (as Put wrote every object before
//     directWriteMin), or through the page cache (as it writes a small
//     object now).
//
//     go test ./objectstore -run '^$' -bench 'DirPut$' -benchtime 300x
func BenchmarkDirPut(b *testing.B) {
	for _, beside := range []bool{false, true} {
		for _, pace := range []time.Duration{0, 10 * time.Millisecond} {
			for _, direct := range []bool{true, false} {
				b.Run(fmt.Sprintf("synced-writer=%v/pace=%v/direct=%v", beside, pace, direct), func(b *testing.B) {
					benchDirPut(b, beside, pace, direct)
				})
			}
		}
	}
}

func benchDirPut(b *testing.B, beside bool, pace time.Duration, direct bool) {
	d := newBenchDir(b, direct)
	d.w.directMin = 0 // direct=true writes even 1 KiB with O_DIRECT
	if beside {
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() { syncedWriter(b, filepath.Join(b.TempDir(), "other.log"), stop) })
		defer wg.Wait()
		defer close(stop)
	}
	var tick <-chan time.Time
	if pace > 0 {
		t := time.NewTicker(pace)
		defer t.Stop()
		tick = t.C
	}
	ctx := context.Background()
	data := make([]byte, 1024)
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
	reportLatency(b, lat)
}

// syncedWriter appends 4 KiB to path and syncs it, over and over, until
// stop is closed.
func syncedWriter(b *testing.B, path string, stop <-chan struct{}) {
	f, err := os.Create(path)
	if err != nil {
		b.Error(err)
		return
	}
	defer f.Close()
	buf := make([]byte, 4096)
	for {
		select {
		case <-stop:
			return
		default:
		}
		if _, err := f.Write(buf); err != nil {
			b.Error(err)
			return
		}
		if err := f.Sync(); err != nil {
			b.Error(err)
			return
		}
	}
}
