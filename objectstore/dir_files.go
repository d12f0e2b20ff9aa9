package objectstore

import (
	"container/list"
	"os"
	"sync"
)

// dirOpenFiles is how many objects' files a Dir keeps open for reads.
const dirOpenFiles = 512

// openFiles keeps the files of recently read objects open, so that a read
// costs one pread instead of an open, two fstats, a poller registration
// and a close: the tier jobs read each WAL object once per partition it
// holds (a few KiB a range), and opening its file for each read was two
// thirds of their reads' CPU and a tenth of a loaded broker's (perf, the
// lifecycle soak). A file is closed when it leaves the cache and no read
// holds it; a write or delete of its key drops it (invalidate), and a
// file opened before such a drop is not cached, so a read never sees an
// object a write replaced or a delete removed longer than a read begun
// before either would.
type openFiles struct {
	mu  sync.Mutex
	max int
	m   map[string]*openFile
	lru list.List // of *openFile, most recently used first
	// gen counts the drops: a file opened while gen moved is not cached.
	gen uint64
}

// openFile is one cached file and the reads that hold it.
type openFile struct {
	key  string
	f    *os.File
	size int64
	refs int // reads holding it, plus one while cached
	elem *list.Element
}

// acquire returns key's file at path p, open for reading, and its size:
// from the cache, or opened (and cached unless a drop intervened). The
// caller must release it.
func (c *openFiles) acquire(key, p string) (*openFile, error) {
	c.mu.Lock()
	if of := c.m[key]; of != nil {
		of.refs++
		c.lru.MoveToFront(of.elem)
		c.mu.Unlock()
		return of, nil
	}
	gen := c.gen
	c.mu.Unlock()

	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = ErrNotFound
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	of := &openFile{key: key, f: f, size: fi.Size(), refs: 1}
	var evicted []*os.File
	c.mu.Lock()
	if c.gen == gen && c.m[key] == nil && c.max > 0 {
		if c.m == nil {
			c.m = make(map[string]*openFile)
		}
		of.refs++
		of.elem = c.lru.PushFront(of)
		c.m[key] = of
		for c.lru.Len() > c.max {
			if f := c.removeLocked(c.lru.Back().Value.(*openFile)); f != nil {
				evicted = append(evicted, f)
			}
		}
	}
	c.mu.Unlock()
	for _, f := range evicted {
		f.Close()
	}
	return of, nil
}

// release ends a read of of.
func (c *openFiles) release(of *openFile) {
	c.mu.Lock()
	of.refs--
	last := of.refs == 0
	c.mu.Unlock()
	if last {
		of.f.Close()
	}
}

// invalidate drops key's file, once key was written or deleted.
func (c *openFiles) invalidate(key string) {
	c.mu.Lock()
	c.gen++
	var f *os.File
	if of := c.m[key]; of != nil {
		f = c.removeLocked(of)
	}
	c.mu.Unlock()
	if f != nil {
		f.Close()
	}
}

// removeLocked takes of out of the cache and returns its file if no read
// holds it, for the caller to close outside the lock. c.mu must be held.
func (c *openFiles) removeLocked(of *openFile) *os.File {
	c.lru.Remove(of.elem)
	delete(c.m, of.key)
	of.refs--
	if of.refs == 0 {
		return of.f
	}
	return nil
}
