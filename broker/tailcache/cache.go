package tailcache

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

// Cache serves batch coordinates for consumers at the head of the log
// from what commit notices reported, so that tailing fetches need no
// coordinator round trip. Per partition it keeps the most recent committed
// batches (contiguous, ending at the high watermark), never a tiered
// segment's coordinate. It is safe for concurrent use.
type Cache struct {
	now func() time.Time
	mu  struct {
		sync.RWMutex
		parts map[partition]*tail
	}
}

// partition names one partition by topic id.
type partition struct {
	id coordapi.TopicID
	p  int32
}

type tail struct {
	hwm, logStart, lso int64
	// hasAborted: the partition has aborted transactions, which only the
	// coordinator lists; read_committed fetches then ask it.
	hasAborted bool
	batches    coordRing
	verified   time.Time
}

// New returns an empty Cache.
func New() *Cache {
	tc := &Cache{now: time.Now}
	tc.mu.parts = make(map[partition]*tail)
	return tc
}

// Notify records commit notices.
func (tc *Cache) Notify(ns []coordapi.CommitNotice) {
	now := tc.now()
	tc.mu.Lock()
	defer tc.mu.Unlock()
	for i := range ns {
		n := &ns[i]
		tp := partition{n.TopicID, n.Partition}
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

// Forget drops a partition's cached coordinates, so that its next fetch
// asks the coordinator: a read of them found their object gone, or its log
// start moved.
func (tc *Cache) Forget(id coordapi.TopicID, p int32) {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	delete(tc.mu.parts, partition{id, p})
}

// Verify records a partition's offsets as read from the coordinator.
func (tc *Cache) Verify(id coordapi.TopicID, p int32, st coordapi.PartitionState) {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	t := tc.mu.parts[partition{id, p}]
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

// Find answers FindBatches from the cache when it can: an offset inside the
// cached batches, or at a recently verified high watermark.
func (tc *Cache) Find(id coordapi.TopicID, p int32, offset int64, maxBytes int32) (coordapi.FindBatchesResponse, bool) {
	return tc.lookup(partition{id, p}, offset, maxBytes, false)
}

// FindCommitted is Find for a read_committed fetch: batches below the last
// stable offset, and only for a partition without aborted transactions
// (the coordinator lists those).
func (tc *Cache) FindCommitted(id coordapi.TopicID, p int32, offset int64, maxBytes int32) (coordapi.FindBatchesResponse, bool) {
	return tc.lookup(partition{id, p}, offset, maxBytes, true)
}

func (tc *Cache) lookup(tp partition, offset int64, maxBytes int32, committed bool) (coordapi.FindBatchesResponse, bool) {
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
