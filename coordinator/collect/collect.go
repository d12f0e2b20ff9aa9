// Package collect is the coordinator's garbage collector: it deletes from
// the object store the objects no committed batch references once they
// have been garbage for a grace period, and the objects under the WAL and
// tiered prefixes that no coordinator state names (orphans: an upload
// whose commit died or was refused), once as old:
//
//	store.List(wal/, tiered/) ──► orphans: unknown to State, ≥ grace old
//	  (Dir: keys alone, then a Head of each unknown one for its age)
//	State.Candidates          ──► garbage: garbage ≥ grace
//	  peers (shard 0 only)    ──► keep what another shard has live or
//	                              garbage for less than the grace
//	delete orphans; for each batch of garbage: State.RemoveGarbage
//	(one synced write, skipping what a retried commit revived), then
//	delete the objects whose records it removed
//
// An object a live batch references is never deleted: its record says
// live, and State.RemoveGarbage re-checks it under the coordinator's
// commit lock, after which no commit can revive a removed record's object
// (a commit of an object older than half the grace is refused: the
// coordinator's objectage.go). The collector holds no lock of the
// coordinator's; State's methods take theirs. Its own lock (the peer
// waits') is taken alone.
package collect

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/objectstore"
)

// Store is what the garbage collector needs of the object store.
type Store interface {
	List(ctx context.Context, prefix string) ([]objectstore.ObjectInfo, error)
	Delete(ctx context.Context, key string) error
}

// Stats counts what one collection deleted.
type Stats struct {
	// Garbage is objects the coordinator knew that no batch references
	// (all batches rejected, topic or records deleted).
	Garbage int
	// Orphans is objects in the store the coordinator never committed
	// (the uploading broker died, or its commit failed).
	Orphans int
	// Bytes is the bytes deleted.
	Bytes int64
}

// Object is a garbage object of the coordinator's state: its number, key
// in the object store and size.
type Object struct {
	Num  uint64
	Key  string
	Size int64
}

// State is what the collector needs of the coordinator's object state;
// the Coordinator implements it.
type State interface {
	// Candidates returns, from one read of the state, the objects of
	// listed it does not know that are at least graceMs old at nowMs (or
	// of no known age: listed by key alone, with a zero LastModified),
	// and the objects garbage for at least graceMs.
	Candidates(listed []objectstore.ObjectInfo, nowMs, graceMs int64) (orphans []objectstore.ObjectInfo, garbage []Object)
	// RemoveGarbage deletes, in one synced write, the records of the
	// objects among nums that are still garbage, and reports which it
	// deleted: an object a retried commit revived since is kept.
	RemoveGarbage(nums []uint64) ([]bool, error)
}

// Peer is another shard of a sharded coordinator, as shard 0's collector
// asks it about the objects it is about to delete
// (docs/design/coordinator-shards.md): *rpc.Client, or a
// *coordinator.Coordinator.
type Peer interface {
	// ObjectStates answers, for each key, what the shard knows of it.
	ObjectStates(ctx context.Context, keys []string) ([]coordapi.ObjectState, error)
	// ForgetObjects drops the shard's rows of the keys that are garbage
	// there, before the objects are deleted, and returns the keys it kept
	// because they are live there (revived since they were asked about).
	ForgetObjects(ctx context.Context, keys []string) (kept []string, err error)
}

// RecordBatch is how many garbage objects' records one synced write
// removes (the collector's rounds, and ForgetObjects for shard 0's). They
// were removed one synced write each, under the commit lock: a busy
// broker's round after the grace (about 8,800 objects a minute at 20 MiB/s
// on the local directory, from the soak's 147 PUTs a second) was as many
// syncs for the produce path's commits to queue behind; the 20-minute
// soak's produce p99 was 162 ms with them, 75.5 without.
const RecordBatch = 512

// peerBatch bounds the keys of one ObjectStates or ForgetObjects call.
const peerBatch = 1000

// Collector collects the garbage of one coordinator's state. Collections
// may run concurrently (a test's beside the background loop).
type Collector struct {
	state State
	peers []Peer
	grace time.Duration
	now   func() time.Time
	log   *slog.Logger
	// waits is, on shard 0 of a sharded coordinator, when the other
	// shards may next allow each object the collector asked about and
	// they kept.
	waits peerWaits
}

// New returns the collector of state: objects are deleted once grace
// old, by the clock now, asking peers (the other shards, on shard 0)
// first.
func New(state State, peers []Peer, grace time.Duration, now func() time.Time, log *slog.Logger) *Collector {
	return &Collector{state: state, peers: peers, grace: grace, now: now, log: log}
}

// Collect deletes, from store and then from the state, every object that
// has been garbage for longer than the grace, and every object under
// <prefix>wal/ and <prefix>tiered/ older than the grace that the state
// never committed.
func (c *Collector) Collect(ctx context.Context, store Store, prefix string) (Stats, error) {
	var st Stats
	nowMs := c.now().UnixMilli()
	graceMs := c.grace.Milliseconds()

	// Orphans first, from a listing taken before the garbage pass removes
	// records, so that an object removed below is not seen as an orphan.
	listed, err := list(ctx, store, coordapi.WALPrefix(prefix))
	if err != nil {
		return st, fmt.Errorf("gc: list: %w", err)
	}
	segments, err := list(ctx, store, coordapi.TieredPrefix(prefix))
	if err != nil {
		return st, fmt.Errorf("gc: list: %w", err)
	}
	listed = append(listed, segments...)
	orphans, garbage := c.state.Candidates(listed, nowMs, graceMs)
	if orphans, err = dated(ctx, store, orphans, nowMs, graceMs); err != nil {
		return st, err
	}
	if len(c.peers) > 0 {
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
		n := min(len(garbage), RecordBatch)
		nums := make([]uint64, n)
		for i, o := range garbage[:n] {
			nums[i] = o.Num
		}
		removed, err := c.state.RemoveGarbage(nums)
		if err != nil {
			return st, err
		}
		for i, o := range garbage[:n] {
			if !removed[i] {
				continue // revived by a retried commit meanwhile
			}
			if err := store.Delete(ctx, o.Key); err != nil {
				// The record is gone, so the object is an orphan now: the
				// next collection's orphan pass deletes it.
				return st, fmt.Errorf("gc: delete garbage %s: %w", o.Key, err)
			}
			st.Garbage++
			st.Bytes += o.Size
			c.log.Info("gc: deleted garbage object", "key", o.Key, "bytes", o.Size)
		}
		garbage = garbage[n:]
	}
	return st, nil
}

// keyStore is a Store that lists keys alone (objectstore.KeyLister: Dir,
// which otherwise stats every file) and tells one object's size and time:
// the collector then asks those only of the objects its state does not
// know, a handful, instead of every object of the grace period.
type keyStore interface {
	objectstore.KeyLister
	Head(ctx context.Context, key string) (objectstore.ObjectInfo, error)
}

// list lists prefix: by key alone from a keyStore (the objects without
// sizes and times), else with List.
func list(ctx context.Context, store Store, prefix string) ([]objectstore.ObjectInfo, error) {
	if ks, ok := store.(keyStore); ok {
		keys, err := ks.ListKeys(ctx, prefix)
		if err == nil {
			infos := make([]objectstore.ObjectInfo, len(keys))
			for i, k := range keys {
				infos[i].Key = k
			}
			return infos, nil
		}
		if !errors.Is(err, errors.ErrUnsupported) {
			return nil, err
		}
	}
	return store.List(ctx, prefix)
}

// dated returns the orphan candidates at least graceMs old at nowMs, with
// their sizes: those listed by key alone are asked for (Head); one gone
// since the listing is dropped.
func dated(ctx context.Context, store Store, orphans []objectstore.ObjectInfo, nowMs, graceMs int64) ([]objectstore.ObjectInfo, error) {
	ks, _ := store.(keyStore)
	kept := orphans[:0]
	for _, o := range orphans {
		if o.LastModified.IsZero() && ks != nil {
			info, err := ks.Head(ctx, o.Key)
			if errors.Is(err, objectstore.ErrNotFound) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("gc: head %s: %w", o.Key, err)
			}
			o = info
		}
		if nowMs-o.LastModified.UnixMilli() >= graceMs {
			kept = append(kept, o)
		}
	}
	return kept, nil
}

// peerWaits remembers, of the objects the collector asked the other
// shards about and some kept, the earliest time they may allow each: a
// shard that has an object live at t cannot allow it before t + grace
// (it must first become garbage there, then wait the grace), and one that
// has it garbage since g not before g + grace. So an object that stays
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
func (c *Collector) peersAllow(ctx context.Context, keys []string, nowMs int64) ([]string, error) {
	if len(c.peers) == 0 || len(keys) == 0 {
		return keys, nil
	}
	keys = c.waits.due(keys, nowMs)
	graceMs := c.grace.Milliseconds()
	ok := make([]bool, len(keys))
	for i := range ok {
		ok[i] = true
	}
	known := make([][]string, len(c.peers)) // per peer: the keys it knows as garbage
	for p, peer := range c.peers {
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
					c.waits.wait(part[j], nowMs+graceMs)
				case nowMs-st.GarbageSinceMs < graceMs:
					ok[from+j] = false
					c.waits.wait(part[j], st.GarbageSinceMs+graceMs)
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
	for p, peer := range c.peers {
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
func (c *Collector) peersFilter(ctx context.Context, orphans []objectstore.ObjectInfo, garbage []Object, nowMs int64) (
	[]objectstore.ObjectInfo, []Object, error) {
	keys := make([]string, 0, len(orphans)+len(garbage))
	for _, o := range orphans {
		keys = append(keys, o.Key)
	}
	for _, o := range garbage {
		keys = append(keys, o.Key)
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
	garbage = slices.DeleteFunc(garbage, func(o Object) bool { return !ok[o.Key] })
	return orphans, garbage, nil
}
