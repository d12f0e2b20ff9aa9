package coordinator

import (
	"context"
	"fmt"
	"time"

	"github.com/cockroachdb/pebble"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/coordinator/layout"
	"github.com/floe-io/floe/objectstore"
)

// GCStore is what the garbage collector needs of the object store.
type GCStore interface {
	List(ctx context.Context, prefix string) ([]objectstore.ObjectInfo, error)
	Delete(ctx context.Context, key string) error
}

// GCStats counts what one collection deleted.
type GCStats struct {
	// Garbage is objects the coordinator knew that no batch references
	// (all batches rejected, topic or records deleted).
	Garbage int
	// Orphans is objects in the store the coordinator never committed
	// (the uploading broker died, or its commit failed).
	Orphans int
	// Bytes is the bytes deleted.
	Bytes int64
}

// CollectGarbage deletes, from the object store and then from the
// coordinator's state, every object that has been garbage for longer than
// GCGrace, and every object under <prefix>wal/ older than GCGrace that the
// coordinator never committed. An object that a live batch references is
// never deleted: its record says live, and the check is made under the
// commit lock, after which no commit can revive a removed record's object
// (commits of an object come within seconds of its upload, and one later
// than Options.MaxObjectAge, half the grace, is refused: objectage.go).
func (c *Coordinator) CollectGarbage(ctx context.Context, store GCStore, prefix string) (GCStats, error) {
	var st GCStats
	if err := c.enter(ctx); err != nil {
		return st, err
	}
	defer c.leave()
	nowMs := c.now().UnixMilli()
	graceMs := c.opts.GCGrace.Milliseconds()

	// Orphans first, from a listing taken before the garbage pass removes
	// records, so that an object removed below is not seen as an orphan.
	listed, err := store.List(ctx, coordapi.WALPrefix(prefix))
	if err != nil {
		return st, fmt.Errorf("gc: list: %w", err)
	}
	segments, err := store.List(ctx, coordapi.TieredPrefix(prefix))
	if err != nil {
		return st, fmt.Errorf("gc: list: %w", err)
	}
	listed = append(listed, segments...)
	c.mu.RLock()
	var orphans []objectstore.ObjectInfo
	for _, o := range listed {
		if _, known := c.mu.objectsByKey[o.Key]; !known && nowMs-o.LastModified.UnixMilli() >= graceMs {
			orphans = append(orphans, o)
		}
	}
	var garbage []*objectState
	for _, o := range c.mu.objects {
		if o.state == ObjectGarbage && nowMs-o.garbageSinceMs >= graceMs {
			garbage = append(garbage, o)
		}
	}
	c.mu.RUnlock()
	if len(c.opts.ObjectPeers) > 0 {
		if orphans, garbage, err = c.peersFilter(ctx, orphans, garbage, nowMs); err != nil {
			return st, err
		}
	}

	for _, o := range orphans {
		if err := store.Delete(ctx, o.Key); err != nil {
			return st, fmt.Errorf("gc: delete orphan %s: %w", o.Key, err)
		}
		st.Orphans++
		st.Bytes += o.Size
		c.log.Info("gc: deleted orphan object", "key", o.Key, "bytes", o.Size, "age", time.Duration(nowMs-o.LastModified.UnixMilli())*time.Millisecond)
	}
	for len(garbage) > 0 {
		n := min(len(garbage), gcRecordBatch)
		nums := make([]uint64, n)
		for i, o := range garbage[:n] {
			nums[i] = o.num
		}
		removed, err := c.removeGarbageRecords(nums)
		if err != nil {
			return st, err
		}
		for i, o := range garbage[:n] {
			if !removed[i] {
				continue // revived by a retried commit meanwhile
			}
			if err := store.Delete(ctx, o.key); err != nil {
				// The record is gone, so the object is an orphan now: the
				// next collection's orphan pass deletes it.
				return st, fmt.Errorf("gc: delete garbage %s: %w", o.key, err)
			}
			st.Garbage++
			st.Bytes += o.size
			c.log.Info("gc: deleted garbage object", "key", o.key, "bytes", o.size)
		}
		garbage = garbage[n:]
	}
	return st, nil
}

// gcRecordBatch is how many garbage objects' records one synced write
// removes (the collector's rounds, and ForgetObjects for shard 0's). They
// were removed one synced write each, under the commit lock: a busy
// broker's round after the grace (about 8,800 objects a minute at 20 MiB/s
// on the local directory, from the soak's 147 PUTs a second) was as many
// syncs for the produce path's commits to queue behind; the 20-minute
// soak's produce p99 was 162 ms with them, 75.5 without.
const gcRecordBatch = 512

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
