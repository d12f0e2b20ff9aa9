package sharegroups

import (
	"container/heap"
	"sync"
	"time"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/groups/share"
)

// lockScheduler orders share-partitions by their earliest record lock
// deadline, as package groups' scheduler orders groups by theirs: one live
// entry per share-partition, the one whose deadline Group.lockAt records;
// other entries are stale and skipped. An entry is pushed when a call
// leaves a share-partition with an earlier deadline than the one scheduled
// (an acquisition), and at Restore for every share-partition with acquired
// records, whose stored deadlines may have passed while the coordinator
// was down: they expire at once. A renewal or an
// acknowledgement that moves the earliest deadline later leaves the entry
// be: it runs, finds nothing due, and schedules the next. Deadlines are
// absolute milliseconds on the coordinator's clock, as stored.
//
// Lock order: the Entry's mutex, then lockScheduler.mu.
type lockScheduler struct {
	mu struct {
		sync.Mutex
		h lockHeap
	}
}

type lockEntry struct {
	atMs int64
	e    Entry
	t    tp
}

type lockHeap []lockEntry

func (h lockHeap) Len() int           { return len(h) }
func (h lockHeap) Less(i, j int) bool { return h[i].atMs < h[j].atMs }
func (h lockHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *lockHeap) Push(x any)        { *h = append(*h, x.(lockEntry)) }
func (h *lockHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = lockEntry{}
	*h = old[:len(old)-1]
	return e
}

// armLocksLocked schedules share-partition t (p) at its earliest lock
// deadline, unless one as early is scheduled already (g's mutex held).
func (g *group) armLocksLocked(t tp, p *share.Partition) {
	d, ok := p.NextDeadline()
	if !ok {
		return
	}
	s := g.s
	if cur, has := s.lockAt[t]; has && cur <= d {
		return
	}
	if s.lockAt == nil {
		s.lockAt = make(map[tp]int64)
	}
	s.lockAt[t] = d
	ls := &g.c.locks
	ls.mu.Lock()
	heap.Push(&ls.mu.h, lockEntry{atMs: d, e: g.Entry, t: t})
	first := ls.mu.h[0].atMs == d
	ls.mu.Unlock()
	if first {
		g.c.host.Wake()
	}
}

// armAllLocksLocked schedules every share-partition of the group with
// acquired records (at Restore).
func (g *group) armAllLocksLocked() {
	for id, ps := range g.s.parts {
		for n, p := range ps {
			g.armLocksLocked(tp{id, n}, p)
		}
	}
}

// ExpireLocks runs the lock deadlines that passed by now: the records
// whose lock expired become available again, or archived once their
// delivery count reached the limit, in one write per share-partition, and
// the held acquires of those partitions wake. It returns the next
// deadline (zero when none). The Host's deadline loop calls it, within a
// call (Host.Enter), with no group locked.
func (c *Coordinator) ExpireLocks(now time.Time) time.Time {
	nowMs := msOf(now)
	ls := &c.locks
	for {
		ls.mu.Lock()
		if len(ls.mu.h) == 0 {
			ls.mu.Unlock()
			return time.Time{}
		}
		if ls.mu.h[0].atMs > nowMs {
			next := time.UnixMilli(ls.mu.h[0].atMs)
			ls.mu.Unlock()
			return next
		}
		e := heap.Pop(&ls.mu.h).(lockEntry)
		ls.mu.Unlock()

		ent := e.e
		ent.Lock()
		s := ent.Share()
		if ent.Dead() || s == nil || s.lockAt[e.t] != e.atMs {
			ent.Unlock()
			continue // stale
		}
		g := c.open(ent)
		delete(s.lockAt, e.t)
		if p := s.parts[e.t.id][e.t.p]; p != nil {
			g.expireShareLocksLocked(e.t, p, nowMs)
			g.armLocksLocked(e.t, p)
		}
		ent.Unlock()
	}
}

// expireShareLocksLocked expires p's locks due at nowMs and writes the
// rows at once.
func (g *group) expireShareLocksLocked(t tp, p *share.Partition, nowMs int64) {
	res := p.ExpireLocks(nowMs)
	g.s.countLocked(t, res.Stats)
	if res.Stats.Expired > 0 {
		g.c.log.Debug("share record locks expired", "group", g.name, "topic_id", coordapi.TopicID(t.id), "partition", t.p,
			"records", res.Stats.Expired, "archived", res.Stats.ArchivedLimit)
	}
	if len(res.Rows) > 0 {
		s := g.s
		s.partRows = append(s.partRows, res.Rows...)
		if err := g.persistShareLocked(); err != nil {
			// Kept queued for the group's next write.
			g.c.log.Error("persist expired share record locks", "group", g.name, "err", err)
		}
	}
	if res.Wake {
		g.c.wait.wake(t)
	}
}
