package kvindex

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/floe-io/floe/internal/testkit"
	"github.com/floe-io/floe/record"
)

// bigBatchLog is a fakeLog with one partition of batches of perBatch records each,
// keys "k-%04d" with values "v-%04d", compressed with codec.
func bigBatchLog(t testing.TB, codec record.Codec, batches, perBatch int) *fakeLog {
	t.Helper()
	f := newFakeLog()
	f.addTopic("t", TopicInfo{ID: topicA, Partitions: 1, Indexed: true})
	opts := withTS(1000)
	opts.Codec = codec
	for b := range batches {
		recs := make([]kv, perBatch)
		for i := range recs {
			n := b*perBatch + i
			recs[i] = kv{key: fmt.Appendf(nil, "k-%04d", n), value: fmt.Appendf(nil, "v-%04d", n), tsDelta: int64(i)}
		}
		f.append(t, topicA, 0, build(t, opts, recs...))
	}
	return f
}

// lookupKey serves GET /kv/t/k-<n> and checks the answer (with Errorf: tests call
// it from goroutines).
func lookupKey(t testing.TB, h http.Handler, n int) {
	t.Helper()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, fmt.Sprintf("/kv/t/k-%04d", n), nil))
	if w.Code != http.StatusOK || w.Body.String() != fmt.Sprintf("v-%04d", n) || w.Header().Get("X-Kv-Offset") != strconv.Itoa(n) {
		t.Errorf("k-%04d: status %d body %q offset %s", n, w.Code, w.Body, w.Header().Get("X-Kv-Offset"))
	}
}

// TestBatchCacheHits: lookups of the records of a batch read and decode it once; then
// a compressed batch is served from memory, an uncompressed one by reading the
// record's bytes alone.
func TestBatchCacheHits(t *testing.T) {
	for _, codec := range []record.Codec{record.CodecSnappy, record.CodecZstd, record.CodecNone} {
		t.Run(codec.String(), func(t *testing.T) {
			f := bigBatchLog(t, codec, 2, 500)
			cache := NewBatchCache(DefaultBatchCacheBytes)
			h := NewHandler(f, HandlerOptions{Logger: testkit.Logger(), BatchCache: cache})
			for n := range 1000 {
				lookupKey(t, h, n)
				lookupKey(t, h, 999-n)
			}
			st := cache.Stats()
			if f.reads != 2 || st.Loads != 2 || st.Misses != 2 || st.Hits != 1998 || st.Batches != 2 {
				t.Errorf("%d reads, stats %+v; want 2 reads and loads, 1998 hits", f.reads, st)
			}
			// Compressed batches are kept decoded; uncompressed ones as record
			// positions, each later lookup reading its record only.
			wantRecordReads, maxBytes := 0, int64(2*(decodedOverhead+2000+500*(6+6+recPosSize))+4096)
			if codec == record.CodecNone {
				wantRecordReads, maxBytes = 1998, 2*(decodedOverhead+100+4*501)
			}
			if f.recordReads != wantRecordReads || st.Bytes > maxBytes {
				t.Errorf("%d record reads, %d bytes cached; want %d, at most %d", f.recordReads, st.Bytes, wantRecordReads, maxBytes)
			}
			if f.lookups != 2000 {
				t.Errorf("%d Service lookups for 2000 requests", f.lookups)
			}
		})
	}
}

// TestBatchCacheSharedRead: lookups that miss on one batch at the same time
// share its read as well as its decode.
func TestBatchCacheSharedRead(t *testing.T) {
	f := bigBatchLog(t, record.CodecLZ4, 1, 10)
	f.readGate = make(chan struct{})
	cache := NewBatchCache(DefaultBatchCacheBytes)
	h := NewHandler(f, HandlerOptions{Logger: testkit.Logger(), BatchCache: cache})
	const n = 8
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lookupKey(t, h, i)
		}()
	}
	// Every lookup has missed (and waits on the one read) before it ends.
	testkit.CheckFor(t, 5*time.Second, time.Millisecond, func() error {
		if m := cache.Stats().Misses; m != n {
			return fmt.Errorf("%d of %d lookups missed", m, n)
		}
		return nil
	})
	close(f.readGate)
	wg.Wait()
	f.mu.Lock()
	defer f.mu.Unlock()
	if st := cache.Stats(); f.reads != 1 || st.Loads != 1 {
		t.Errorf("%d batch reads, %d loads for %d concurrent misses; want 1 and 1", f.reads, st.Loads, n)
	}
}

// TestBatchCacheDisabled: a cache of 0 bytes keeps nothing, lookups still work, and
// each reads its record in place, decoding no batch whole.
func TestBatchCacheDisabled(t *testing.T) {
	for _, codec := range []record.Codec{record.CodecLZ4, record.CodecNone} {
		f := bigBatchLog(t, codec, 1, 10)
		cache := NewBatchCache(0)
		h := NewHandler(f, HandlerOptions{Logger: testkit.Logger(), BatchCache: cache})
		for n := range 10 {
			lookupKey(t, h, n)
		}
		if st := cache.Stats(); f.reads != 10 || st.Loads != 0 || st.Batches != 0 || st.Bytes != 0 {
			t.Errorf("%v: %d reads, stats %+v", codec, f.reads, st)
		}
	}
}

// decodedOf decodes a batch of n records "k-i" with values of size bytes.
func decodedOf(t testing.TB, object string, n, size int) *decodedBatch {
	t.Helper()
	recs := make([]kv, n)
	for i := range recs {
		recs[i] = kv{key: fmt.Appendf(nil, "k-%d", i), value: make([]byte, size)}
	}
	opts := noProducer
	opts.Codec = record.CodecLZ4
	d, err := decodeBatch(build(t, opts, recs...), BatchRef{Object: object})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// loadInto loads d at k, failing the test on error.
func loadInto(t testing.TB, c *BatchCache, k batchKey, d *decodedBatch) {
	t.Helper()
	if _, err := c.load(context.Background(), k, func() (*decodedBatch, error) { return d, nil }); err != nil {
		t.Fatal(err)
	}
}

// TestBatchCacheBounded: what the cache holds never exceeds its bytes, it evicts to
// make room, and a batch larger than a quarter of it is served without being kept.
func TestBatchCacheBounded(t *testing.T) {
	const maxBytes = 256 << 10
	c := NewBatchCache(maxBytes)
	one := decodedOf(t, "o", 20, 500) // about 10 KiB
	for i := range 200 {
		loadInto(t, c, batchKey{"o", int64(i)}, one)
		if st := c.Stats(); st.Bytes > maxBytes {
			t.Fatalf("after %d loads: %d bytes held, bound %d", i+1, st.Bytes, maxBytes)
		}
	}
	st := c.Stats()
	if st.Evictions == 0 || st.Bytes < maxBytes/2 || st.Batches*int(one.size()) != int(st.Bytes) {
		t.Errorf("stats %+v with batches of %d bytes", st, one.size())
	}
	huge := decodedOf(t, "h", 200, 500) // about 100 KiB: over a quarter
	got, err := c.load(context.Background(), batchKey{"h", 0}, func() (*decodedBatch, error) { return huge, nil })
	if err != nil || got != huge {
		t.Fatalf("huge batch: %v", err)
	}
	if c.get(batchKey{"h", 0}) != nil {
		t.Error("a batch over a quarter of the cache was kept")
	}
}

// TestBatchCacheScanResistance: batches looked up again survive a scan of batches
// looked up once (S3-FIFO: the scan leaves through the small queue).
func TestBatchCacheScanResistance(t *testing.T) {
	one := decodedOf(t, "o", 20, 500)
	c := NewBatchCache(40 * one.size())
	hot := make([]batchKey, 10)
	for i := range hot {
		hot[i] = batchKey{"hot", int64(i)}
		loadInto(t, c, hot[i], one)
	}
	for round := range 3 {
		for _, k := range hot {
			if c.get(k) == nil {
				t.Fatalf("hot batch %v missing before the scan", k)
			}
		}
		for i := range 100 {
			loadInto(t, c, batchKey{"scan", int64(round*100 + i)}, one)
		}
		for _, k := range hot {
			if c.get(k) == nil {
				t.Fatalf("hot batch %v evicted by a scan", k)
			}
		}
	}
}

// TestBatchCacheSharedLoad: concurrent misses on one batch wait for one load; a
// failed load does not fail the waiters, which load themselves.
func TestBatchCacheSharedLoad(t *testing.T) {
	one := decodedOf(t, "o", 20, 10)
	for _, fail := range []bool{false, true} {
		c := NewBatchCache(DefaultBatchCacheBytes)
		k := batchKey{"o", 0}
		release := make(chan struct{})
		var mu sync.Mutex
		calls := 0
		fn := func() (*decodedBatch, error) {
			mu.Lock()
			calls++
			first := calls == 1
			mu.Unlock()
			if first {
				<-release
				if fail {
					return nil, errors.New("first load fails")
				}
			}
			return one, nil
		}
		const n = 8
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				got, err := c.load(context.Background(), k, fn)
				if err == nil && got != one {
					err = errors.New("wrong batch")
				}
				errs <- err
			}()
		}
		testkit.CheckFor(t, 5*time.Second, time.Millisecond, func() error {
			if m := c.Stats().Misses; m != n {
				return fmt.Errorf("%d of %d lookups waiting", m, n)
			}
			return nil
		})
		close(release)
		wg.Wait()
		close(errs)
		failed := 0
		for err := range errs {
			if err != nil {
				failed++
			}
		}
		switch {
		case !fail && (calls != 1 || failed != 0):
			t.Errorf("%d loads, %d failures; want 1 load shared", calls, failed)
		case fail && (failed != 1 || calls != 2):
			// The waiters retry: one of them loads again, the rest share it
			// or hit what it cached.
			t.Errorf("first load failing: %d failures, %d loads; want only the loader to fail, and one load after it", failed, calls)
		}
	}
}

// TestBatchCacheConcurrent: many lookups at once over more compressed batches than
// the cache holds, under -race: every answer right, the bound kept.
func TestBatchCacheConcurrent(t *testing.T) {
	f := bigBatchLog(t, record.CodecSnappy, 20, 100)
	one, err := decodeBatch(f.objects[f.batches[fakeKey{topic: topicA}][0].object], BatchRef{Object: "x"})
	if err != nil {
		t.Fatal(err)
	}
	cache := NewBatchCache(6 * one.size())
	h := NewHandler(f, HandlerOptions{Logger: testkit.Logger(), BatchCache: cache})
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			for range 300 {
				lookupKey(t, h, rng.IntN(2000))
				if st := cache.Stats(); st.Bytes > st.MaxBytes {
					t.Errorf("%d bytes held, bound %d", st.Bytes, st.MaxBytes)
					return
				}
			}
		}()
	}
	wg.Wait()
	st := cache.Stats()
	if st.Hits+st.Misses != 2400 || st.Hits == 0 || st.Loads == 0 || st.Evictions == 0 {
		t.Errorf("stats %+v", st)
	}
}

// readDecoded reads the record at offset from d, decoded from data, as the handler does.
func readDecoded(d *decodedBatch, data []byte, offset int64, key []byte) ([]byte, int64, outcome, error) {
	if !d.raw {
		return d.record(offset, key)
	}
	from, n, ok, err := d.locate(offset)
	if !ok || err != nil {
		return nil, 0, stale, err
	}
	return d.readOne(data[from:from+n], offset, key)
}

// TestDecodedBatchGaps: a decoded batch with offset gaps (compaction), compressed or
// not, finds records by offset, and answers stale for a removed one.
func TestDecodedBatchGaps(t *testing.T) {
	recs := []kv{
		{key: []byte("g0"), value: []byte("zero")},
		{key: []byte("g2"), value: []byte("two"), tsDelta: 2},
		{key: []byte("g3")},
	}
	for _, data := range [][]byte{
		gapBatch(t, record.CodecNone, 9000, 3, []int32{0, 2, 3}, recs...),
		gapBatch(t, record.CodecZstd, 9000, 3, []int32{0, 2, 3}, recs...),
	} {
		d, err := decodeBatch(data, BatchRef{Object: "o", BaseOffset: 100})
		if err != nil {
			t.Fatal(err)
		}
		if d.dense {
			t.Fatal("a batch with gaps decoded as dense")
		}
		for _, tt := range []struct {
			offset int64
			key    string
			value  string
			ts     int64
			out    outcome
		}{
			{100, "g0", "zero", 9000, found},
			{101, "g1", "", 0, stale},
			{102, "g2", "two", 9002, found},
			{102, "g0", "", 0, stale},
			{103, "g3", "", 9000, tombstone},
		} {
			v, ts, out, err := readDecoded(d, data, tt.offset, []byte(tt.key))
			if err != nil || out != tt.out || string(v) != tt.value || (out != stale && ts != tt.ts) {
				t.Errorf("raw=%v %d %s: %q ts %d outcome %d err %v; want %q %d %d", d.raw, tt.offset, tt.key, v, ts, out, err, tt.value, tt.ts, tt.out)
			}
		}
		if _, _, _, err := readDecoded(d, data, 104, []byte("g3")); err == nil {
			t.Error("an offset past the batch read without error")
		}
	}
}
