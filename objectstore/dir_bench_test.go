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
	next := pacer(b, pace)
	ctx := context.Background()
	data := make([]byte, 1024)
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		next()
		start := time.Now()
		if err := d.Put(ctx, fmt.Sprintf("wal/%08d", i), data); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	reportLatency(b, lat)
}

// pacer returns a wait for the next of a benchmark's operations, one per
// pace (a ticker's, so that an operation's own time is not added to it), or
// none for a zero pace.
func pacer(b *testing.B, pace time.Duration) (next func()) {
	if pace <= 0 {
		return func() {}
	}
	t := time.NewTicker(pace)
	b.Cleanup(t.Stop)
	return func() { <-t.C }
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

// BenchmarkDiskSync times the device round trips a low-load produce on the
// embedded default is made of, without floe's code around them, one 1 KiB
// write at a time, back to back (pace 0s) or 100 a second (10ms, issue 11's
// load): p50 and p90 of
//
//   - overwrite: a write into a file whose blocks are already written and
//     synced, then fdatasync: no metadata to commit, the fewest a durable
//     write can cost (a recycled, preallocated WAL file);
//   - append: a write at a file's end, then fdatasync (Pebble's commit);
//   - create: a new file written and fsynced (Dir.Put's temporary file);
//   - dir: then renamed and the directory fsynced (Dir.Put's rename made
//     durable: a journal commit of its own);
//   - put: create and dir as one Dir.Put does them, timed together;
//   - direct: a 4 KiB O_DIRECT write into written blocks, no sync: the
//     device's write round trip alone (skipped without O_DIRECT);
//   - flush: an fdatasync with nothing to write: the device's cache flush
//     alone.
//
// A produce cost put and append in turn; with inline objects
// (package coordinator/inline) it costs append, which is direct and flush one
// after the other (and the inode, as the file grows). Renaming before the
// file's fsync, or fsyncing the directory beside the file, was measured
// too: under a tenth off put, as the device serialises the two journal
// commits anyway.
//
//	go test ./objectstore -run '^$' -bench DiskSync -benchtime 300x
func BenchmarkDiskSync(b *testing.B) {
	for _, pace := range []time.Duration{0, 10 * time.Millisecond} {
		for _, op := range []string{"overwrite", "append", "create", "dir", "put", "direct", "flush"} {
			b.Run(fmt.Sprintf("pace=%v/op=%s", pace, op), func(b *testing.B) { benchDiskSync(b, pace, op) })
		}
	}
}

func benchDiskSync(b *testing.B, pace time.Duration, op string) {
	root := b.TempDir()
	buf := make([]byte, 1024)
	const block = 4096
	aligned := alignedBuf(block)
	f, err := os.OpenFile(filepath.Join(root, "log"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	var direct *os.File
	if op == "direct" {
		if openDirectFlag == 0 {
			b.Skip("no O_DIRECT here")
		}
		if direct, err = os.OpenFile(f.Name(), os.O_RDWR|openDirectFlag, 0); err != nil {
			b.Skip("O_DIRECT refused:", err)
		}
		defer direct.Close()
	}
	if op == "overwrite" || op == "direct" || op == "flush" {
		if _, err := f.Write(make([]byte, b.N*block)); err != nil {
			b.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			b.Fatal(err)
		}
	}
	dir, err := os.Open(root)
	if err != nil {
		b.Fatal(err)
	}
	defer dir.Close()
	check := func(err error) {
		if err != nil {
			b.Fatal(err)
		}
	}
	next := pacer(b, pace)
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		next()
		var start time.Time
		switch op {
		case "overwrite":
			start = time.Now()
			_, err := f.WriteAt(buf, int64(i*block))
			check(err)
			check(fdatasync(f))
		case "append":
			start = time.Now()
			_, err := f.Write(buf)
			check(err)
			check(fdatasync(f))
		case "create", "dir":
			name := filepath.Join(root, fmt.Sprintf("obj-%d", i))
			nf, err := os.Create(name + ".tmp")
			check(err)
			if op == "create" {
				start = time.Now()
			}
			_, err = nf.Write(buf)
			check(err)
			check(nf.Sync())
			check(nf.Close())
			if op == "dir" {
				start = time.Now()
				check(os.Rename(name+".tmp", name))
				check(dir.Sync())
			}
		case "direct":
			start = time.Now()
			_, err := direct.WriteAt(aligned, int64(i*block))
			check(err)
		case "flush":
			start = time.Now()
			check(fdatasync(f))
		case "put":
			name := filepath.Join(root, fmt.Sprintf("obj-%d", i))
			start = time.Now()
			nf, err := os.Create(name + ".tmp")
			check(err)
			_, err = nf.Write(buf)
			check(err)
			check(nf.Sync())
			check(os.Rename(name+".tmp", name))
			check(dir.Sync())
			check(nf.Close())
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	reportLatency(b, lat)
}
