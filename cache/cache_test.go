package cache

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/floe-io/floe/internal/testkit"
	"github.com/floe-io/floe/objectstore"
)

const testChunk = 1024

func TestOptionsValidate(t *testing.T) {
	tests := []struct {
		name string
		opts Options
		errs int // number of problems reported
	}{
		{"zero value", Options{}, 0},
		{"explicit", Options{ChunkBytes: 1 << 20, MaxBytes: 64 << 20, Dir: "/tmp/x", DiskBytes: 1 << 30}, 0},
		{"negative chunk", Options{ChunkBytes: -1}, 1},
		{"max below chunk", Options{ChunkBytes: 8 << 20, MaxBytes: 1 << 20}, 1},
		{"disk below chunk", Options{Dir: "/tmp/x", DiskBytes: 10}, 1},
		{"everything wrong", Options{ChunkBytes: -1, MaxBytes: -1, ReadAheadConcurrency: -1, LoadTimeout: -1}, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.opts.Validate()
			var got int
			if err != nil {
				got = len(err.(interface{ Unwrap() []error }).Unwrap())
			}
			if got != tt.errs {
				t.Fatalf("Validate() = %v: %d problems, want %d", err, got, tt.errs)
			}
		})
	}
}

func TestGetRange(t *testing.T) {
	store := newFakeStore()
	const size = 10*testChunk + 123 // short last chunk
	data := store.add("obj", size)
	c := newTestCache(t, store, Options{ChunkBytes: testChunk, MaxBytes: 64 * testChunk, ReadAhead: -1})

	tests := []struct {
		name           string
		offset, length int64
		want           []byte // nil: data[offset:offset+length]
		err            error
	}{
		{name: "start of chunk", offset: 0, length: 100},
		{name: "inside chunk", offset: 1500, length: 200},
		{name: "whole chunk", offset: 2 * testChunk, length: testChunk},
		{name: "across two chunks", offset: testChunk - 10, length: 20},
		{name: "across many chunks", offset: 1000, length: 7*testChunk + 55},
		{name: "whole object", offset: 0, length: size},
		{name: "short last chunk", offset: 10*testChunk + 3, length: 100},
		{name: "into short last chunk", offset: 9*testChunk + 1000, length: 120},
		{name: "to end (length -1)", offset: 9000, length: -1, want: data[9000:]},
		{name: "past end is clipped", offset: size - 10, length: 100, want: data[size-10:]},
		{name: "zero length", offset: 5, length: 0, want: []byte{}},
		{name: "at end", offset: size, length: 10, want: []byte{}},
		{name: "beyond end", offset: size + 1, length: 1, err: ErrOutOfRange},
		{name: "negative offset", offset: -1, length: 1, err: ErrOutOfRange},
	}
	for _, pass := range []string{"cold", "warm"} {
		for _, tt := range tests {
			t.Run(pass+"/"+tt.name, func(t *testing.T) {
				got, err := c.GetRange(context.Background(), "obj", size, tt.offset, tt.length)
				if tt.err != nil {
					if !errors.Is(err, tt.err) {
						t.Fatalf("err = %v, want %v", err, tt.err)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				want := tt.want
				if want == nil {
					want = data[tt.offset : tt.offset+tt.length]
				}
				if !bytes.Equal(got, want) {
					t.Fatalf("got %d bytes, want %d (content differs: %v)", len(got), len(want), len(got) == len(want))
				}
			})
		}
	}
	// Ten chunks: the 123-byte tail (at most testChunk/8) joins chunk 9.
	if s := c.Stats(); s.Gets != 10 || s.BytesLoaded != size {
		t.Fatalf("Gets = %d, BytesLoaded = %d; want 10 chunk GETs loading %d bytes", s.Gets, s.BytesLoaded, size)
	}
}

// TestChunkBounds checks how objects are cut: aligned chunks, a short last
// one, and a tail of at most ChunkBytes/8 joining the chunk before it.
func TestChunkBounds(t *testing.T) {
	c := &Cache{opts: Options{ChunkBytes: 1024}}
	for _, tt := range []struct {
		size, count, lastLen int64
	}{
		{1, 1, 1},
		{1024, 1, 1024},
		{1025, 1, 1025},       // a 1-byte tail joins
		{1024 + 128, 1, 1152}, // the largest tail that joins
		{1024 + 129, 2, 129},  // one more byte: a chunk of its own
		{4096, 4, 1024},
		{4096 + 100, 4, 1124},
		{4096 + 1000, 5, 1000},
	} {
		if n := c.chunkCount(tt.size); n != tt.count {
			t.Errorf("size %d: %d chunks, want %d", tt.size, n, tt.count)
			continue
		}
		if l := c.chunkLen(tt.size, tt.count-1); l != tt.lastLen {
			t.Errorf("size %d: last chunk %d bytes, want %d", tt.size, l, tt.lastLen)
		}
		var sum int64
		for i := range tt.count {
			sum += c.chunkLen(tt.size, i)
		}
		if sum != tt.size {
			t.Errorf("size %d: chunks sum to %d", tt.size, sum)
		}
		for _, off := range []int64{0, tt.size - 1, (tt.count - 1) * 1024} {
			want := min(off/1024, tt.count-1)
			if got := c.chunkOf(tt.size, off); got != want {
				t.Errorf("size %d offset %d: chunk %d, want %d", tt.size, off, got, want)
			}
		}
	}
}

func TestGetRangeErrors(t *testing.T) {
	store := newFakeStore()
	store.add("obj", 1000)
	c := newTestCache(t, store, Options{ChunkBytes: testChunk, MaxBytes: 8 * testChunk})
	ctx := context.Background()

	if _, err := c.GetRange(ctx, "missing", 1000, 0, 10); !errors.Is(err, objectstore.ErrNotFound) {
		t.Errorf("missing object: err = %v, want ErrNotFound", err)
	}
	// The caller claims the object is bigger than it is.
	if _, err := c.GetRange(ctx, "obj", 2000, 0, 10); !errors.Is(err, ErrShortRead) {
		t.Errorf("wrong size: err = %v, want ErrShortRead", err)
	}
	if s := c.Stats(); s.GetErrors != 2 || s.Chunks != 0 {
		t.Errorf("GetErrors = %d, Chunks = %d; want 2 errors, nothing cached", s.GetErrors, s.Chunks)
	}
	c.Close()
	if _, err := c.GetRange(ctx, "obj", 1000, 0, 10); !errors.Is(err, ErrClosed) {
		t.Errorf("after Close: err = %v, want ErrClosed", err)
	}
}

func TestSubSliceIsCapped(t *testing.T) {
	store := newFakeStore()
	data := store.add("obj", 4*testChunk)
	c := newTestCache(t, store, Options{ChunkBytes: testChunk, MaxBytes: 8 * testChunk})
	got, err := c.GetRange(context.Background(), "obj", 4*testChunk, 10, 10)
	if err != nil {
		t.Fatal(err)
	}
	_ = append(got, 0xff) // must not write into the cached chunk
	again, _ := c.GetRange(context.Background(), "obj", 4*testChunk, 10, 11)
	if !bytes.Equal(again, data[10:21]) {
		t.Fatal("append to a returned slice changed the cached chunk")
	}
}

func TestSingleLoadPerChunk(t *testing.T) {
	store := newFakeStore()
	data := store.add("obj", 3*testChunk)
	store.gate = make(chan struct{})
	c := newTestCache(t, store, Options{ChunkBytes: testChunk, MaxBytes: 8 * testChunk, ReadAhead: -1})

	const readers = 64
	var wg sync.WaitGroup
	errs := make(chan error, readers)
	for i := range readers {
		wg.Go(func() {
			off := int64(testChunk + i) // all in chunk 1
			got, err := c.GetRange(context.Background(), "obj", 3*testChunk, off, 100)
			if err == nil && !bytes.Equal(got, data[off:off+100]) {
				err = fmt.Errorf("reader %d: wrong bytes", i)
			}
			errs <- err
		})
	}
	// Release the GET only once every reader is waiting on it.
	testkit.CheckFor(t, 5*time.Second, time.Millisecond, func() error {
		if m := c.Stats().Misses; m != readers {
			return fmt.Errorf("%d readers waiting", m)
		}
		return nil
	})
	close(store.gate)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := store.total.Load(); n != 1 {
		t.Fatalf("%d GETs for one chunk under %d concurrent readers, want 1", n, readers)
	}
}

func TestWaiterCancelDoesNotCancelLoad(t *testing.T) {
	store := newFakeStore()
	data := store.add("obj", testChunk)
	store.gate = make(chan struct{})
	c := newTestCache(t, store, Options{ChunkBytes: testChunk, MaxBytes: 8 * testChunk})

	ctx, cancel := context.WithCancel(context.Background())
	first := make(chan error, 1)
	go func() {
		_, err := c.GetRange(ctx, "obj", testChunk, 0, 10)
		first <- err
	}()
	second := make(chan []byte, 1)
	go func() {
		b, _ := c.GetRange(context.Background(), "obj", testChunk, 0, 10)
		second <- b
	}()
	testkit.CheckFor(t, 5*time.Second, time.Millisecond, func() error {
		if m := c.Stats().Misses; m != 2 {
			return fmt.Errorf("%d readers waiting", m)
		}
		return nil
	})
	cancel()
	if err := <-first; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled waiter: err = %v", err)
	}
	close(store.gate)
	if b := <-second; !bytes.Equal(b, data[:10]) {
		t.Fatal("second waiter got wrong bytes")
	}
	if s := c.Stats(); s.Gets != 1 || s.Chunks != 1 {
		t.Fatalf("Gets = %d, Chunks = %d; want the one load cached", s.Gets, s.Chunks)
	}
}

func TestByteBoundUnderLoad(t *testing.T) {
	store := newFakeStore()
	store.latency = 50 * time.Microsecond
	const objects, maxChunks = 20, 8
	sizes := make([]int64, objects)
	for i := range objects {
		sizes[i] = int64(3*testChunk + i*97) // varied short last chunks
		store.add(fmt.Sprintf("o%d", i), int(sizes[i]))
	}
	const maxBytes = maxChunks * testChunk
	c := newTestCache(t, store, Options{ChunkBytes: testChunk, MaxBytes: maxBytes, ReadAheadConcurrency: 2})

	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	sampled := make(chan error, 1)
	go func() {
		var samples int
		for ctx.Err() == nil {
			s := c.Stats()
			if s.Bytes > maxBytes || s.Bytes+s.Reserved > maxBytes {
				sampled <- fmt.Errorf("sample %d: resident %d + reserved %d > max %d", samples, s.Bytes, s.Reserved, maxBytes)
				return
			}
			samples++
			runtime.Gosched()
		}
		sampled <- nil
	}()

	var wg sync.WaitGroup
	for g := range 32 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 1))
			for range 150 {
				o := r.IntN(objects)
				size := sizes[o]
				off := r.Int64N(size)
				n := r.Int64N(min(size-off, 3*testChunk) + 1)
				got, err := c.GetRange(context.Background(), fmt.Sprintf("o%d", o), size, off, n)
				if err != nil {
					t.Error(err)
					return
				}
				if int64(len(got)) != n {
					t.Errorf("got %d bytes, want %d", len(got), n)
					return
				}
				if r.IntN(20) == 0 {
					if err := c.checkInvariants(); err != nil {
						t.Error(err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	stop()
	if err := <-sampled; err != nil {
		t.Fatal(err)
	}
	s := c.Stats()
	if s.Bytes > maxBytes {
		t.Fatalf("resident %d > max %d at end", s.Bytes, maxBytes)
	}
	if s.Evictions == 0 {
		t.Fatal("no evictions: the test did not stress the bound")
	}
	t.Logf("stats: %+v", s)
}

func TestScanResistance(t *testing.T) {
	store := newFakeStore()
	const hotObjects, chunksPer = 5, 4 // 20 hot chunks
	const objSize = chunksPer * testChunk
	for i := range hotObjects {
		store.add(fmt.Sprintf("hot%d", i), objSize)
	}
	const scanObjects = 250 // 1000 chunks, 10x the cache
	for i := range scanObjects {
		store.add(fmt.Sprintf("scan%d", i), objSize)
	}
	c := newTestCache(t, store, Options{ChunkBytes: testChunk, MaxBytes: 100 * testChunk})
	ctx := context.Background()

	readHot := func() (hits int64) {
		before := c.Stats().Hits
		for i := range hotObjects {
			for ch := range int64(chunksPer) {
				if _, err := c.GetRange(ctx, fmt.Sprintf("hot%d", i), objSize, ch*testChunk, 256); err != nil {
					t.Fatal(err)
				}
			}
		}
		return c.Stats().Hits - before
	}
	for range 3 { // warm up: the hot set is re-read
		readHot()
	}
	// A lagging consumer scans 1000 chunks once, sequentially in small
	// reads; the hot set keeps being read meanwhile.
	var hotHits, hotReads int64
	for i := range scanObjects {
		key := fmt.Sprintf("scan%d", i)
		for off := int64(0); off < objSize; off += 256 {
			if _, err := c.GetRange(ctx, key, objSize, off, 256); err != nil {
				t.Fatal(err)
			}
		}
		if i%10 == 9 {
			hotHits += readHot()
			hotReads += hotObjects * chunksPer
		}
	}
	after := readHot()
	ratio := float64(hotHits) / float64(hotReads)
	t.Logf("hot hit ratio during scan %.3f, after scan %d/%d; stats %+v", ratio, after, hotObjects*chunksPer, c.Stats())
	if ratio < 0.95 || after != hotObjects*chunksPer {
		t.Fatalf("hot set flushed by scan: hit ratio during %.3f, hits after %d of %d", ratio, after, hotObjects*chunksPer)
	}
	// The scan read each chunk once, forward: none of it may have been
	// promoted to the main queue, where the re-read hot set lives.
	c.mu.RLock()
	var scanInMain, hotInMain int
	for e := c.mu.main.head; e != nil; e = e.next {
		if strings.HasPrefix(e.key.key, "scan") {
			scanInMain++
		} else {
			hotInMain++
		}
	}
	c.mu.RUnlock()
	if scanInMain != 0 || hotInMain != hotObjects*chunksPer {
		t.Fatalf("main queue holds %d scan chunks and %d hot chunks; want 0 and %d", scanInMain, hotInMain, hotObjects*chunksPer)
	}
}

func TestReadAhead(t *testing.T) {
	store := newFakeStore()
	store.latency = time.Millisecond
	const chunks = 8
	const size = chunks*testChunk - 100
	data := store.add("seq", size)
	obs := &countingObserver{}
	c := newTestCache(t, store, Options{ChunkBytes: testChunk, MaxBytes: 64 * testChunk, Observer: obs})
	ctx := context.Background()

	// Reads of 256 bytes from the start. Reading chunk 1 after chunk 0
	// makes the reader sequential: from then on, chunk i+1 must be fetched
	// before the reader asks for it.
	for off := int64(0); off < size; off += 256 {
		idx := off / testChunk
		if idx >= 2 && off%testChunk == 0 {
			testkit.CheckFor(t, 5*time.Second, time.Millisecond, func() error {
				if store.getsAt("seq", idx*testChunk) != 1 {
					return fmt.Errorf("chunk %d not prefetched before it is read", idx)
				}
				c.mu.RLock()
				defer c.mu.RUnlock()
				if c.mu.entries[chunkKey{"seq", idx}] == nil {
					return fmt.Errorf("chunk %d not resident yet", idx)
				}
				return nil
			})
		}
		got, err := c.GetRange(ctx, "seq", size, off, 256)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, data[off:min(off+256, size)]) {
			t.Fatalf("wrong bytes at %d", off)
		}
	}
	s := c.Stats()
	if s.Gets != chunks || s.Misses != 2 || s.ReadAheads != chunks-2 {
		t.Fatalf("Gets %d, Misses %d, ReadAheads %d; want %d GETs, misses only on chunks 0-1, %d read-aheads",
			s.Gets, s.Misses, s.ReadAheads, chunks, chunks-2)
	}
	if d, ra := obs.demand.Load(), obs.readAhead.Load(); d != 2 || ra != chunks-2 {
		t.Fatalf("observer saw %d demand and %d read-ahead loads, want 2 and %d", d, ra, chunks-2)
	}
}

type countingObserver struct{ demand, readAhead atomic.Int64 }

func (o *countingObserver) ObserveLoad(ev LoadEvent) {
	if ev.Err == nil && ev.Source == SourceStore && ev.Bytes > 0 && ev.Duration > 0 {
		if ev.ReadAhead {
			o.readAhead.Add(1)
		} else {
			o.demand.Add(1)
		}
	}
}

func TestReadAheadNotForRandomReads(t *testing.T) {
	tests := []struct {
		name      string
		readAhead int
		reads     []int64 // chunk indexes, each read whole
		wantRA    int64
	}{
		{"isolated chunk", 1, []int64{5}, 0},
		{"backwards", 1, []int64{5, 4, 3}, 0},
		{"far apart", 1, []int64{1, 4, 7}, 0},
		{"sequential", 1, []int64{1, 2}, 1},
		{"sequential, 3 ahead", 3, []int64{1, 2}, 3},
		{"sequential, disabled", -1, []int64{1, 2, 3}, 0},
		{"sequential at the end", 1, []int64{8, 9}, 0}, // chunk 10 does not exist
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := newFakeStore()
			const size = 10 * testChunk
			store.add("obj", size)
			c := newTestCache(t, store, Options{ChunkBytes: testChunk, MaxBytes: 64 * testChunk, ReadAhead: tt.readAhead})
			for _, idx := range tt.reads {
				if _, err := c.GetRange(context.Background(), "obj", size, idx*testChunk, testChunk); err != nil {
					t.Fatal(err)
				}
			}
			if got := c.Stats().ReadAheads; got != tt.wantRA {
				t.Fatalf("ReadAheads = %d, want %d", got, tt.wantRA)
			}
		})
	}
}

func TestPutWriteThrough(t *testing.T) {
	store := newFakeStore()
	c := newTestCache(t, store, Options{ChunkBytes: testChunk, MaxBytes: 16 * testChunk})
	const size = 3*testChunk + 500
	data := make([]byte, size)
	for i := range data {
		data[i] = byte(i * 7)
	}
	want := bytes.Clone(data)
	c.Put("new", data)
	clear(data) // the caller may reuse its buffer

	for _, r := range [][2]int64{{0, size}, {0, 10}, {testChunk - 5, 10}, {3 * testChunk, 500}, {100, 2 * testChunk}} {
		got, err := c.GetRange(context.Background(), "new", size, r[0], r[1])
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want[r[0]:r[0]+r[1]]) {
			t.Fatalf("range %v: wrong bytes", r)
		}
	}
	s := c.Stats()
	if s.Gets != 0 || s.Misses != 0 || s.Puts != 4 || s.Bytes != size {
		t.Fatalf("after Put: Gets %d, Misses %d, Puts %d, Bytes %d; want 0, 0, 4, %d", s.Gets, s.Misses, s.Puts, s.Bytes, size)
	}
}

func TestDiskTier(t *testing.T) {
	dir := t.TempDir()
	leftover := filepath.Join(dir, "00000000000000ff.chunk")
	if err := os.WriteFile(leftover, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	store := newFakeStore()
	const chunks = 6
	const size = chunks*testChunk - 300
	data := store.add("obj", size)
	c := newTestCache(t, store, Options{
		ChunkBytes: testChunk, MaxBytes: 2 * testChunk, ReadAhead: -1,
		Dir: dir, DiskBytes: 3 * testChunk,
	})
	if _, err := os.Stat(leftover); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("leftover chunk file not removed: %v", err)
	}
	ctx := context.Background()
	read := func(idx int64) {
		t.Helper()
		off := idx * testChunk
		end := min(off+testChunk, size)
		got, err := c.GetRange(ctx, "obj", size, off, end-off)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, data[off:end]) {
			t.Fatalf("chunk %d: wrong bytes", idx)
		}
	}
	// Reading chunk by chunk through a 2-chunk memory tier evicts chunks
	// 0..3 to disk; the 3-chunk disk tier keeps 1..3.
	for idx := range int64(chunks) {
		read(idx)
		testkit.CheckFor(t, 5*time.Second, time.Millisecond, func() error {
			if s := c.Stats(); s.DiskWrites != max(idx-1, 0) {
				return fmt.Errorf("%d disk writes", s.DiskWrites)
			}
			return nil
		})
	}
	if s := c.Stats(); s.Gets != chunks || s.DiskBytes > 3*testChunk {
		t.Fatalf("Gets %d, DiskBytes %d", s.Gets, s.DiskBytes)
	}
	read(3) // memory miss, disk hit
	if s := c.Stats(); s.Gets != chunks || s.DiskHits != 1 {
		t.Fatalf("re-read of an evicted chunk: Gets %d, DiskHits %d; want no new GET, 1 disk hit", s.Gets, s.DiskHits)
	}
	read(0) // evicted from disk too: GET
	if s := c.Stats(); s.Gets != chunks+1 {
		t.Fatalf("re-read of a chunk gone from disk: Gets %d, want %d", s.Gets, chunks+1)
	}

	// A damaged file is a miss, never bad data.
	files, _ := filepath.Glob(filepath.Join(dir, "*"+diskSuffix))
	damaged := 0
	for _, name := range files {
		// A background write may evict a file since the glob: skip it.
		f, err := os.OpenFile(name, os.O_RDWR, 0)
		if err != nil {
			continue
		}
		var first [1]byte
		if _, err := f.ReadAt(first[:], 0); err == nil {
			first[0] ^= 0xff
			if _, err := f.WriteAt(first[:], 0); err == nil {
				damaged++
			}
		}
		f.Close()
	}
	if damaged == 0 {
		t.Fatalf("no chunk file left to damage among %v", files)
	}
	// Every read checks its bytes; the damaged files must have been missed
	// and loaded again. (Chunks evicted to disk during these reads are
	// written anew in the background and may serve later reads.)
	gets := c.Stats().Gets
	for idx := range int64(chunks) {
		read(idx)
	}
	if s := c.Stats(); s.Gets == gets {
		t.Fatalf("after damaging files: no GET (Gets %d, DiskHits %d): a damaged file was served", s.Gets, s.DiskHits)
	}
}

// BenchmarkGetRangeHit measures the hit path: a 64 KiB read within a cached
// 4 MiB chunk, returned as a sub-slice.
func BenchmarkGetRangeHit(b *testing.B) {
	const chunk, size, read = 4 << 20, 16 << 20, 64 << 10
	store := newFakeStore()
	store.add("obj", size)
	c := newTestCache(b, store, Options{ChunkBytes: chunk, MaxBytes: 64 << 20})
	ctx := context.Background()
	if _, err := c.GetRange(ctx, "obj", size, 0, size); err != nil {
		b.Fatal(err)
	}
	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(read)
		var off int64
		for b.Loop() {
			if _, err := c.GetRange(ctx, "obj", size, off, read); err != nil {
				b.Fatal(err)
			}
			off = (off + read) % size
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(read)
		b.RunParallel(func(pb *testing.PB) {
			var off int64
			for pb.Next() {
				if _, err := c.GetRange(ctx, "obj", size, off, read); err != nil {
					b.Error(err)
					return
				}
				off = (off + read) % size
			}
		})
	})
	if s := c.Stats(); s.Gets != 4 {
		b.Fatalf("hit benchmark issued %d GETs", s.Gets)
	}
}

// TestWriteThroughSurvivesLaggingTail: with main holding a 16-chunk hot set (so
// that small keeps about 2 chunks), a consumer tailing fresh objects ten
// chunks behind the producer (far more than small's 2-chunk share) still
// reads every written-through chunk from memory, with no GET.
func TestWriteThroughSurvivesLaggingTail(t *testing.T) {
	store := newFakeStore()
	c := newTestCache(t, store, Options{ChunkBytes: testChunk, MaxBytes: 20 * testChunk, ReadAhead: -1})
	ctx := context.Background()
	read := func(key string) {
		t.Helper()
		if _, err := c.GetRange(ctx, key, testChunk, 0, testChunk); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 16 { // a hot set, read twice: it moves on to main
		key := fmt.Sprintf("hot%d", i)
		store.add(key, testChunk)
		read(key)
		read(key)
	}
	const objects, lag = 40, 10
	for i := range objects {
		c.Put(fmt.Sprintf("o%d", i), make([]byte, testChunk))
		if i >= lag {
			read(fmt.Sprintf("o%d", i-lag))
		}
	}
	if s := c.Stats(); s.Gets != 16 {
		t.Fatalf("lagging tail reader: %d GETs, want only the hot set's 16", s.Gets)
	}
}

// TestReadAheadKeptUntilRead: with main full of re-read chunks, small is
// kept at its tenth of the cache, and chunks read ahead for a sequential
// reader must still stay until the reader reaches them: each chunk of the
// scan is read from the store once.
func TestReadAheadKeptUntilRead(t *testing.T) {
	store := newFakeStore()
	store.latency = time.Millisecond
	const hotChunks, seqChunks = 20, 40
	hot := store.add("hot", hotChunks*testChunk)
	seq := store.add("seq", seqChunks*testChunk)
	c := newTestCache(t, store, Options{ChunkBytes: testChunk, MaxBytes: 30 * testChunk, ReadAhead: 8, ReadAheadConcurrency: 8})
	ctx := context.Background()
	read := func(key string, size, off, n int64, want []byte) {
		t.Helper()
		got, err := c.GetRange(ctx, key, size, off, n)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want[off:off+n]) {
			t.Fatalf("wrong bytes of %s at %d", key, off)
		}
	}
	// Every chunk of hot read twice: re-read, so it goes to main when
	// small is evicted.
	for range 2 {
		for i := int64(0); i < hotChunks; i++ {
			read("hot", hotChunks*testChunk, i*testChunk, testChunk, hot)
		}
	}
	for off := int64(0); off < seqChunks*testChunk; off += testChunk / 4 {
		read("seq", seqChunks*testChunk, off, testChunk/4, seq)
	}
	extra := 0
	for i := int64(0); i < seqChunks; i++ {
		extra += store.getsAt("seq", i*testChunk) - 1
	}
	if extra != 0 {
		t.Fatalf("the scan read %d chunks from the store more than once: read-ahead evicted before its reader came", extra)
	}
	c.mu.Lock()
	mainN := c.mu.main.n
	c.mu.Unlock()
	if mainN == 0 {
		t.Fatal("main is empty: the test did not put the cache in the state it is about")
	}
}
