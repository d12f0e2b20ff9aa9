package cache

import "sync/atomic"

// maxFreq caps an entry's re-read counter (two bits, as in S3-FIFO).
const maxFreq = 3

// Queue an entry is in.
const (
	inNone uint8 = iota
	inSmall
	inMain
)

// chunkKey names chunk idx of object key.
type chunkKey struct {
	key string
	idx int64
}

// entry is one resident chunk. Its list links and queue are guarded by
// Cache.mu (write lock); the atomics are updated by readers under the read
// lock.
type entry struct {
	key  chunkKey
	data []byte // never modified once the entry is published

	freq       atomic.Int32 // re-reads since insertion or last main pass, capped at maxFreq
	readHigh   atomic.Int64 // highest chunk-relative byte end served so far
	lastAccess atomic.Int64 // Cache.now() of the last access
	// unread marks a read-ahead chunk no reader has read to its end yet;
	// its bytes count in *unreadBytes (the cache's) until one has, or
	// until it is evicted.
	unread      atomic.Bool
	unreadBytes *atomic.Int64

	queue      uint8
	prev, next *entry
}

// size is the number of bytes of the chunk.
func (e *entry) size() int64 { return int64(len(e.data)) }

// touch records a read of [lo, hi) of the chunk at time now. A read that
// starts below the highest byte served before re-reads data and counts as
// reuse; forward progress does not. It reports whether this read carried the
// read mark across the chunk's midpoint, the read-ahead trigger.
func (e *entry) touch(lo, hi, now int64) (crossedMid bool) {
	old := e.readHigh.Load()
	if lo < old {
		if f := e.freq.Load(); f < maxFreq {
			e.freq.CompareAndSwap(f, f+1) // lossy under contention; fine for a heuristic
		}
	}
	for cur := old; hi > cur; cur = e.readHigh.Load() {
		if e.readHigh.CompareAndSwap(cur, hi) {
			break
		}
	}
	e.lastAccess.Store(now)
	if hi >= e.size() {
		e.markRead() // read to its end: a sequential reader is done with it
	}
	mid := e.size() / 2
	return old < mid && hi >= mid
}

// markRead ends an unread read-ahead chunk's protection (see
// evictOneLocked).
func (e *entry) markRead() {
	if e.unread.Load() && e.unread.CompareAndSwap(true, false) {
		e.unreadBytes.Add(-e.size())
	}
}

// fifo is an intrusive doubly linked FIFO of entries: push at head, pop at
// tail. It tracks the bytes it holds.
type fifo struct {
	head, tail *entry
	bytes      int64
	n          int
}

func (q *fifo) pushHead(e *entry) {
	e.prev, e.next = nil, q.head
	if q.head != nil {
		q.head.prev = e
	} else {
		q.tail = e
	}
	q.head = e
	q.bytes += e.size()
	q.n++
}

func (q *fifo) remove(e *entry) {
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
	q.bytes -= e.size()
	q.n--
}

// insertLocked makes e resident: in main if its key is a ghost, else in
// small. The caller has already made room. c.mu must be held (write).
func (c *Cache) insertLocked(e *entry) {
	c.mu.entries[e.key] = e
	if c.mu.ghost.Take(e.key) {
		e.markRead() // protection is for small only
		e.queue = inMain
		c.mu.main.pushHead(e)
	} else {
		e.queue = inSmall
		c.mu.small.pushHead(e)
	}
}

// residentLocked is the number of bytes held by resident chunks.
// c.mu must be held.
func (c *Cache) residentLocked() int64 { return c.mu.small.bytes + c.mu.main.bytes }

// reserveLocked evicts until n more bytes fit under MaxBytes and reserves
// them for a load. It reports false, reserving nothing, when they cannot fit
// because the rest is reserved by other loads. c.mu must be held (write).
func (c *Cache) reserveLocked(n int64) bool {
	if !c.makeRoomLocked(n) {
		return false
	}
	c.mu.reserved += n
	return true
}

// makeRoomLocked evicts until n more bytes fit under MaxBytes. c.mu must be
// held (write).
func (c *Cache) makeRoomLocked(n int64) bool {
	for c.residentLocked()+c.mu.reserved+n > c.opts.MaxBytes {
		if !c.evictOneLocked() {
			return false
		}
	}
	return true
}

// evictOneLocked frees one chunk following S3-FIFO: from small while it
// holds more than its share (or main is empty), else from main. It reports
// false when nothing is resident. c.mu must be held (write).
//
// Small's share is its tenth of the cache plus the read-ahead chunks no
// reader has read to their end yet (up to half the cache), and
// evictSmallLocked passes over those while it can. Without them, a cache
// whose main queue held anything kept small at a tenth, and the chunks
// read ahead for several sequential readers (four each on S3) were
// evicted before their readers came, to be read again: eight partitions
// caught up from segments on the s3-standard profile through a 512 MiB
// cache cost 418 GETs per GiB instead of 256 (BenchmarkTieredCatchUp).
func (c *Cache) evictOneLocked() bool {
	target := c.smallTarget + min(c.unreadBytes.Load(), c.opts.MaxBytes/2)
	for c.mu.small.n > 0 || c.mu.main.n > 0 {
		if c.mu.small.n > 0 && (c.mu.small.bytes >= target || c.mu.main.n == 0) {
			if c.evictSmallLocked() {
				return true
			}
			continue
		}
		if c.evictMainLocked() {
			return true
		}
	}
	return false
}

// evictSmallLocked looks at the tail of small: a read-ahead chunk not read
// yet goes back to the head while small holds others, a re-read chunk moves
// to main (reporting false: nothing freed yet), a chunk never re-read is
// evicted and its key remembered in the ghost queue.
func (c *Cache) evictSmallLocked() bool {
	e := c.mu.small.tail
	c.mu.small.remove(e)
	if e.freq.Load() > 0 {
		e.markRead() // protection is for small only
		e.queue = inMain
		c.mu.main.pushHead(e)
		return false
	}
	if e.unread.Load() && c.mu.small.bytes >= c.unreadBytes.Load() {
		// Read ahead and not reached yet, while small holds chunks that
		// were read: those go first (loads finish out of order, so the
		// oldest chunk is not always the one read first).
		c.mu.small.pushHead(e)
		return false
	}
	c.mu.ghost.Add(e.key)
	c.dropLocked(e)
	return true
}

// evictMainLocked looks at the tail of main: a chunk re-read since its last
// pass goes back to the head with one less credit (CLOCK-like), otherwise it
// is evicted. It reports whether a chunk was freed.
func (c *Cache) evictMainLocked() bool {
	e := c.mu.main.tail
	c.mu.main.remove(e)
	if f := e.freq.Load(); f > 0 {
		e.freq.Store(f - 1)
		c.mu.main.pushHead(e)
		return false
	}
	c.dropLocked(e)
	return true
}

// dropLocked forgets an entry already unlinked from its queue and hands its
// data to the disk tier.
func (c *Cache) dropLocked(e *entry) {
	e.markRead()
	e.queue = inNone
	delete(c.mu.entries, e.key)
	c.stats.evictions.Add(1)
	if c.disk != nil {
		c.disk.offer(e.key, e.data)
	}
}
