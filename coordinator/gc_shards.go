package coordinator

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/objectstore"
)

// ObjectPeer is another shard of a sharded coordinator, as shard 0's
// collector asks it about the objects it is about to delete
// (docs/design/coordinator-shards.md): *rpc.Client, or a *Coordinator.
type ObjectPeer interface {
	// ObjectStates answers, for each key, what the shard knows of it.
	ObjectStates(ctx context.Context, keys []string) ([]coordapi.ObjectState, error)
	// ForgetObjects drops the shard's rows of the keys that are garbage
	// there, before the objects are deleted, and returns the keys it kept
	// because they are live there (revived since they were asked about).
	ForgetObjects(ctx context.Context, keys []string) (kept []string, err error)
}

// peerBatch bounds the keys of one ObjectStates or ForgetObjects call.
const peerBatch = 1000

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
		n := min(len(nums), gcRecordBatch)
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

// peerWaits remembers, of the objects the collector asked the other
// shards about and some kept, the earliest time they may allow each: a
// shard that has an object live at t cannot allow it before t + GCGrace
// (it must first become garbage there, then wait the grace), and one that
// has it garbage since g not before g + GCGrace. So an object that stays
// live on another shard for days is asked about once a grace, not at
// every collection. Only objects still candidates are kept.
type peerWaits struct {
	mu    sync.Mutex
	until map[string]int64 // key → ms before which no peer allows it
}

// due returns the keys whose wait is over (or that have none), and
// forgets the waits of keys that are no longer candidates.
func (w *peerWaits) due(keys []string, nowMs int64) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	next := make(map[string]int64)
	var out []string
	for _, k := range keys {
		if t, ok := w.until[k]; ok && nowMs < t {
			next[k] = t
			continue
		}
		out = append(out, k)
	}
	w.until = next
	return out
}

// wait records that no peer allows key before ms.
func (w *peerWaits) wait(key string, ms int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.until == nil {
		w.until = make(map[string]int64)
	}
	w.until[key] = max(w.until[key], ms)
}

// peersAllow keeps, of the keys this shard would delete, those no peer has
// live or garbage for less than the grace, and has the peers that know
// them as garbage forget them. Any peer's failure fails the round: nothing
// is deleted on a partial view. Keys a peer kept in an earlier round are
// not asked about again before they could be allowed (peerWaits).
func (c *Coordinator) peersAllow(ctx context.Context, keys []string, nowMs int64) ([]string, error) {
	if len(c.opts.ObjectPeers) == 0 || len(keys) == 0 {
		return keys, nil
	}
	keys = c.peerWait.due(keys, nowMs)
	graceMs := c.opts.GCGrace.Milliseconds()
	ok := make([]bool, len(keys))
	for i := range ok {
		ok[i] = true
	}
	known := make([][]string, len(c.opts.ObjectPeers)) // per peer: the keys it knows as garbage
	for p, peer := range c.opts.ObjectPeers {
		for from := 0; from < len(keys); from += peerBatch {
			part := keys[from:min(from+peerBatch, len(keys))]
			states, err := peer.ObjectStates(ctx, part)
			if err == nil && len(states) != len(part) {
				err = fmt.Errorf("%d states for %d keys", len(states), len(part))
			}
			if err != nil {
				return nil, fmt.Errorf("gc: ask shard %d about %d objects: %w", p+1, len(part), err)
			}
			for j, st := range states {
				switch {
				case !st.Known:
				case st.GarbageSinceMs == 0:
					ok[from+j] = false
					c.peerWait.wait(part[j], nowMs+graceMs)
				case nowMs-st.GarbageSinceMs < graceMs:
					ok[from+j] = false
					c.peerWait.wait(part[j], st.GarbageSinceMs+graceMs)
				default:
					known[p] = append(known[p], part[j])
				}
			}
		}
	}
	var out []string
	for i, k := range keys {
		if ok[i] {
			out = append(out, k)
		}
	}
	allowed := make(map[string]bool, len(out))
	for _, k := range out {
		allowed[k] = true
	}
	for p, peer := range c.opts.ObjectPeers {
		var forget []string
		for _, k := range known[p] {
			if allowed[k] {
				forget = append(forget, k)
			}
		}
		for from := 0; from < len(forget); from += peerBatch {
			kept, err := peer.ForgetObjects(ctx, forget[from:min(from+peerBatch, len(forget))])
			if err != nil {
				return nil, fmt.Errorf("gc: shard %d forgets %d objects: %w", p+1, len(forget), err)
			}
			for _, k := range kept {
				allowed[k] = false // revived there meanwhile
			}
		}
	}
	return slices.DeleteFunc(out, func(k string) bool { return !allowed[k] }), nil
}

// peersFilter keeps the orphans and garbage objects of a collection that
// the other shards allow to delete (peersAllow).
func (c *Coordinator) peersFilter(ctx context.Context, orphans []objectstore.ObjectInfo, garbage []*objectState, nowMs int64) (
	[]objectstore.ObjectInfo, []*objectState, error) {
	keys := make([]string, 0, len(orphans)+len(garbage))
	for _, o := range orphans {
		keys = append(keys, o.Key)
	}
	for _, o := range garbage {
		keys = append(keys, o.key)
	}
	allowed, err := c.peersAllow(ctx, keys, nowMs)
	if err != nil {
		return nil, nil, err
	}
	ok := make(map[string]bool, len(allowed))
	for _, k := range allowed {
		ok[k] = true
	}
	orphans = slices.DeleteFunc(orphans, func(o objectstore.ObjectInfo) bool { return !ok[o.Key] })
	garbage = slices.DeleteFunc(garbage, func(o *objectState) bool { return !ok[o.key] })
	return orphans, garbage, nil
}
