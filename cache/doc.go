// Package cache is a byte-bounded cache of fixed-size, aligned object chunks
// in front of object storage. It knows nothing of Kafka: callers ask for
// (key, offset, length) of an immutable object whose size they know, and the
// cache answers from memory, from an optional disk tier, or with one ranged
// GET per missing chunk.
//
// # Chunks
//
// An object is cut into aligned chunks of ChunkBytes; only the last one may
// be short, and a tail of at most ChunkBytes/8 after the last full chunk
// joins it instead of being a chunk (and a GET) of its own: a segment
// object's indexes and trailer, a few KiB, are read with its last data.
// A read is served from the chunks it overlaps:
//
//	object "wal/0190...", objectSize = 2.5 chunks of C bytes
//
//	offset 0             C             2C      2.5C
//	       +-------------+-------------+-------+
//	       |   chunk 0   |   chunk 1   | ch. 2 |   chunk i = [i*C, min((i+1)*C, objectSize))
//	       +-------------+-------------+-------+
//	            [======read======]                 spans chunks 0-1: copied into one buffer
//	                        [=read=]               within chunk 1: a sub-slice, no copy
//
// Objects are written once and never change, so a cached chunk never goes
// stale and needs no invalidation.
//
// # Eviction: S3-FIFO
//
// Resident chunks live in two FIFO queues; a third remembers recent victims:
//
//	               new chunk (miss, read-ahead, Put)
//	                |
//	                v
//	S small ~10%:  head [c c c c] tail           +----- freq>0: freq-- -----+
//	                             |               v                          |
//	                             +--freq>0--> head [c c c c c c c c c] tail :M main ~90%
//	                             |               ^                          |
//	                          freq=0             |                       freq=0
//	                             v               |                          v
//	G ghost:       [k k k k k k k k]  -----------+ a miss on a           evicted
//	               keys only, as many             ghost key goes to M
//	               as M holds chunks
//
// Why not LRU: a consumer that falls behind reads a large span of old
// objects exactly once. Under LRU every chunk of that scan becomes
// most-recently-used and pushes the hot working set (tailing consumers, hot
// keys of /kv lookups) out of the cache. Under S3-FIFO a one-time chunk enters
// the small queue, is never re-read, and leaves from there; the main queue,
// where re-read chunks live, is untouched by the scan. Hits only set a small
// saturating counter (no list movement), so the hit path takes a read lock.
//
// What counts as a re-read matters for chunks: a sequential reader touches one
// 4 MiB chunk many times while moving forward through it. So an access raises
// the chunk's frequency only if it starts below the highest byte already
// served from that chunk (it re-reads bytes); forward progress does not.
//
// # Byte bound
//
// Resident bytes plus bytes reserved for in-flight loads never exceed
// MaxBytes: a load reserves its chunk's size (evicting as needed) before it
// issues the GET. When everything left is reserved, a demand load still
// proceeds but its chunk is handed to its readers without being cached
// (counted in Stats.Bypasses); a read-ahead is skipped.
//
// # Read-ahead
//
// A read of chunk i counts as sequential when chunk i-1 of the same object
// is loading or was read within the last 10s. A sequential read that misses
// chunk i, or that carries the chunk's read mark past its midpoint, starts
// asynchronous loads of chunks i+1..i+ReadAhead that exist and are absent,
// at most ReadAheadConcurrency at a time. Isolated or backward reads (key
// lookups) never prefetch.
//
// # Concurrency
//
// Concurrent misses for one chunk share one load (see flight.go). The load
// runs in its own goroutine under its own timeout, so a reader that gives up
// (ctx cancelled) does not cancel the load for the others. Cache.mu guards
// the queues; the disk tier has its own mutex; no goroutine ever holds both.
//
// # Whole chunks for peers
//
// GetChunk reads one chunk by its offset and length instead of a byte range
// of an object of known size: the other brokers of a zone ask a chunk's
// owning broker for it that way (package zone), and the owner's load joins
// or leaves the chunk resident like any miss, so the next peer hits.
//
// # Metrics
//
// Stats returns atomic counters, fit for OpenTelemetry observable counters;
// an optional Observer receives one event per load for latency histograms.
package cache
