package objectstore_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/floe-io/floe/objectstore"
)

// BenchmarkDirPut times one small Put at a time (1 KiB, a low-load
// produce's object, back to back), alone and beside another writer on the same
// file system that appends to a file and syncs it, as the broker's
// coordinator does with its Pebble WAL. It reports the Put's p50 and p90:
// the object's part of the embedded default's produce latency (issue 11's
// floor).
//
//	go test ./objectstore -run '^$' -bench DirPut -benchtime 400x
func BenchmarkDirPut(b *testing.B) {
	for _, beside := range []bool{false, true} {
		b.Run(fmt.Sprintf("synced-writer=%v", beside), func(b *testing.B) {
			root := b.TempDir()
			d, err := objectstore.NewDir(filepath.Join(root, "objects"))
			if err != nil {
				b.Fatal(err)
			}
			stop := make(chan struct{})
			var wg sync.WaitGroup
			if beside {
				wg.Add(1)
				go syncedWriter(b, filepath.Join(root, "other.log"), stop, &wg)
			}
			ctx := context.Background()
			data := make([]byte, 1024)
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := range b.N {
				start := time.Now()
				if err := d.Put(ctx, fmt.Sprintf("wal/%08d", i), data); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
			}
			b.StopTimer()
			close(stop)
			wg.Wait()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[len(lat)*9/10].Microseconds())/1000, "p90-ms")
		})
	}
}

// syncedWriter appends 4 KiB to path and syncs it, over and over, until
// stop is closed.
func syncedWriter(b *testing.B, path string, stop <-chan struct{}, wg *sync.WaitGroup) {
	defer wg.Done()
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
