package cache

import (
	"context"
	"fmt"
	"time"
)

// flight is one chunk load in progress, shared by every reader that misses
// on the chunk while it runs: however many wait, the chunk costs one load.
type flight struct {
	done chan struct{} // closed when data/err are set
	data []byte
	err  error

	size     int64 // expected chunk length; set before the load starts
	reserved bool  // size bytes are reserved in Cache.mu.reserved; set before the load starts
	high     int64 // highest chunk-relative byte end asked for by its readers; guarded by Cache.mu
}

// wait returns the flight's result, or ctx's error if ctx ends first. A
// waiter giving up does not affect the load.
func (f *flight) wait(ctx context.Context) ([]byte, error) {
	select {
	case <-f.done:
		return f.data, f.err
	case <-ctx.Done():
		select {
		case <-f.done: // both ready: prefer the data
			return f.data, f.err
		default:
		}
		return nil, ctx.Err()
	}
}

// startLocked begins loading chunk k of length size in a new goroutine and
// registers the flight so later misses join it. parent supplies values (trace
// spans) but not cancellation: the load runs under its own LoadTimeout and
// stops early only when the cache closes. A demand load that cannot reserve
// its bytes still runs, uncached; a read-ahead (demand false) is not started
// and nil is returned. c.mu must be held (write) and the cache open.
func (c *Cache) startLocked(parent context.Context, k chunkKey, size int64, demand bool, high int64) *flight {
	f := &flight{done: make(chan struct{}), size: size, high: high}
	f.reserved = c.reserveLocked(size)
	if !f.reserved {
		if !demand {
			return nil
		}
		c.stats.bypasses.Add(1)
	}
	c.mu.flights[k] = f
	c.wg.Add(1)
	go c.load(parent, k, f, !demand)
	return f
}

// load runs one flight: disk tier first, then one ranged GET. On success the
// chunk becomes resident (if its bytes were reserved) before the waiters are
// released, so a reader woken by done finds it in the cache.
func (c *Cache) load(parent context.Context, k chunkKey, f *flight, readAhead bool) {
	defer c.wg.Done()
	if readAhead {
		defer func() { <-c.readAheadSem }()
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(parent), c.opts.LoadTimeout)
	stop := context.AfterFunc(c.closeCtx, cancel)
	data, err := c.fetch(ctx, k, f.size, readAhead)
	stop()
	cancel()

	f.data, f.err = data, err
	c.mu.Lock()
	delete(c.mu.flights, k)
	if f.reserved {
		c.mu.reserved -= f.size
		if err == nil && !c.mu.closed {
			e := &entry{key: k, data: data, unreadBytes: &c.unreadBytes}
			e.readHigh.Store(f.high)
			e.lastAccess.Store(c.now())
			if readAhead && f.high == 0 {
				e.unread.Store(true)
				c.unreadBytes.Add(e.size())
			}
			c.insertLocked(e)
		}
	}
	c.mu.Unlock()
	close(f.done)
	if err != nil {
		c.opts.Logger.Debug("cache: chunk load failed", "key", k.key, "chunk", k.idx, "err", err)
	}
}

// fetch reads chunk k (size bytes) from the disk tier or the store.
func (c *Cache) fetch(ctx context.Context, k chunkKey, size int64, readAhead bool) ([]byte, error) {
	if c.disk != nil {
		start := time.Now()
		if data, ok := c.disk.read(k, size); ok {
			c.stats.diskHits.Add(1)
			c.observe(LoadEvent{Source: SourceDisk, Bytes: size, Duration: time.Since(start), ReadAhead: readAhead})
			return data, nil
		}
	}
	start := time.Now()
	c.stats.gets.Add(1)
	data, err := c.store.GetRange(ctx, k.key, k.idx*c.opts.ChunkBytes, size)
	switch {
	case err != nil:
		err = fmt.Errorf("cache: get %s chunk %d: %w", k.key, k.idx, err)
	case int64(len(data)) < size:
		err = fmt.Errorf("cache: get %s chunk %d: %w: got %d bytes, want %d", k.key, k.idx, ErrShortRead, len(data), size)
	}
	if err != nil {
		c.stats.getErrors.Add(1)
		c.observe(LoadEvent{Source: SourceStore, Duration: time.Since(start), ReadAhead: readAhead, Err: err})
		return nil, err
	}
	data = data[:size]
	if int64(cap(data)) > size+size/8 {
		// The store over-allocated (e.g. a growing read buffer): keep an
		// exact copy so resident bytes are real bytes.
		data = append([]byte(nil), data...)
	}
	c.stats.bytesLoaded.Add(size)
	c.observe(LoadEvent{Source: SourceStore, Bytes: size, Duration: time.Since(start), ReadAhead: readAhead})
	return data, nil
}

func (c *Cache) observe(ev LoadEvent) {
	if c.opts.Observer != nil {
		c.opts.Observer.ObserveLoad(ev)
	}
}
