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
	batches    []coordapi.BatchCoord
	verified   time.Time
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
		if len(batches) > 0 && len(t.batches) > 0 && t.hwm == batches[0].BaseOffset {
			t.batches = append(t.batches, batches...)
		} else {
			// A gap (the first notice, or one was lost): start over.
			t.batches = append([]coordapi.BatchCoord(nil), batches...)
		}
		if over := len(t.batches) - tailBatches; over > 0 {
			t.batches = append(t.batches[:0:0], t.batches[over:]...)
		}
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
		t.batches = nil // notices were lost: the coordinates have a gap
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
	if len(t.batches) == 0 || offset < t.batches[0].BaseOffset {
		return resp, false
	}
	i := sort.Search(len(t.batches), func(i int) bool { return t.batches[i].LastOffset >= offset })
	var total int64
	for _, b := range t.batches[i:] {
		if b.BaseOffset >= end || len(resp.Batches) > 0 && total+int64(b.ByteLength) > int64(maxBytes) {
			break
		}
		total += int64(b.ByteLength)
		resp.Batches = append(resp.Batches, b)
	}
	return resp, true
}
