package cache

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/floe-io/floe/internal/testkit"
	"github.com/floe-io/floe/objectstore"
)

// Every objectstore backend can sit behind the cache.
var _ Getter = objectstore.Store(nil)

// fakeStore is an in-memory Getter that counts GETs, can add latency, and
// can hold every GET until released.
type fakeStore struct {
	mu struct {
		sync.Mutex
		objects map[string][]byte
		gets    map[string]int // "key@offset" -> GETs
		order   []string       // "key@offset" in GET order
	}
	total   atomic.Int64
	latency time.Duration
	gate    chan struct{} // if non-nil, GETs block until it is closed
}

func newFakeStore() *fakeStore {
	s := &fakeStore{}
	s.mu.objects = make(map[string][]byte)
	s.mu.gets = make(map[string]int)
	return s
}

// add stores a random object of size bytes under key and returns it.
func (s *fakeStore) add(key string, size int) []byte {
	data := make([]byte, size)
	r := rand.New(rand.NewPCG(uint64(size), uint64(len(key))))
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	s.mu.Lock()
	s.mu.objects[key] = data
	s.mu.Unlock()
	return data
}

func (s *fakeStore) GetRange(ctx context.Context, key string, offset, length int64) ([]byte, error) {
	s.total.Add(1)
	id := fmt.Sprintf("%s@%d", key, offset)
	s.mu.Lock()
	s.mu.gets[id]++
	s.mu.order = append(s.mu.order, id)
	data, ok := s.mu.objects[key]
	s.mu.Unlock()
	if s.gate != nil {
		select {
		case <-s.gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if s.latency > 0 {
		select {
		case <-time.After(s.latency):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if !ok {
		return nil, fmt.Errorf("get %s: %w", key, objectstore.ErrNotFound)
	}
	if offset > int64(len(data)) {
		return nil, fmt.Errorf("get %s at %d: beyond end", key, offset)
	}
	end := int64(len(data))
	if length >= 0 && offset+length < end {
		end = offset + length
	}
	return append([]byte(nil), data[offset:end]...), nil
}

// getsAt is how many GETs of key at offset were issued.
func (s *fakeStore) getsAt(key string, offset int64) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.gets[fmt.Sprintf("%s@%d", key, offset)]
}

// newTestCache returns a cache over store, closed at test end, after a check
// of its invariants.
func newTestCache(t testing.TB, store Getter, opts Options) *Cache {
	t.Helper()
	opts.Logger = testkit.Logger()
	c, err := New(store, opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		if err := c.checkInvariants(); err != nil {
			t.Errorf("invariants at end: %v", err)
		}
		c.Close()
	})
	return c
}

// checkInvariants walks the queues and checks that they agree with the
// entry map and the byte bound.
func (c *Cache) checkInvariants() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var n int
	var unread int64
	for _, e := range c.mu.entries {
		if e.unread.Load() {
			unread += e.size()
		}
	}
	if unread != c.unreadBytes.Load() {
		return fmt.Errorf("unread read-ahead chunks hold %d bytes, counted %d", unread, c.unreadBytes.Load())
	}
	for _, q := range []struct {
		name string
		f    *fifo
		id   uint8
	}{{"small", &c.mu.small, inSmall}, {"main", &c.mu.main, inMain}} {
		var bytes int64
		var count int
		var prev *entry
		for e := q.f.head; e != nil; e = e.next {
			if e.prev != prev {
				return fmt.Errorf("%s: broken back link at %v", q.name, e.key)
			}
			if e.queue != q.id {
				return fmt.Errorf("%s: entry %v says queue %d", q.name, e.key, e.queue)
			}
			if c.mu.entries[e.key] != e {
				return fmt.Errorf("%s: entry %v not in map", q.name, e.key)
			}
			bytes += e.size()
			count++
			prev = e
		}
		if q.f.tail != prev || bytes != q.f.bytes || count != q.f.n {
			return fmt.Errorf("%s: counted %d chunks/%d bytes, queue says %d/%d", q.name, count, bytes, q.f.n, q.f.bytes)
		}
		n += count
	}
	if n != len(c.mu.entries) {
		return fmt.Errorf("%d chunks queued, %d in map", n, len(c.mu.entries))
	}
	var reserved int64
	for _, f := range c.mu.flights {
		if f.reserved {
			reserved += f.size
		}
	}
	if reserved != c.mu.reserved {
		return fmt.Errorf("flights reserve %d bytes, counter says %d", reserved, c.mu.reserved)
	}
	if r := c.residentLocked() + c.mu.reserved; r > c.opts.MaxBytes {
		return fmt.Errorf("resident+reserved %d > max %d", r, c.opts.MaxBytes)
	}
	return nil
}
