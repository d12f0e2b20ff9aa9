package coordinator

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/cockroachdb/pebble"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/coordinator/layout"
	"github.com/floe-io/floe/coordinator/rowscan"
	"github.com/floe-io/floe/kvindex"
)

// maxKeyBatches bounds the postings one FindKeyBatches answers, whatever
// its byte budget, so that a key with many tiny batches cannot make one call
// resolve the whole partition.
const maxKeyBatches = 4096

// postingKeys returns the distinct keys of a committed batch for the
// posting index (Postings.Apply deduplicates them again).
func postingKeys(keys []coordapi.KeyEntry) [][]byte {
	out := make([][]byte, 0, len(keys))
	for _, k := range keys {
		out = append(out, k.Key)
	}
	return out
}

// postingApply is one accepted batch of a hierarchical topic, for the
// posting index.
type postingApply struct {
	id         coordapi.TopicID
	partition  int32
	base, last int64
	size       int32
	keys       []coordapi.KeyEntry
}

// FindKeyBatches answers a view fetch from the posting index: the batches
// of a hierarchical topic's partition at or after req.Offset that hold
// req.Key, each resolved through the batch rows to where it lives now (a WAL
// batch, or the segment consolidation moved it into), within req.MaxBytes
// (the first always) and maxKeyBatches. A posting whose batch is gone (below
// the log start, or removed by compaction) is skipped; those below the log
// start are deleted after the read (one range deletion for the key, sparing
// a batch the log start cuts into).
//
// Consistency: the partition's state and the batch rows' iterator are taken
// together under mu, as FindBatches does, and the postings are read after:
// a commit writes its postings in the batch that assigns its offsets and
// installs its high watermark only after that write, so every posting below
// the high watermark read is there, and postings at or above it are
// ignored. Kafka-level failures: UnknownTopicID, UnknownTopicOrPartition,
// OffsetOutOfRange (Offset outside [log start, high watermark]).
func (c *Coordinator) FindKeyBatches(ctx context.Context, req coordapi.FindKeyBatchesRequest) (coordapi.FindKeyBatchesResponse, error) {
	if err := c.enter(ctx); err != nil {
		return coordapi.FindKeyBatchesResponse{}, err
	}
	defer c.leave()

	epoch := c.indexEpoch.Load()
	c.mu.RLock()
	t, st, err := c.partitionLocked(req.TopicID, req.Partition)
	if err != nil {
		c.mu.RUnlock()
		return coordapi.FindKeyBatchesResponse{}, err
	}
	limit := st.hwm
	if req.ReadCommitted {
		limit = st.lso()
	}
	resp := coordapi.FindKeyBatchesResponse{PartitionState: st.public(), Through: limit}
	switch {
	case !t.hierarchical || t.postingsRebuilding:
		c.mu.RUnlock()
		return resp, nil
	case req.Offset < st.logStart || req.Offset > st.hwm:
		c.mu.RUnlock()
		resp.Ready = true
		return resp, c.outOfRange(req.TopicID, req.Partition, req.Offset, st)
	case req.Offset >= limit:
		c.mu.RUnlock()
		resp.Ready = true
		resp.Through = max(limit, req.Offset)
		return resp, nil
	}
	var aborted []coordapi.AbortedTxn
	if req.ReadCommitted {
		aborted = c.abortedLocked(partKey{req.TopicID, req.Partition}, req.Offset, limit)
	}
	it, err := c.db.NewIter(&pebble.IterOptions{
		LowerBound: layout.BatchKey(req.TopicID, req.Partition, st.logStart),
		UpperBound: layout.BatchKey(req.TopicID, req.Partition, st.hwm),
	})
	c.mu.RUnlock()
	if err != nil {
		return resp, fmt.Errorf("find key batches: new iterator: %w", err)
	}
	resp.Ready = true
	var (
		nums  []uint64 // object of each answered batch
		total int64
		ferr  error
	)
	err = c.postings.Find(req.TopicID, req.Partition, req.Key, req.Offset, func(po kvindex.Posting) bool {
		switch {
		case po.BaseOffset >= limit:
			return false // committed after the state was read, or past the LSO
		case po.LastOffset < st.logStart:
			return true // below the log start: deleted below
		}
		if len(resp.Batches) > 0 && (total+int64(po.Bytes) > int64(req.MaxBytes) || len(resp.Batches) == maxKeyBatches) {
			resp.Through = resp.Batches[len(resp.Batches)-1].LastOffset + 1
			return false
		}
		kb, num, ok, err := rowscan.ResolvePosting(it, req.TopicID, req.Partition, max(po.BaseOffset, st.logStart, req.Offset), po)
		if err != nil {
			ferr = err
			return false
		}
		if !ok {
			return true // compaction removed the batch
		}
		total += int64(po.Bytes)
		resp.Batches = append(resp.Batches, kb)
		nums = append(nums, num)
		return true
	})
	if err == nil && ferr == nil && len(aborted) > 0 {
		// A read_committed consumer drops an aborted transaction's records
		// until its abort marker: the markers in range go out with the
		// key's batches.
		resp.Batches, nums, ferr = rowscan.WithAbortMarkers(it, req, resp, nums, aborted)
	}
	if cerr := it.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("find key batches: iterate: %w", cerr)
	}
	if err == nil {
		err = ferr
	}
	if err != nil {
		return coordapi.FindKeyBatchesResponse{}, fmt.Errorf("find key batches of %s/%d: %w", req.TopicID, req.Partition, err)
	}
	if bound, stale, err := c.postings.StaleBelow(req.TopicID, req.Partition, req.Key, st.logStart); err == nil && stale {
		c.deletePostingsBelow(req.TopicID, req.Partition, req.Key, bound)
	}

	c.mu.RLock()
	defer c.mu.RUnlock()
	// DeleteRecords or DeleteTopic may have removed batches since the
	// state was read: answer as of now.
	nt, now, err := c.partitionLocked(req.TopicID, req.Partition)
	if err != nil {
		return coordapi.FindKeyBatchesResponse{}, err
	}
	if nt != t || !nt.hierarchical || nt.postingsRebuilding || c.indexEpoch.Load() != epoch {
		// The postings were dropped (or rebuilt) since they were read: an
		// answer from them could skip a batch. Not ready, as during a build.
		return coordapi.FindKeyBatchesResponse{PartitionState: now.public(), Through: now.hwm}, nil
	}
	if req.Offset < now.logStart {
		resp = coordapi.FindKeyBatchesResponse{Ready: true, PartitionState: now.public(), Through: now.hwm}
		return resp, c.outOfRange(req.TopicID, req.Partition, req.Offset, now)
	}
	for i, num := range nums {
		o := c.mu.objects[num]
		if o == nil {
			return coordapi.FindKeyBatchesResponse{}, fmt.Errorf("find key batches: batch at offset %d references unknown object %d", resp.Batches[i].BaseOffset, num)
		}
		resp.Batches[i].Coord.ObjectKey = o.key
		resp.Batches[i].Coord.ObjectSize = o.size
	}
	if req.ReadCommitted {
		resp.Aborted = c.abortedLocked(partKey{req.TopicID, req.Partition}, req.Offset, resp.Through)
	}
	return resp, nil
}

// deletePostingsBelow removes key's postings of batches starting below
// bound (kvindex.Postings.StaleBelow), the lazy cleanup after retention or
// DeleteRecords. It is best effort: stale postings are skipped by every
// read anyway.
func (c *Coordinator) deletePostingsBelow(id coordapi.TopicID, partition int32, key []byte, bound int64) {
	b := c.db.NewBatch()
	defer b.Close()
	c.postings.DeleteBelow(b, id, partition, key, bound)
	if err := c.write(b, pebble.NoSync); err != nil {
		c.log.Warn("delete postings below the log start", "topic", id, "partition", partition, "err", err)
	}
}

// startPostingsRebuildLocked builds t's postings from the log in the
// background; FindKeyBatches answers not ready meanwhile. c.commit must be
// held.
func (c *Coordinator) startPostingsRebuildLocked(t *topicState) {
	if c.commit.closing {
		return
	}
	if c.opts.Objects == nil {
		c.log.Error("postings stay not ready", "topic", t.name, "err", "no object reader configured")
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	c.postingRebuilds[t.id] = rebuild{cancel: cancel, stopped: stopped}
	id, name, partitions := t.id, t.name, int32(len(t.parts))
	go func() {
		defer close(stopped)
		err := kvindex.RebuildPostings(ctx, c.postings, id, partitions, logSource{c})
		switch {
		case err == nil:
			c.mu.Lock()
			t.postingsRebuilding = false
			c.indexEpoch.Add(1) // as a key index build's end
			c.mu.Unlock()
			c.log.Info("postings built from the log", "topic", name)
		case !errors.Is(err, context.Canceled) && !errors.Is(err, kvindex.ErrRebuildAborted):
			c.log.Error("postings rebuild failed", "topic", name, "err", err)
		}
	}()
}

// stopPostingsRebuildLocked cancels a running postings rebuild of id and
// waits for it. c.commit must be held.
func (c *Coordinator) stopPostingsRebuildLocked(id coordapi.TopicID) {
	if r, ok := c.postingRebuilds[id]; ok {
		r.cancel()
		<-r.stopped
		delete(c.postingRebuilds, id)
	}
}

// postingSweepInterval is how often a partition's postings are swept of
// the keys no reader cleaned up below its log start (FindKeyBatches cleans
// up the keys it reads): at most once in it, and only when the log start
// moved since the last sweep.
const postingSweepInterval = 10 * time.Minute

// postingSweeps is when each partition was last swept, and up to what log
// start. Only the tier loop uses it.
type postingSweeps struct {
	sync.Mutex
	last map[partKey]postingSweep
}

type postingSweep struct {
	logStart int64
	atMs     int64
}

// sweepPostings sweeps, for every partition of a hierarchical topic whose
// log start moved since its last sweep (and not within
// postingSweepInterval), the postings of batches below the log start. A
// failure is logged: stale postings are skipped by reads anyway.
func (c *Coordinator) sweepPostings(ctx context.Context) {
	nowMs := c.now().UnixMilli()
	c.sweeps.Lock()
	defer c.sweeps.Unlock()
	if c.sweeps.last == nil {
		c.sweeps.last = make(map[partKey]postingSweep)
	}
	for _, pr := range c.partitionsSnapshot() {
		if !pr.t.hierarchical {
			continue
		}
		c.mu.RLock()
		logStart, ready := pr.t.parts[pr.partition].logStart, !pr.t.postingsRebuilding
		c.mu.RUnlock()
		pk := partKey{pr.t.id, pr.partition}
		last, swept := c.sweeps.last[pk]
		if !ready || logStart <= last.logStart || swept && nowMs-last.atMs < postingSweepInterval.Milliseconds() {
			continue
		}
		n, err := c.postings.SweepPartition(ctx, pr.t.id, pr.partition, logStart)
		if err != nil {
			c.log.Warn("sweep postings below the log start", "topic", pr.t.name, "partition", pr.partition, "err", err)
			continue
		}
		c.sweeps.last[pk] = postingSweep{logStart: logStart, atMs: nowMs}
		if n > 0 {
			c.log.Debug("postings swept below the log start", "topic", pr.t.name, "partition", pr.partition, "deleted", n)
		}
	}
}
