package coordinator

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/cockroachdb/pebble"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/coordinator/collect"
	"github.com/floe-io/floe/coordinator/layout"
	"github.com/floe-io/floe/objectstore"
)

// GCStore is what the garbage collector needs of the object store
// (package collect).
type GCStore = collect.Store

// GCStats counts what one collection deleted.
type GCStats = collect.Stats

// ObjectPeer is another shard of a sharded coordinator, as shard 0's
// collector asks it about the objects it is about to delete
// (docs/design/coordinator-shards.md): *rpc.Client, or a *Coordinator.
type ObjectPeer = collect.Peer

// CollectGarbage deletes, from the object store and then from the
// coordinator's state, every object that has been garbage for longer than
// GCGrace, and every object under <prefix>wal/ older than GCGrace that the
// coordinator never committed (package collect). An object that a live
// batch references is never deleted: its record says live, and the check
// is made under the commit lock (removeGarbageRecords), after which no
// commit can revive a removed record's object (commits of an object come
// within seconds of its upload, and one later than Options.MaxObjectAge,
// half the grace, is refused: package commitcheck).
func (c *Coordinator) CollectGarbage(ctx context.Context, store GCStore, prefix string) (GCStats, error) {
	if err := c.enter(ctx); err != nil {
		return GCStats{}, err
	}
	defer c.leave()
	return c.gc.Collect(ctx, store, prefix)
}

// candidatesChunk is how many listed keys Candidates looks up under one
// hold of c.mu.
const candidatesChunk = 4096

// gcState is the coordinator's object state as the collector sees it
// (collect.State).
type gcState struct{ c *Coordinator }

// Candidates reads, under c.mu, the listed objects the coordinator does not
// know and its garbage objects, each at least graceMs old (a listed object
// of no known age is returned for the collector to date).
//
// The listed keys are looked up candidatesChunk at a time, each chunk
// under its own hold of c.mu: a listing of the grace period's objects
// (over 100,000) held it for milliseconds, and every commit waits for
// c.mu to install its state. An object committed between two chunks is
// young, and an orphan candidate must be a grace old, which no commit can
// name (package commitcheck), so the chunks need not agree.
func (s gcState) Candidates(listed []objectstore.ObjectInfo, nowMs, graceMs int64) (orphans []objectstore.ObjectInfo, garbage []collect.Object) {
	c := s.c
	for chunk := range slices.Chunk(listed, candidatesChunk) {
		c.mu.RLock()
		for _, o := range chunk {
			if _, known := c.mu.objectsByKey[o.Key]; !known && (o.LastModified.IsZero() || nowMs-o.LastModified.UnixMilli() >= graceMs) {
				orphans = append(orphans, o)
			}
		}
		c.mu.RUnlock()
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	for _, o := range c.mu.objects {
		if o.state == ObjectGarbage && nowMs-o.garbageSinceMs >= graceMs {
			garbage = append(garbage, collect.Object{Num: o.num, Key: o.key, Size: o.size})
		}
	}
	return orphans, garbage
}

// RemoveGarbage is removeGarbageRecords.
func (s gcState) RemoveGarbage(nums []uint64) ([]bool, error) { return s.c.removeGarbageRecords(nums) }

// removeGarbageRecords deletes, in one synced write, the records of the
// objects among nums that are still garbage, and reports which it
// deleted: an object a retried commit revived since the collector chose
// it is kept.
func (c *Coordinator) removeGarbageRecords(nums []uint64) ([]bool, error) {
	removed := make([]bool, len(nums))
	c.commit.Lock()
	defer c.commit.Unlock()
	b := c.db.NewBatch()
	defer b.Close()
	var gone []*objectState
	for i, num := range nums {
		o := c.mu.objects[num]
		if o == nil || o.state != ObjectGarbage || o.live > 0 {
			continue
		}
		_ = b.Delete(layout.ObjectKey(num), nil)
		removed[i] = true
		gone = append(gone, o)
	}
	if len(gone) == 0 {
		return removed, nil
	}
	if err := c.write(b, pebble.Sync); err != nil {
		return nil, fmt.Errorf("gc: delete %d object records (%s first): %w", len(gone), gone[0].key, err)
	}
	c.mu.Lock()
	c.forgetObjectsLocked(gone...)
	c.mu.Unlock()
	return removed, nil
}

// RunGC collects garbage every interval until ctx ends. Errors are logged
// and retried at the next round.
func (c *Coordinator) RunGC(ctx context.Context, store GCStore, prefix string, interval time.Duration) {
	if interval <= 0 {
		interval = min(max(c.opts.GCGrace/10, time.Second), time.Minute)
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		st, err := c.CollectGarbage(ctx, store, prefix)
		if err != nil && ctx.Err() == nil {
			c.log.Warn("gc round failed", "err", err)
		}
		if st.Garbage+st.Orphans > 0 {
			c.log.Info("gc round", "garbage", st.Garbage, "orphans", st.Orphans, "bytes", st.Bytes)
		}
	}
}

// ObjectStates answers what this shard knows of each object key: unknown,
// live (some batch of its partitions is in it), or garbage since when.
func (c *Coordinator) ObjectStates(ctx context.Context, keys []string) ([]coordapi.ObjectState, error) {
	if err := c.enter(ctx); err != nil {
		return nil, err
	}
	defer c.leave()
	out := make([]coordapi.ObjectState, len(keys))
	c.mu.RLock()
	defer c.mu.RUnlock()
	for i, k := range keys {
		num, ok := c.mu.objectsByKey[k]
		if !ok {
			continue
		}
		o := c.mu.objects[num]
		out[i].Known = true
		if o.state == ObjectGarbage && o.live == 0 {
			out[i].GarbageSinceMs = max(o.garbageSinceMs, 1)
		}
	}
	return out, nil
}

// ForgetObjects drops this shard's rows of the objects among keys that are
// garbage here, and returns the keys it kept because they are live here.
// Shard 0's collector calls it before it deletes them, and deletes none it
// kept: a live object is never dropped.
func (c *Coordinator) ForgetObjects(ctx context.Context, keys []string) (kept []string, err error) {
	if err := c.enter(ctx); err != nil {
		return nil, err
	}
	defer c.leave()
	var (
		nums  []uint64
		known []string // the keys of nums
	)
	c.mu.RLock()
	for _, k := range keys {
		if num, ok := c.mu.objectsByKey[k]; ok {
			nums, known = append(nums, num), append(known, k)
		}
	}
	c.mu.RUnlock()
	for len(nums) > 0 {
		n := min(len(nums), collect.RecordBatch)
		removed, err := c.removeGarbageRecords(nums[:n])
		if err != nil {
			return kept, err
		}
		for i, ok := range removed {
			if !ok {
				kept = append(kept, known[i])
			}
		}
		nums, known = nums[n:], known[n:]
	}
	return kept, nil
}
