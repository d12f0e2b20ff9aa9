package cache

import (
	"context"
	"errors"
	"fmt"
)

// ErrNotChunk is returned by GetChunk for a range that is not one whole
// aligned chunk, or not the length of the chunk the cache holds or is
// loading at that offset.
var ErrNotChunk = errors.New("cache: not a whole aligned chunk")

// ChunkBytes returns the cache's chunk size (Options.ChunkBytes after
// defaults): chunk i of an object starts at i*ChunkBytes.
func (c *Cache) ChunkBytes() int64 { return c.opts.ChunkBytes }

// MaxChunkLen returns the longest chunk a cache of chunkBytes chunks loads:
// chunkBytes, plus the tail of at most chunkBytes/8 an object's last chunk
// absorbs. A peer serving chunks (package zone) refuses longer ones.
func MaxChunkLen(chunkBytes int64) int64 {
	return chunkBytes + chunkBytes/tailFraction
}

// GetChunk returns chunk offset/ChunkBytes of key, the length bytes at
// offset, through the cache: from memory on a hit, else by joining the load
// in flight or starting one (as GetRange does for a miss, with length as the
// chunk's size), so that the chunk stays resident for the next reader. It is
// how a broker serves the chunks it owns to the other brokers of its zone
// (package zone): they ask for whole chunks, sized by their own cache from
// the object's size, which GetChunk does not know. For the same reason it
// starts no read-ahead.
//
// offset must be a multiple of ChunkBytes and length in
// (0, MaxChunkLen(ChunkBytes)];
// a chunk already resident or loading with another length is a caller's
// mistake (another chunk size, another object size): both are ErrNotChunk.
// The returned bytes are shared with the cache: callers must not modify
// them.
func (c *Cache) GetChunk(ctx context.Context, key string, offset, length int64) ([]byte, error) {
	cb := c.opts.ChunkBytes
	if offset < 0 || offset%cb != 0 || length <= 0 || length > MaxChunkLen(cb) {
		return nil, fmt.Errorf("cache: chunk of %s at %d, %d bytes (chunk size %d): %w", key, offset, length, cb, ErrNotChunk)
	}
	k := chunkKey{key: key, idx: offset / cb}
	now := c.now()
	c.mu.RLock()
	if e := c.mu.entries[k]; e != nil {
		e.touch(0, length, now)
		data := e.data
		c.mu.RUnlock()
		c.stats.hits.Add(1)
		return chunkOfLen(k, data, length)
	}
	c.mu.RUnlock()

	c.mu.Lock()
	if c.mu.closed {
		c.mu.Unlock()
		return nil, ErrClosed
	}
	if e := c.mu.entries[k]; e != nil { // loaded while we switched locks
		e.touch(0, length, now)
		data := e.data
		c.mu.Unlock()
		c.stats.hits.Add(1)
		return chunkOfLen(k, data, length)
	}
	c.stats.misses.Add(1)
	f := c.mu.flights[k]
	switch {
	case f == nil:
		f = c.startLocked(ctx, k, length, true, length)
	case f.size != length:
		c.mu.Unlock()
		return nil, fmt.Errorf("cache: %s chunk %d is loading with %d bytes, not %d: %w", k.key, k.idx, f.size, length, ErrNotChunk)
	default:
		f.high = max(f.high, length)
	}
	c.mu.Unlock()
	data, err := f.wait(ctx)
	if err != nil {
		return nil, err
	}
	return chunkOfLen(k, data, length)
}

// chunkOfLen returns data, chunk k, if it holds exactly length bytes.
func chunkOfLen(k chunkKey, data []byte, length int64) ([]byte, error) {
	if int64(len(data)) != length {
		return nil, fmt.Errorf("cache: %s chunk %d holds %d bytes, not %d: %w", k.key, k.idx, len(data), length, ErrNotChunk)
	}
	return data[:length:length], nil
}
