package kvindex

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/floe-io/floe/internal/ghost"
)

// DefaultBatchCacheBytes is the size of the batch cache a handler makes for itself when
// HandlerOptions.BatchCache is nil: 64 MiB.
const DefaultBatchCacheBytes = 64 << 20

// BatchCache is a byte-bounded cache of decoded batches, shared by the lookups of one
// handler (or of several), so that a lookup whose record sits in a batch read before
// neither reads nor decompresses it again. A compressed batch is kept decoded (its
// keys and values, about its uncompressed size); an uncompressed one as the positions
// of its records (4 bytes a record), so that a lookup reads only its record's bytes
// from the Service (the broker's chunk cache, which holds the batch anyway). Entries
// are keyed by object key and byte offset: committed batches never change, so an
// entry never goes stale and needs no invalidation.
//
// Eviction is S3-FIFO, as in the broker's chunk cache (package cache): a new batch
// enters a small FIFO (10% of the bytes) and moves to the main FIFO only if looked up
// again before it leaves; the main FIFO gives each batch looked up since its last pass
// another round (CLOCK). A scan of cold keys, each looked up once, so leaves through
// the small queue without pushing out the batches of hot keys. A hit only bumps a
// counter under a read lock. Concurrent misses on one batch share one read and decode.
//
// A BatchCache is safe for concurrent use.
type BatchCache struct {
	maxBytes    int64
	smallTarget int64
	maxEntry    int64 // larger batches are served once and not kept

	mu struct {
		sync.RWMutex
		entries     map[batchKey]*cacheEntry
		small, main entryFIFO
		ghost       *ghost.Keys[batchKey]
		flights     map[batchKey]*flight
	}
	hits, misses, loads, evictions atomic.Int64
}

// BatchCacheStats are a BatchCache's counters since it was made, and what it holds.
type BatchCacheStats struct {
	// Hits and Misses count lookups whose batch was found and not found.
	Hits, Misses int64
	// Loads counts batches read and decoded: at most one per miss, fewer when
	// concurrent misses on a batch share its load.
	Loads int64
	// Evictions counts batches dropped to make room.
	Evictions int64
	// Bytes and Batches are what the cache holds now; Bytes never exceeds MaxBytes.
	Bytes   int64
	Batches int
	// MaxBytes is the bound on Bytes.
	MaxBytes int64
}

// NewBatchCache returns a cache of at most maxBytes of decoded batches; maxBytes <= 0
// caches nothing (every lookup of a compressed batch reads and decodes it, one of an
// uncompressed batch reads it and skips to its record). A batch larger than a quarter
// of maxBytes is served without being kept.
func NewBatchCache(maxBytes int64) *BatchCache {
	c := &BatchCache{maxBytes: max(maxBytes, 0)}
	c.smallTarget = c.maxBytes / 10
	c.maxEntry = c.maxBytes / 4
	c.mu.entries = make(map[batchKey]*cacheEntry)
	c.mu.flights = make(map[batchKey]*flight)
	c.mu.ghost = ghost.New[batchKey](4096)
	return c
}

// Stats returns the cache's counters and size.
func (c *BatchCache) Stats() BatchCacheStats {
	c.mu.RLock()
	bytes, n := c.mu.small.bytes+c.mu.main.bytes, len(c.mu.entries)
	c.mu.RUnlock()
	return BatchCacheStats{Hits: c.hits.Load(), Misses: c.misses.Load(), Loads: c.loads.Load(),
		Evictions: c.evictions.Load(), Bytes: bytes, Batches: n, MaxBytes: c.maxBytes}
}

// batchKey names a committed batch: its object and where it starts in it.
type batchKey struct {
	object string
	offset int64
}

// maxFreq caps an entry's lookup counter (two bits, as in S3-FIFO).
const maxFreq = 3

// cacheEntry is one resident batch. Its links are guarded by mu (write); freq
// is bumped by readers under the read lock.
type cacheEntry struct {
	key        batchKey
	batch      *decodedBatch
	size       int64
	freq       atomic.Int32
	prev, next *cacheEntry
}

// entryFIFO is an intrusive doubly linked FIFO: push at the head, evict at the tail.
type entryFIFO struct {
	head, tail *cacheEntry
	bytes      int64
	n          int
}

func (q *entryFIFO) pushHead(e *cacheEntry) {
	e.prev, e.next = nil, q.head
	if q.head != nil {
		q.head.prev = e
	} else {
		q.tail = e
	}
	q.head = e
	q.bytes += e.size
	q.n++
}

func (q *entryFIFO) remove(e *cacheEntry) {
	if e.prev != nil {
		e.prev.next = e.next
	} else {
		q.head = e.next
	}
	if e.next != nil {
		e.next.prev = e.prev
	} else {
		q.tail = e.prev
	}
	e.prev, e.next = nil, nil
	q.bytes -= e.size
	q.n--
}

// flight is one batch load shared by the lookups that miss on it meanwhile.
type flight struct {
	done  chan struct{} // closed once batch and err are set
	batch *decodedBatch
	err   error
}

// get returns the cached batch at k, or nil (the caller then reads the batch and
// loads it, unless it cannot be cached: the miss is counted there).
func (c *BatchCache) get(k batchKey) *decodedBatch {
	c.mu.RLock()
	e := c.mu.entries[k]
	if e != nil {
		if f := e.freq.Load(); f < maxFreq {
			e.freq.CompareAndSwap(f, f+1) // lossy under contention: fine for a heuristic
		}
	}
	c.mu.RUnlock()
	if e == nil {
		return nil
	}
	c.hits.Add(1)
	return e.batch
}

// load returns the batch at k, calling fn to read and decode it unless it is cached or
// another lookup's load of it is under way (then it waits for that one). When the
// load it waited for failed (perhaps its request's context ended), the waiters try
// once more, again sharing one load. A batch fn returns is kept if it fits.
func (c *BatchCache) load(ctx context.Context, k batchKey, fn func() (*decodedBatch, error)) (*decodedBatch, error) {
	c.misses.Add(1)
	return c.loadShared(ctx, k, fn, true)
}

// loadShared is load; retry says whether a failed load it waited for is tried again.
func (c *BatchCache) loadShared(ctx context.Context, k batchKey, fn func() (*decodedBatch, error), retry bool) (*decodedBatch, error) {
	c.mu.Lock()
	if e := c.mu.entries[k]; e != nil {
		c.mu.Unlock()
		return e.batch, nil
	}
	if f := c.mu.flights[k]; f != nil {
		c.mu.Unlock()
		select {
		case <-f.done:
			if f.err == nil || !retry {
				return f.batch, f.err
			}
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return c.loadShared(ctx, k, fn, false)
	}
	f := &flight{done: make(chan struct{})}
	c.mu.flights[k] = f
	c.mu.Unlock()

	c.loads.Add(1)
	b, err := fn()
	c.mu.Lock()
	delete(c.mu.flights, k)
	if err == nil {
		c.insertLocked(k, b)
	}
	c.mu.Unlock()
	f.batch, f.err = b, err
	close(f.done)
	return b, err
}

// insertLocked keeps b at k if it fits, evicting as needed: in main if k is a ghost,
// else in small. c.mu must be held (write).
func (c *BatchCache) insertLocked(k batchKey, b *decodedBatch) {
	size := b.size()
	if size > c.maxEntry || c.mu.entries[k] != nil {
		return
	}
	for c.mu.small.bytes+c.mu.main.bytes+size > c.maxBytes {
		if !c.evictOneLocked() {
			return
		}
	}
	e := &cacheEntry{key: k, batch: b, size: size}
	c.mu.entries[k] = e
	if c.mu.ghost.Take(k) {
		c.mu.main.pushHead(e)
	} else {
		c.mu.small.pushHead(e)
	}
}

// evictOneLocked frees one batch following S3-FIFO: from small while it holds more
// than its share (or main is empty), else from main. It reports false when nothing is
// resident. c.mu must be held (write).
func (c *BatchCache) evictOneLocked() bool {
	for c.mu.small.n > 0 || c.mu.main.n > 0 {
		if c.mu.small.n > 0 && (c.mu.small.bytes >= c.smallTarget || c.mu.main.n == 0) {
			e := c.mu.small.tail
			c.mu.small.remove(e)
			if e.freq.Load() > 0 { // looked up again: promote
				e.freq.Store(0)
				c.mu.main.pushHead(e)
				continue
			}
			c.mu.ghost.Add(e.key)
			c.dropLocked(e)
			return true
		}
		e := c.mu.main.tail
		c.mu.main.remove(e)
		if f := e.freq.Load(); f > 0 { // another round
			e.freq.Store(f - 1)
			c.mu.main.pushHead(e)
			continue
		}
		c.dropLocked(e)
		return true
	}
	return false
}

// dropLocked forgets an entry already unlinked from its queue. c.mu must be held.
func (c *BatchCache) dropLocked(e *cacheEntry) {
	delete(c.mu.entries, e.key)
	c.evictions.Add(1)
}
