package coordinator

import (
	"bytes"
	"slices"

	"github.com/cockroachdb/pebble"
)

// sortedWrites collects a commit's writes and adds them to a Pebble batch
// in key order: Pebble's memtable skiplist inserts keys that follow each
// other much faster (it reuses the previous insert's position), and one
// object's batches are otherwise interleaved across partitions.
//
// A write is either set, or appended in place: append its key to arena and
// call endKey, then append its value and call endValue.
type sortedWrites struct {
	arena []byte
	kvs   []kvRef
	// start and mid are where the write being appended starts and where
	// its value starts.
	start, mid int
}

// kvRef locates one key and value in the arena: key [start, mid), value
// [mid, end).
type kvRef struct{ start, mid, end int }

func (w *sortedWrites) set(k, v []byte) {
	w.arena = append(w.arena, k...)
	w.endKey()
	w.arena = append(w.arena, v...)
	w.endValue()
}

func (w *sortedWrites) endKey() { w.mid = len(w.arena) }

func (w *sortedWrites) endValue() {
	w.kvs = append(w.kvs, kvRef{w.start, w.mid, len(w.arena)})
	w.start = len(w.arena)
}

func (w *sortedWrites) key(r kvRef) []byte { return w.arena[r.start:r.mid] }

// apply sets every collected write in b, in key order. Keys must be unique.
func (w *sortedWrites) apply(b *pebble.Batch) {
	slices.SortFunc(w.kvs, func(x, y kvRef) int { return bytes.Compare(w.key(x), w.key(y)) })
	for _, r := range w.kvs {
		_ = b.Set(w.arena[r.start:r.mid], w.arena[r.mid:r.end], nil)
	}
}
