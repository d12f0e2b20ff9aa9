package objectstore_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/floe-io/floe/internal/testkit/miniotest"
	"github.com/floe-io/floe/objectstore"
	"github.com/floe-io/floe/s3latency"
)

// stragglers is a Memory store whose first call of every key (per
// operation) hangs until its context ends, as an S3 straggler would for
// seconds; later calls answer at once.
type stragglers struct {
	*objectstore.Memory
	mu        sync.Mutex
	seen      map[string]bool
	cancelled atomic.Int64 // straggling calls that ended by cancellation
	hang      time.Duration
}

func newStragglers(hang time.Duration) *stragglers {
	return &stragglers{Memory: objectstore.NewMemory(), seen: make(map[string]bool), hang: hang}
}

func (s *stragglers) straggle(ctx context.Context, id string) error {
	s.mu.Lock()
	first := !s.seen[id]
	s.seen[id] = true
	s.mu.Unlock()
	if !first {
		return nil
	}
	var timeout <-chan time.Time
	if s.hang > 0 {
		timeout = time.After(s.hang)
	}
	select {
	case <-ctx.Done():
		s.cancelled.Add(1)
		return ctx.Err()
	case <-timeout:
		return nil
	}
}

func (s *stragglers) Put(ctx context.Context, key string, data []byte) error {
	if err := s.straggle(ctx, "put "+key); err != nil {
		return err
	}
	return s.Memory.Put(ctx, key, data)
}

func (s *stragglers) GetRange(ctx context.Context, key string, off, n int64) ([]byte, error) {
	if err := s.straggle(ctx, "get "+key); err != nil {
		return nil, err
	}
	return s.Memory.GetRange(ctx, key, off, n)
}

var fastHedge = objectstore.HedgeOptions{MinDelay: time.Millisecond, ColdDelay: 5 * time.Millisecond, MaxFraction: 1}

// TestHedgeStraggler: a request that would hang forever is answered by
// its hedge, and the straggler is cancelled before Put returns (so that
// the caller may reuse its buffer).
func TestHedgeStraggler(t *testing.T) {
	ctx := context.Background()
	inner := newStragglers(0)
	h := objectstore.NewHedged(inner, fastHedge)
	if err := h.Put(ctx, "wal/a", []byte("abc")); err != nil {
		t.Fatalf("hedged Put: %v", err)
	}
	if inner.cancelled.Load() != 1 {
		t.Errorf("the straggling PUT was not cancelled before Put returned")
	}
	got, err := h.GetRange(ctx, "wal/a", 0, -1)
	if err != nil || string(got) != "abc" {
		t.Fatalf("hedged GetRange = %q, %v", got, err)
	}
	if sent, won := h.Hedges(); sent != 2 || won != 2 {
		t.Errorf("hedges sent/won = %d/%d, want 2/2", sent, won)
	}
}

// TestHedgeNotWhenFast: requests answered within the quantile are never
// sent twice.
func TestHedgeNotWhenFast(t *testing.T) {
	ctx := context.Background()
	h := objectstore.NewHedged(objectstore.NewMemory(), objectstore.HedgeOptions{MinDelay: time.Second})
	for i := range 200 {
		key := "k/" + string(rune('a'+i%26)) + string(rune('a'+i/26))
		if err := h.Put(ctx, key, bytes.Repeat([]byte{1}, 100)); err != nil {
			t.Fatal(err)
		}
		if _, err := h.GetRange(ctx, key, 0, 10); err != nil {
			t.Fatal(err)
		}
	}
	if sent, _ := h.Hedges(); sent != 0 {
		t.Errorf("%d hedges of requests that answered at once", sent)
	}
}

// TestHedgeBudget: when every request is slow, hedges stay within
// MaxFraction of the requests (plus the budget's burst).
func TestHedgeBudget(t *testing.T) {
	ctx := context.Background()
	inner := newStragglers(20 * time.Millisecond)
	opts := fastHedge
	opts.MaxFraction = 0.1
	h := objectstore.NewHedged(inner, opts)
	const n = 100
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := h.Put(ctx, "b/"+string(rune(0x4e00+i)), []byte("x")); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if sent, _ := h.Hedges(); sent < 1 || sent > n/10+1 {
		t.Errorf("%d hedges for %d slow requests at a 10%% budget", sent, n)
	}
}

// TestHedgeFailure: a request that fails is not hidden: its error returns
// once nothing else can succeed.
func TestHedgeFailure(t *testing.T) {
	f := objectstore.NewFaulty(objectstore.NewMemory(), objectstore.FaultOptions{PutErrorRate: 1})
	h := objectstore.NewHedged(f, fastHedge)
	if err := h.Put(context.Background(), "x/y", []byte("z")); err == nil {
		t.Fatal("Put on a store that fails every PUT succeeded")
	}
}

func TestHedgeContract(t *testing.T) {
	testStore(t, objectstore.NewHedged(objectstore.NewMemory(), fastHedge))
}

// stragglingTransport reaches MinIO for the latency proxy, except that the
// first PUT and the first GET of every third key hang until their client
// gives up: a straggler that only a hedge can beat.
type stragglingTransport struct {
	mu         sync.Mutex
	seen       map[string]bool
	stragglers atomic.Int64
}

func (s *stragglingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	id := req.Method + " " + req.URL.Path
	s.mu.Lock()
	first := !s.seen[id]
	s.seen[id] = true
	s.mu.Unlock()
	if first && strings.HasPrefix(req.URL.Path, "/"+"floe-test/hedge/") && int(req.URL.Path[len(req.URL.Path)-1]-'0')%3 == 0 {
		s.stragglers.Add(1)
		<-req.Context().Done()
		return nil, req.Context().Err()
	}
	return http.DefaultTransport.RoundTrip(req)
}

// TestHedgeS3Stragglers hedges PUTs and GETs to a real MinIO through the
// latency proxy, some of whose requests straggle until cancelled: every
// call succeeds, the caller's buffer is reused at once after Put returns
// (the race detector watches the cancelled loser's body), and every
// object reads back as written.
func TestHedgeS3Stragglers(t *testing.T) {
	srv := miniotest.Start(t)
	tr := &stragglingTransport{seen: map[string]bool{}}
	px, err := s3latency.Listen("127.0.0.1:0", s3latency.Options{Upstream: srv.Upstream, Transport: tr})
	if err != nil {
		t.Fatal(err)
	}
	defer px.Close()
	opts := srv.Options()
	opts.Endpoint = px.URL
	s3, err := objectstore.NewS3(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	h := objectstore.NewHedged(s3, objectstore.HedgeOptions{MinDelay: 20 * time.Millisecond, ColdDelay: 50 * time.Millisecond, MaxFraction: 1})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	buf := make([]byte, 256<<10)
	want := map[string][]byte{}
	for i := range 12 {
		key := fmt.Sprintf("hedge/%02d", i)
		copy(buf, randBytes(uint64(i), len(buf)))
		if err := h.Put(ctx, key, buf); err != nil {
			t.Fatalf("Put %s: %v", key, err)
		}
		want[key] = slices.Clone(buf)
		clear(buf) // the buffer is the caller's again
	}
	for key, data := range want {
		got, err := h.GetRange(ctx, key, 0, -1)
		if err != nil {
			t.Fatalf("GetRange %s: %v", key, err)
		}
		if !bytes.Equal(got, data) {
			t.Fatalf("%s read back %d bytes differing from the %d written", key, len(got), len(data))
		}
	}
	sent, won := h.Hedges()
	if n := tr.stragglers.Load(); n != 10 || sent < n || won != n {
		t.Errorf("stragglers %d (want 10: keys 00, 03, 06, 09 and 10, PUT and GET), hedges sent %d, won %d (want every straggler beaten)", n, sent, won)
	}
}
