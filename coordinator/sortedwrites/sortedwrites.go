// Package sortedwrites collects a commit's writes and adds them to a
// Pebble batch in key order: Pebble's memtable skiplist inserts keys that
// follow each other much faster (it reuses the previous insert's
// position), and one object's batches are otherwise interleaved across
// partitions. The coordinator reuses one Writes from commit to commit,
// under its commit lock; the package takes no locks.
package sortedwrites

import (
	"bytes"
	"slices"

	"github.com/cockroachdb/pebble"
)

// Writes collects writes and adds them to a Pebble batch in key order. A
// write is either Set, or appended in place: append its key to Arena and
// call EndKey, then append its value and call EndValue. The zero value is
// empty; Reset empties it for reuse.
type Writes struct {
	// Arena holds the keys and values, one after the other.
	Arena []byte
	kvs   []kvRef
	// start and mid are where the write being appended starts and where
	// its value starts.
	start, mid int
}

// kvRef locates one key and value in the arena: key [start, mid), value
// [mid, end).
type kvRef struct{ start, mid, end int }

// Set adds the write of v under k.
func (w *Writes) Set(k, v []byte) {
	w.Arena = append(w.Arena, k...)
	w.EndKey()
	w.Arena = append(w.Arena, v...)
	w.EndValue()
}

// EndKey ends the key appended to Arena: its value follows.
func (w *Writes) EndKey() { w.mid = len(w.Arena) }

// EndValue ends the value appended to Arena, and the write.
func (w *Writes) EndValue() {
	w.kvs = append(w.kvs, kvRef{w.start, w.mid, len(w.Arena)})
	w.start = len(w.Arena)
}

// Reset empties w, keeping room for size bytes of keys and values and n
// writes.
func (w *Writes) Reset(size, n int) {
	w.Arena = slices.Grow(w.Arena[:0], size)
	w.kvs = slices.Grow(w.kvs[:0], n)
	w.start, w.mid = 0, 0
}

// BatchSize is the size of a Pebble batch to hold w's writes.
func (w *Writes) BatchSize() int { return len(w.Arena) + 16*len(w.kvs) }

func (w *Writes) key(r kvRef) []byte { return w.Arena[r.start:r.mid] }

// Apply sets every collected write in b, in key order. Keys must be
// unique.
func (w *Writes) Apply(b *pebble.Batch) {
	slices.SortFunc(w.kvs, func(x, y kvRef) int { return bytes.Compare(w.key(x), w.key(y)) })
	for _, r := range w.kvs {
		_ = b.Set(w.Arena[r.start:r.mid], w.Arena[r.mid:r.end], nil)
	}
}
