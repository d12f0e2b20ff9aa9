package cache

import (
	"sync/atomic"
	"time"
)

// Stats is a snapshot of the cache's counters. Counters only grow; Bytes,
// Reserved, Chunks and DiskBytes are current levels. Hits and Misses count
// chunk accesses: a read spanning three chunks counts three.
type Stats struct {
	Hits        int64 // chunk accesses served from memory
	Misses      int64 // chunk accesses that waited for a load (started or joined)
	Gets        int64 // ranged GETs issued to the store
	GetErrors   int64 // GETs that failed
	BytesLoaded int64 // bytes read from the store
	Evictions   int64 // chunks evicted from memory
	ReadAheads  int64 // read-ahead loads started
	Bypasses    int64 // demand loads handed out uncached: no room left to reserve
	Puts        int64 // chunks inserted by write-through (Put)
	DiskHits    int64 // loads served by the disk tier
	DiskWrites  int64 // chunks written to the disk tier
	DirectReads int64 // exact ranged GETs of GetRangeDirect (also in Gets)

	Bytes     int64 // bytes held by resident chunks (<= MaxBytes)
	Reserved  int64 // bytes reserved by loads in flight (Bytes+Reserved <= MaxBytes)
	Chunks    int64 // resident chunks
	DiskBytes int64 // bytes held by the disk tier (<= DiskBytes option)
}

// counters are the atomic counters behind Stats.
type counters struct {
	hits, misses, gets, getErrors, bytesLoaded, evictions atomic.Int64
	readAheads, bypasses, puts, diskHits, diskWrites      atomic.Int64
	directReads                                           atomic.Int64
}

// Stats returns a snapshot of the counters. It is cheap enough to call from
// an OpenTelemetry observable-counter callback.
func (c *Cache) Stats() Stats {
	s := Stats{
		Hits:        c.stats.hits.Load(),
		Misses:      c.stats.misses.Load(),
		Gets:        c.stats.gets.Load(),
		GetErrors:   c.stats.getErrors.Load(),
		BytesLoaded: c.stats.bytesLoaded.Load(),
		Evictions:   c.stats.evictions.Load(),
		ReadAheads:  c.stats.readAheads.Load(),
		Bypasses:    c.stats.bypasses.Load(),
		Puts:        c.stats.puts.Load(),
		DiskHits:    c.stats.diskHits.Load(),
		DiskWrites:  c.stats.diskWrites.Load(),
		DirectReads: c.stats.directReads.Load(),
	}
	c.mu.RLock()
	s.Bytes = c.residentLocked()
	s.Reserved = c.mu.reserved
	s.Chunks = int64(len(c.mu.entries))
	c.mu.RUnlock()
	if c.disk != nil {
		s.DiskBytes = c.disk.bytes()
	}
	return s
}

// Source says where a chunk load was served from.
type Source uint8

// Sources of a chunk load.
const (
	SourceStore Source = iota // a ranged GET to the object store
	SourceDisk                // the disk tier
)

// String returns "store" or "disk", fit for a metric attribute.
func (s Source) String() string {
	if s == SourceDisk {
		return "disk"
	}
	return "store"
}

// LoadEvent describes one finished chunk load.
type LoadEvent struct {
	Source    Source
	Bytes     int64         // bytes loaded (0 on error)
	Duration  time.Duration // time spent in the disk read or GET
	ReadAhead bool          // a prefetch, not a demand load
	Err       error
}

// Observer receives an event for every chunk load, so a metrics layer
// (OpenTelemetry) can record latency histograms that counters cannot give.
// ObserveLoad is called from the loading goroutine: it must be fast and safe
// for concurrent use.
type Observer interface {
	ObserveLoad(LoadEvent)
}
