package kvindex

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/floe-io/floe/internal/testkit"
	"github.com/floe-io/floe/record"
)

// benchService is a Service with one indexed key whose record sits in a batch of 100
// records, as a hot lookup finds it: it allocates nothing and takes no lock, so the
// benchmarks measure the handler (after the first lookup the batch is in the
// handler's batch cache: decoded, or the positions of its records).
type benchService struct {
	info   TopicInfo
	key    []byte
	part   int32
	result LookupResult
	data   []byte
}

func newBenchService(tb testing.TB, codec record.Codec) *benchService {
	s := &benchService{info: TopicInfo{ID: topicA, Partitions: 12, Indexed: true}}
	s.key = []byte("user-0000123456")
	s.part = Partition(s.key, 12)
	recs := make([]kv, 100)
	for i := range recs {
		recs[i] = kv{key: fmt.Appendf(nil, "user-%010d", 123400+i), value: make([]byte, 200), tsDelta: int64(i)}
	}
	opts := withTS(1_700_000_000_000)
	opts.Codec = codec
	s.data = build(tb, opts, recs...)
	s.result = LookupResult{Indexed: true, Ready: true, Found: true, HighWatermark: 1 << 40,
		Offset: 5000 + 56, // the 57th record: "user-0000123456"
		Batch:  BatchRef{Object: "wal/bench", ByteLength: int32(len(s.data)), BaseOffset: 5000}}
	return s
}

func (s *benchService) Topic(context.Context, string) (TopicInfo, error) { return s.info, nil }

func (s *benchService) Lookup(_ context.Context, _ [16]byte, p int32, key []byte) (LookupResult, error) {
	if p != s.part || string(key) != string(s.key) {
		return LookupResult{Indexed: true, Ready: true}, nil
	}
	return s.result, nil
}

func (s *benchService) ResolveSegment(context.Context, BatchRef, int64) (BatchRef, error) {
	return BatchRef{}, errors.New("no segments")
}

func (s *benchService) ReadBatch(_ context.Context, _ BatchRef, from, length int32) ([]byte, error) {
	return s.data[from : from+length], nil
}

// discardWriter is a reusable ResponseWriter, to count the handler's own allocations.
type discardWriter struct {
	h      http.Header
	status int
}

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w *discardWriter) WriteHeader(status int)      { w.status = status }

// BenchmarkHandlerHit is the hit path through httptest.NewRecorder: parse, partition,
// Service calls, record read, headers and body.
func BenchmarkHandlerHit(b *testing.B) {
	for _, codec := range []record.Codec{record.CodecNone, record.CodecSnappy, record.CodecLZ4, record.CodecZstd} {
		b.Run(codec.String(), func(b *testing.B) {
			h := NewHandler(newBenchService(b, codec), HandlerOptions{Logger: testkit.Logger()})
			r := httptest.NewRequest(http.MethodGet, "/kv/users/user-0000123456", nil)
			b.ReportAllocs()
			for b.Loop() {
				w := httptest.NewRecorder()
				h.ServeHTTP(w, r)
				if w.Code != http.StatusOK {
					b.Fatalf("status %d: %s", w.Code, w.Body)
				}
			}
		})
	}
}

// BenchmarkHandlerHitOwn is the hit path with a reused writer: what the handler itself
// costs, allocations included.
func BenchmarkHandlerHitOwn(b *testing.B) {
	h := NewHandler(newBenchService(b, record.CodecNone), HandlerOptions{Logger: testkit.Logger(),
		Observer: func(int, time.Duration) {}})
	r := httptest.NewRequest(http.MethodGet, "/kv/users/user-0000123456", nil)
	w := &discardWriter{h: http.Header{}}
	b.ReportAllocs()
	for b.Loop() {
		clear(w.h)
		h.ServeHTTP(w, r)
		if w.status != http.StatusOK {
			b.Fatalf("status %d", w.status)
		}
	}
}

// BenchmarkHandlerMiss is a key with no index entry (404 with a fixed JSON body).
func BenchmarkHandlerMiss(b *testing.B) {
	h := NewHandler(newBenchService(b, record.CodecNone), HandlerOptions{Logger: testkit.Logger()})
	r := httptest.NewRequest(http.MethodGet, "/kv/users/nobody", nil)
	w := &discardWriter{h: http.Header{}}
	b.ReportAllocs()
	for b.Loop() {
		clear(w.h)
		h.ServeHTTP(w, r)
		if w.status != http.StatusNotFound {
			b.Fatalf("status %d", w.status)
		}
	}
}

// BenchmarkHandlerHitParallel runs the hit path on every P at once.
func BenchmarkHandlerHitParallel(b *testing.B) {
	h := NewHandler(newBenchService(b, record.CodecNone), HandlerOptions{Logger: testkit.Logger()})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		r := httptest.NewRequest(http.MethodGet, "/kv/users/user-0000123456", nil)
		for pb.Next() {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
		}
	})
}

// BenchmarkHandlerHTTP serves lookups over loopback HTTP/1.1 with keep-alive from 1 and
// from 8 concurrent clients in the same process (clients and server share the CPUs),
// and reports latency percentiles and throughput. The Service is in memory: this is the
// HTTP and handler share of a cached lookup's latency.
func BenchmarkHandlerHTTP(b *testing.B) {
	srv := httptest.NewServer(NewHandler(newBenchService(b, record.CodecNone), HandlerOptions{Logger: testkit.Logger()}))
	defer srv.Close()
	url := srv.URL + "/kv/users/user-0000123456"
	for _, workers := range []int{1, 8} {
		b.Run(fmt.Sprint("clients=", workers), func(b *testing.B) {
			tr := &http.Transport{MaxIdleConnsPerHost: 64}
			defer tr.CloseIdleConnections()
			client := &http.Client{Transport: tr}
			var (
				next atomic.Int64
				mu   sync.Mutex
				lats []time.Duration
				wg   sync.WaitGroup
			)
			n := int64(b.N)
			b.ResetTimer()
			start := time.Now()
			for range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					var mine []time.Duration
					defer func() {
						mu.Lock()
						lats = append(lats, mine...)
						mu.Unlock()
					}()
					for next.Add(1) <= n {
						t0 := time.Now()
						res, err := client.Get(url)
						if err != nil {
							b.Error(err)
							return
						}
						_, _ = io.Copy(io.Discard, res.Body)
						res.Body.Close()
						mine = append(mine, time.Since(t0))
						if res.StatusCode != http.StatusOK {
							b.Errorf("status %d", res.StatusCode)
							return
						}
					}
				}()
			}
			wg.Wait()
			elapsed := time.Since(start)
			b.StopTimer()
			if len(lats) == 0 {
				return
			}
			slices.Sort(lats)
			pct := func(p float64) float64 { return float64(lats[int(p*float64(len(lats)-1))].Microseconds()) }
			b.ReportMetric(pct(0.50), "p50-µs")
			b.ReportMetric(pct(0.99), "p99-µs")
			b.ReportMetric(float64(len(lats))/elapsed.Seconds(), "lookups/s")
		})
	}
}
