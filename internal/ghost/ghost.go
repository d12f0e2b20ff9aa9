// Package ghost is S3-FIFO's ghost queue, shared by the broker's chunk cache
// (package cache) and the key index's batch cache (package kvindex): the
// keys of entries recently evicted from the small queue, without their data,
// in a bounded ring. A miss on a ghost key is an entry that came back soon
// after eviction, so the cache puts it straight into its main queue.
package ghost

// Keys remembers up to a fixed number of keys, forgetting the oldest first.
// It is not safe for concurrent use: its cache's lock guards it.
type Keys[K comparable] struct {
	seqs map[K]uint64 // key -> sequence of its ring slot
	ring []slot[K]
	pos  int
	seq  uint64
}

type slot[K comparable] struct {
	key K
	seq uint64
}

// New returns a ghost queue of capacity keys (at least 1).
func New[K comparable](capacity int) *Keys[K] {
	capacity = max(capacity, 1)
	return &Keys[K]{seqs: make(map[K]uint64, capacity), ring: make([]slot[K], capacity)}
}

// Add remembers k, forgetting the oldest key when full.
func (g *Keys[K]) Add(k K) {
	old := g.ring[g.pos]
	if s, ok := g.seqs[old.key]; ok && s == old.seq {
		delete(g.seqs, old.key)
	}
	g.seq++
	g.ring[g.pos] = slot[K]{key: k, seq: g.seq}
	g.seqs[k] = g.seq
	g.pos = (g.pos + 1) % len(g.ring)
}

// Take reports whether k is remembered, and forgets it.
func (g *Keys[K]) Take(k K) bool {
	if _, ok := g.seqs[k]; !ok {
		return false
	}
	delete(g.seqs, k)
	return true
}

// Len returns how many keys are remembered.
func (g *Keys[K]) Len() int { return len(g.seqs) }
