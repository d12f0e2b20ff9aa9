package broker

import (
	"sort"
	"sync"
	"time"

	"github.com/floe-io/floe/coordapi"
)

const (
	// tailBatches bounds the coordinates kept per partition.
	tailBatches = 512
	// tailTrust is how long a partition's cached high watermark is
	// trusted to say "no new data" without asking the coordinator: commit
	// notices travel at most once, so a lost one must not hide data for
	// long.
	tailTrust = time.Second
)

// tailCache serves batch coordinates for consumers at the head of the log
// from what commit notices reported, so that tailing fetches need no
// coordinator round trip. Per partition it keeps the most recent committed
// batches (contiguous, ending at the high watermark), never a tiered
// segment's coordinate.
type tailCache struct {
	now func() time.Time
	mu  struct {
		sync.RWMutex
		parts map[topicPartition]*tail
	}
}

type tail struct {
	hwm, logStart, lso int64
	// hasAborted: the partition has aborted transactions, which only the
	// coordinator lists; read_committed fetches then ask it.
	hasAborted bool
	batches    coordRing
	verified   time.Time
}

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

func newTailCache() *tailCache {
	tc := &tailCache{now: time.Now}
	tc.mu.parts = make(map[topicPartition]*tail)
	return tc
}

// notify records commit notices.
func (tc *tailCache) notify(ns []coordapi.CommitNotice) {
	now := tc.now()
	tc.mu.Lock()
	defer tc.mu.Unlock()
	for i := range ns {
		n := &ns[i]
		tp := topicPartition{n.TopicID, n.Partition}
		t := tc.mu.parts[tp]
		if t == nil {
			t = &tail{}
			tc.mu.parts[tp] = t
		}
		if n.HighWatermark <= t.hwm {
			continue // an older notice overtaken by a newer one
		}
		batches := n.Batches // WAL batches only (coordapi.CommitNotice)
		if len(batches) == 0 || t.batches.len() == 0 || t.hwm != batches[0].BaseOffset {
			// A gap (the first notice, or one was lost): start over.
			t.batches.reset()
		}
		t.batches.push(batches)
		t.hwm, t.logStart, t.lso, t.verified = n.HighWatermark, n.LogStartOffset, n.LastStableOffset, now
		t.hasAborted = n.HasAborted
	}
}

// forget drops a partition's cached coordinates, so that its next fetch
// asks the coordinator: a read of them found their object gone.
func (tc *tailCache) forget(tp topicPartition) {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	delete(tc.mu.parts, tp)
}

// verify records a partition's offsets as read from the coordinator.
func (tc *tailCache) verify(tp topicPartition, st coordapi.PartitionState) {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	t := tc.mu.parts[tp]
	if t == nil {
		return // only partitions that get notices are cached
	}
	if st.HighWatermark > t.hwm {
		t.batches.reset() // notices were lost: the coordinates have a gap
		t.hwm = st.HighWatermark
	}
	if st.HighWatermark == t.hwm {
		t.logStart, t.lso = st.LogStartOffset, st.LastStableOffset
		t.verified = tc.now()
	}
}

// find answers FindBatches from the cache when it can: an offset inside the
// cached batches, or at a recently verified high watermark.
func (tc *tailCache) find(tp topicPartition, offset int64, maxBytes int32) (coordapi.FindBatchesResponse, bool) {
	return tc.lookup(tp, offset, maxBytes, false)
}

// findCommitted is find for a read_committed fetch: batches below the last
// stable offset, and only for a partition without aborted transactions
// (the coordinator lists those).
func (tc *tailCache) findCommitted(tp topicPartition, offset int64, maxBytes int32) (coordapi.FindBatchesResponse, bool) {
	return tc.lookup(tp, offset, maxBytes, true)
}

func (tc *tailCache) lookup(tp topicPartition, offset int64, maxBytes int32, committed bool) (coordapi.FindBatchesResponse, bool) {
	tc.mu.RLock()
	defer tc.mu.RUnlock()
	t := tc.mu.parts[tp]
	if committed && t != nil && t.hasAborted {
		return coordapi.FindBatchesResponse{}, false
	}
	// Only what a notice or the coordinator confirmed within tailTrust:
	// the log start also moves without a notice (retention, DeleteRecords
	// through another broker), and consolidation moves old batches out of
	// the WAL objects the cached coordinates name.
	if t == nil || offset < t.logStart || offset > t.hwm || tc.now().Sub(t.verified) >= tailTrust {
		return coordapi.FindBatchesResponse{}, false
	}
	resp := coordapi.FindBatchesResponse{PartitionState: coordapi.PartitionState{LogStartOffset: t.logStart, HighWatermark: t.hwm, LastStableOffset: t.lso}}
	end := t.hwm
	if committed {
		end = t.lso
	}
	if offset >= end {
		return resp, true // nothing to read yet (offset <= hwm, checked above)
	}
	n := t.batches.len()
	if n == 0 || offset < t.batches.at(0).BaseOffset {
		return resp, false
	}
	i := sort.Search(n, func(i int) bool { return t.batches.at(i).LastOffset >= offset })
	var total int64
	for ; i < n; i++ {
		b := t.batches.at(i)
		if b.BaseOffset >= end || len(resp.Batches) > 0 && total+int64(b.ByteLength) > int64(maxBytes) {
			break
		}
		total += int64(b.ByteLength)
		resp.Batches = append(resp.Batches, *b)
	}
	return resp, true
}
