package tailcache

import "github.com/floe-io/floe/coordapi"

// coordRing holds a partition's most recent batch coordinates, at most
// tailBatches, oldest first. Once full, a new coordinate overwrites the
// oldest in place: a busy partition gets a notice every few milliseconds,
// and trimming a slice by copying it to a new one cost a copy of all 512
// coordinates per notice (a fifth of a soak broker's allocations).
type coordRing struct {
	buf  []coordapi.BatchCoord // grows to tailBatches, then wraps
	head int                   // index in buf of the oldest, once full
}

func (r *coordRing) len() int { return len(r.buf) }

// at returns the i-th oldest coordinate.
func (r *coordRing) at(i int) *coordapi.BatchCoord {
	j := r.head + i
	if j >= len(r.buf) {
		j -= len(r.buf)
	}
	return &r.buf[j]
}

// push appends bs, dropping the oldest beyond tailBatches.
func (r *coordRing) push(bs []coordapi.BatchCoord) {
	for _, b := range bs {
		if len(r.buf) < tailBatches {
			r.buf = append(r.buf, b)
			continue
		}
		r.buf[r.head] = b
		if r.head++; r.head == len(r.buf) {
			r.head = 0
		}
	}
}

// reset empties the ring, keeping its memory; its old coordinates are
// cleared so that their object keys can be collected.
func (r *coordRing) reset() {
	clear(r.buf)
	r.buf, r.head = r.buf[:0], 0
}
