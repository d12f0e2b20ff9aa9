package cache

import (
	"context"
	"fmt"
)

// GetRangeDirect returns length bytes of key at offset, as GetRange does, but
// never loads a chunk: when every chunk the range touches is resident in
// memory it is served from them (a hit), else it is read with one ranged GET
// of exactly the range, which is not cached. It is for reads far smaller
// than a chunk that are scattered over many objects, such as the batches of
// one key in a hierarchical view: loading a whole chunk for each would read
// many times the bytes asked for. objectSize bounds the range as in
// GetRange. The returned bytes must not be modified.
func (c *Cache) GetRangeDirect(ctx context.Context, key string, objectSize, offset, length int64) ([]byte, error) {
	if offset < 0 || objectSize < 0 || offset > objectSize {
		return nil, fmt.Errorf("cache: read %s at %d of %d bytes: %w", key, offset, objectSize, ErrOutOfRange)
	}
	if length < 0 || length > objectSize-offset {
		length = objectSize - offset
	}
	if length == 0 {
		return []byte{}, nil
	}
	if data, ok := c.residentRange(key, objectSize, offset, length); ok {
		return data, nil
	}
	c.mu.RLock()
	closed := c.mu.closed
	c.mu.RUnlock()
	if closed {
		return nil, ErrClosed
	}
	c.stats.gets.Add(1)
	data, err := c.store.GetRange(ctx, key, offset, length)
	if err != nil {
		c.stats.getErrors.Add(1)
		return nil, fmt.Errorf("cache: direct read %s at %d+%d: %w", key, offset, length, err)
	}
	c.stats.bytesLoaded.Add(int64(len(data)))
	c.stats.directReads.Add(1)
	if int64(len(data)) != length {
		return nil, fmt.Errorf("cache: direct read %s at %d+%d: got %d bytes: %w", key, offset, length, len(data), ErrShortRead)
	}
	return data, nil
}

// residentRange returns the range from resident chunks, ok false when one of
// them is not in memory. It counts hits only when it answers.
func (c *Cache) residentRange(key string, objectSize, offset, length int64) ([]byte, bool) {
	cb := c.opts.ChunkBytes
	first, last := c.chunkOf(objectSize, offset), c.chunkOf(objectSize, offset+length-1)
	now := c.now()
	c.mu.RLock()
	defer c.mu.RUnlock()
	var out []byte
	for idx := first; idx <= last; idx++ {
		e := c.mu.entries[chunkKey{key: key, idx: idx}]
		if e == nil {
			return nil, false
		}
		base := idx * cb
		lo := max(offset, base) - base
		hi := min(offset+length, base+c.chunkLen(objectSize, idx)) - base
		if int64(len(e.data)) < hi {
			return nil, false
		}
		if first == last {
			e.touch(lo, hi, now)
			c.stats.hits.Add(1)
			return e.data[lo:hi:hi], true
		}
		out = append(out, e.data[lo:hi]...)
	}
	for idx := first; idx <= last; idx++ {
		c.stats.hits.Add(1)
	}
	return out, true
}
