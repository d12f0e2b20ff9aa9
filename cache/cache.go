package cache

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/floe-io/floe/internal/ghost"
)

// Sentinel errors, checked with errors.Is.
var (
	// ErrOutOfRange is returned by GetRange for an offset outside the object.
	ErrOutOfRange = errors.New("cache: offset out of range")
	// ErrShortRead means the store or a cached chunk holds fewer bytes than
	// the objectSize given by the caller implies.
	ErrShortRead = errors.New("cache: short read")
	// ErrClosed is returned by GetRange after Close.
	ErrClosed = errors.New("cache: closed")
)

// seqWindow is how recently chunk i-1 must have been read for a read of
// chunk i to count as sequential and trigger read-ahead.
const seqWindow = 10 * time.Second

// clockTick is the resolution of the cache's coarse clock, far finer than
// seqWindow.
const clockTick = 50 * time.Millisecond

// Getter is what the cache needs from object storage: ranged reads.
// objectstore.Store satisfies it.
type Getter interface {
	// GetRange reads length bytes of key starting at offset.
	GetRange(ctx context.Context, key string, offset, length int64) ([]byte, error)
}

// Cache is a byte-bounded cache of aligned object chunks. It is safe for
// concurrent use. See the package documentation for layout and policy.
type Cache struct {
	store       Getter
	opts        Options
	smallTarget int64        // bytes the small queue may hold before it is evicted first
	unreadBytes atomic.Int64 // resident read-ahead chunks no reader has touched (entry.unread)
	epoch       time.Time
	// clock is a coarse monotonic clock (ns since epoch) advanced every
	// clockTick: the hit path reads it instead of calling time.Now, which
	// on some VMs costs more than the rest of a hit.
	clock atomic.Int64
	disk  *diskTier // nil when memory only

	readAheadSem chan struct{} // one token per read-ahead load in flight
	closeCtx     context.Context
	closeCancel  context.CancelFunc
	wg           sync.WaitGroup // loads and the disk writer; Add only under mu while open
	stats        counters

	mu struct {
		sync.RWMutex
		closed   bool
		entries  map[chunkKey]*entry
		flights  map[chunkKey]*flight
		small    fifo
		main     fifo
		ghost    *ghost.Keys[chunkKey]
		reserved int64 // bytes reserved by flights for their chunks
	}
}

// New returns a cache in front of store. With opts.Dir set it prepares the
// disk tier, removing chunk files a previous process left there. Call Close
// to stop its background goroutines.
func New(store Getter, opts Options) (*Cache, error) {
	if store == nil {
		return nil, errors.New("cache: nil store")
	}
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	c := &Cache{
		store:       store,
		opts:        opts,
		smallTarget: max(opts.MaxBytes/10, 1),
		epoch:       time.Now(),
	}
	c.readAheadSem = make(chan struct{}, max(opts.ReadAheadConcurrency, 1))
	c.closeCtx, c.closeCancel = context.WithCancel(context.Background())
	c.mu.entries = make(map[chunkKey]*entry)
	c.mu.flights = make(map[chunkKey]*flight)
	c.mu.ghost = ghost.New[chunkKey](int((opts.MaxBytes - c.smallTarget) / opts.ChunkBytes))
	if opts.Dir != "" {
		d, err := newDiskTier(opts.Dir, opts.DiskBytes, opts.Logger, &c.stats)
		if err != nil {
			c.closeCancel()
			return nil, err
		}
		c.disk = d
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			d.run(c.closeCtx)
		}()
	}
	c.wg.Add(1)
	go c.runClock()
	return c, nil
}

// now is the coarse clock: nanoseconds since the cache was created, to
// within clockTick.
func (c *Cache) now() int64 { return c.clock.Load() }

// runClock advances the coarse clock until the cache closes.
func (c *Cache) runClock() {
	defer c.wg.Done()
	t := time.NewTicker(clockTick)
	defer t.Stop()
	for {
		select {
		case <-c.closeCtx.Done():
			return
		case <-t.C:
			c.clock.Store(int64(time.Since(c.epoch)))
		}
	}
}

// chunkCount is how many chunks an object of objectSize bytes is cut
// into: aligned ChunkBytes chunks, the last of which absorbs a tail of at
// most ChunkBytes/8 (tailFraction). A segment object ends in its indexes,
// a few KiB past its last full chunk; a GET of its own for them would
// cost more than their bytes.
func (c *Cache) chunkCount(objectSize int64) int64 {
	cb := c.opts.ChunkBytes
	n := (objectSize + cb - 1) / cb
	if tail := objectSize % cb; n > 1 && tail != 0 && tail <= cb/tailFraction {
		n--
	}
	return n
}

// tailFraction: a last chunk's tail of at most ChunkBytes/tailFraction
// joins the chunk before it.
const tailFraction = 8

// chunkOf is the chunk holding byte offset of an object of objectSize
// bytes.
func (c *Cache) chunkOf(objectSize, offset int64) int64 {
	return min(offset/c.opts.ChunkBytes, max(c.chunkCount(objectSize)-1, 0))
}

// chunkLen is the length of chunk idx of an object of objectSize bytes.
func (c *Cache) chunkLen(objectSize, idx int64) int64 {
	if idx == c.chunkCount(objectSize)-1 {
		return objectSize - idx*c.opts.ChunkBytes
	}
	return c.opts.ChunkBytes
}

// GetRange returns length bytes of key at offset, assembled from cached
// chunks; each missing chunk is loaded with one ranged GET (shared with
// concurrent readers of the same chunk). objectSize is the object's size, so
// chunk bounds are known without a HEAD. A length < 0, or one running past
// the end, reads to the end of the object; an offset beyond objectSize is
// ErrOutOfRange.
//
// The returned bytes are shared with the cache and with other readers:
// callers must not modify them. A range within one chunk is returned without
// copying; a range spanning chunks is copied into one new buffer.
func (c *Cache) GetRange(ctx context.Context, key string, objectSize, offset, length int64) ([]byte, error) {
	if offset < 0 || objectSize < 0 || offset > objectSize {
		return nil, fmt.Errorf("cache: read %s at %d of %d bytes: %w", key, offset, objectSize, ErrOutOfRange)
	}
	if length < 0 || length > objectSize-offset {
		length = objectSize - offset
	}
	if length == 0 {
		return []byte{}, nil
	}
	cb := c.opts.ChunkBytes
	first, last := c.chunkOf(objectSize, offset), c.chunkOf(objectSize, offset+length-1)
	now := c.now()

	if first == last {
		lo := offset - first*cb
		hi := lo + length
		data, f, err := c.acquire(ctx, key, objectSize, first, lo, hi, now)
		if f != nil {
			data, err = f.wait(ctx)
		}
		if err != nil {
			return nil, err
		}
		if err := checkLen(key, first, data, hi); err != nil {
			return nil, err
		}
		return data[lo:hi:hi], nil
	}

	out := make([]byte, length)
	type pending struct {
		f      *flight
		idx    int64
		lo, hi int64
		dst    []byte
	}
	var waits []pending
	for idx := first; idx <= last; idx++ {
		base := idx * cb
		lo := max(offset, base) - base
		hi := min(offset+length, base+c.chunkLen(objectSize, idx)) - base
		dst := out[base+lo-offset : base+hi-offset]
		data, f, err := c.acquire(ctx, key, objectSize, idx, lo, hi, now)
		if err != nil {
			return nil, err
		}
		if f != nil {
			waits = append(waits, pending{f: f, idx: idx, lo: lo, hi: hi, dst: dst})
			continue
		}
		if err := checkLen(key, idx, data, hi); err != nil {
			return nil, err
		}
		copy(dst, data[lo:hi])
	}
	for _, w := range waits {
		data, err := w.f.wait(ctx)
		if err != nil {
			return nil, err
		}
		if err := checkLen(key, w.idx, data, w.hi); err != nil {
			return nil, err
		}
		copy(w.dst, data[w.lo:w.hi])
	}
	return out, nil
}

// checkLen guards against callers disagreeing on an object's size: a chunk
// cached under a smaller objectSize is too short for this read.
func checkLen(key string, idx int64, data []byte, hi int64) error {
	if int64(len(data)) < hi {
		return fmt.Errorf("cache: %s chunk %d holds %d bytes, read needs %d: %w", key, idx, len(data), hi, ErrShortRead)
	}
	return nil
}

// acquire serves a read of [lo, hi) of chunk idx: the chunk's data on a hit,
// otherwise the flight loading it (started or joined). It also decides on
// read-ahead.
func (c *Cache) acquire(ctx context.Context, key string, objectSize, idx, lo, hi, now int64) ([]byte, *flight, error) {
	k := chunkKey{key: key, idx: idx}
	c.mu.RLock()
	if e := c.mu.entries[k]; e != nil {
		crossed := e.touch(lo, hi, now)
		data := e.data
		c.mu.RUnlock()
		c.stats.hits.Add(1)
		if crossed && c.opts.ReadAhead > 0 {
			c.mu.Lock()
			if !c.mu.closed && c.recentLocked(key, idx-1, now) {
				c.readAheadLocked(ctx, key, objectSize, idx)
			}
			c.mu.Unlock()
		}
		return data, nil, nil
	}
	c.mu.RUnlock()

	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.closed {
		return nil, nil, ErrClosed
	}
	if e := c.mu.entries[k]; e != nil { // loaded while we switched locks
		e.touch(lo, hi, now)
		c.stats.hits.Add(1)
		return e.data, nil, nil
	}
	c.stats.misses.Add(1)
	f := c.mu.flights[k]
	trigger := f == nil
	if f == nil {
		f = c.startLocked(ctx, k, c.chunkLen(objectSize, idx), true, hi)
	} else {
		// Joining: crossing the midpoint counts as for a hit, so a reader
		// that catches up with its own read-ahead keeps reading ahead.
		mid := f.size / 2
		trigger = f.high < mid && hi >= mid
		f.high = max(f.high, hi)
	}
	if trigger && c.opts.ReadAhead > 0 && c.recentLocked(key, idx-1, now) {
		c.readAheadLocked(ctx, key, objectSize, idx)
	}
	return nil, f, nil
}

// recentLocked reports whether chunk idx of key is being loaded or was read
// within seqWindow: evidence that a reader is moving forward through the
// object. c.mu must be held.
func (c *Cache) recentLocked(key string, idx, now int64) bool {
	if idx < 0 {
		return false
	}
	k := chunkKey{key: key, idx: idx}
	if e := c.mu.entries[k]; e != nil && now-e.lastAccess.Load() < int64(seqWindow) {
		return true
	}
	return c.mu.flights[k] != nil
}

// readAheadLocked starts loads of up to ReadAhead chunks after idx that
// exist, are not resident and are not loading, while read-ahead slots are
// free. c.mu must be held (write) and the cache open.
func (c *Cache) readAheadLocked(ctx context.Context, key string, objectSize, idx int64) {
	for j := idx + 1; j <= idx+int64(c.opts.ReadAhead) && j < c.chunkCount(objectSize); j++ {
		k := chunkKey{key: key, idx: j}
		if c.mu.entries[k] != nil || c.mu.flights[k] != nil {
			continue
		}
		select {
		case c.readAheadSem <- struct{}{}:
		default:
			return // enough read-ahead in flight
		}
		if c.startLocked(ctx, k, c.chunkLen(objectSize, j), false, 0) == nil {
			<-c.readAheadSem
			return // no room without bypassing: skip
		}
		c.stats.readAheads.Add(1)
	}
}

// Put writes a freshly uploaded object through to the cache, so readers
// that follow the tail of the log never GET it. It copies data: the caller
// may reuse its buffer. Chunks already resident or loading are left alone;
// chunks that cannot fit (everything else is reserved by loads) are skipped.
func (c *Cache) Put(key string, data []byte) {
	cb := c.opts.ChunkBytes
	size := int64(len(data))
	for idx := int64(0); idx < c.chunkCount(size); idx++ {
		k := chunkKey{key: key, idx: idx}
		c.mu.RLock()
		skip := c.mu.closed || c.mu.entries[k] != nil || c.mu.flights[k] != nil
		c.mu.RUnlock()
		if skip {
			continue
		}
		e := &entry{key: k, data: bytes.Clone(data[idx*cb : idx*cb+c.chunkLen(size, idx)])} // copy outside the lock
		// A freshly written chunk is what tailing consumers read next, each
		// byte once (so reads never earn it credit): give it one credit, so
		// it moves on to main instead of leaving when small fills, and a
		// consumer lagging by more than small's share still hits.
		e.freq.Store(1)
		c.mu.Lock()
		if c.mu.closed {
			c.mu.Unlock()
			return
		}
		if c.mu.entries[k] == nil && c.mu.flights[k] == nil && c.makeRoomLocked(e.size()) {
			e.lastAccess.Store(c.now())
			c.insertLocked(e)
			c.stats.puts.Add(1)
		}
		c.mu.Unlock()
	}
}

// Close stops loads in flight, waits for background work, and drops every
// resident chunk. GetRange afterwards returns ErrClosed; Put does nothing.
// The disk tier's files stay until the next New with the same Dir.
func (c *Cache) Close() error {
	c.mu.Lock()
	if c.mu.closed {
		c.mu.Unlock()
		return nil
	}
	c.mu.closed = true
	c.mu.entries = make(map[chunkKey]*entry)
	c.mu.small, c.mu.main = fifo{}, fifo{}
	c.mu.Unlock()
	c.closeCancel()
	c.wg.Wait()
	return nil
}
