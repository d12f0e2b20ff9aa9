package groups

import (
	"container/heap"
	"context"
	"sync"
	"time"
)

// scheduler orders the groups by their next deadline (a session expiring,
// a rebalance's join or sync phase ending). Each group has at most one live
// entry, named by its sequence number; superseded entries are skipped.
type scheduler struct {
	mu struct {
		sync.Mutex
		h   deadlineHeap
		seq uint64
	}
	// wake tells the loop that the earliest deadline moved earlier.
	wake chan struct{}
}

type deadlineEntry struct {
	at  time.Time
	seq uint64
	g   *group
}

type deadlineHeap []deadlineEntry

func (h deadlineHeap) Len() int           { return len(h) }
func (h deadlineHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h deadlineHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *deadlineHeap) Push(x any)        { *h = append(*h, x.(deadlineEntry)) }
func (h *deadlineHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = deadlineEntry{}
	*h = old[:len(old)-1]
	return e
}

func (s *scheduler) init() { s.wake = make(chan struct{}, 1) }

// wakeAtLocked makes sure the group is looked at by t (g.mu held): it adds
// an entry when t is earlier than the group's current one.
func (g *group) wakeAtLocked(t time.Time) {
	if t.IsZero() || (!g.mu.schedAt.IsZero() && !t.Before(g.mu.schedAt)) {
		return
	}
	s := &g.gs.sched
	s.mu.Lock()
	s.mu.seq++
	g.mu.schedAt, g.mu.schedSeq = t, s.mu.seq
	heap.Push(&s.mu.h, deadlineEntry{at: t, seq: s.mu.seq, g: g})
	first := s.mu.h[0].seq == s.mu.seq
	s.mu.Unlock()
	if first {
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
}

// nextDeadlineLocked is the group's earliest deadline, zero when none.
func (g *group) nextDeadlineLocked() time.Time {
	var next time.Time
	at := func(t time.Time) {
		if !t.IsZero() && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	at(g.mu.joinDeadline)
	at(g.mu.syncDeadline)
	for _, t := range g.mu.pending {
		at(t)
	}
	for _, m := range g.mu.members {
		at(m.deadline)
	}
	if c := g.mu.consumer; c != nil {
		at(c.nextDeadlineLocked())
	}
	if s := g.mu.share; s != nil {
		at(s.NextDeadline())
	}
	return next
}

// expire runs every deadline that has passed, the groups' and the share
// record locks', and returns the next one (zero when none).
func (gs *Groups) expire() time.Time {
	if !gs.enter() {
		return time.Time{}
	}
	defer gs.leave()
	now := gs.now()
	nextLock := gs.shares.ExpireLocks(now)
	earlier := func(t time.Time) time.Time {
		if nextLock.IsZero() || (!t.IsZero() && t.Before(nextLock)) {
			return t
		}
		return nextLock
	}
	s := &gs.sched
	for {
		s.mu.Lock()
		if len(s.mu.h) == 0 {
			s.mu.Unlock()
			return earlier(time.Time{})
		}
		if s.mu.h[0].at.After(now) {
			next := s.mu.h[0].at
			s.mu.Unlock()
			return earlier(next)
		}
		e := heap.Pop(&s.mu.h).(deadlineEntry)
		s.mu.Unlock()

		g := e.g
		g.mu.Lock()
		if g.mu.dead || g.mu.schedSeq != e.seq {
			g.mu.Unlock()
			continue
		}
		g.mu.schedAt, g.mu.schedSeq = time.Time{}, 0
		g.expireLocked(now)
		if g.mu.consumer != nil {
			g.expireConsumerLocked(now)
		}
		if g.mu.share != nil {
			gs.shares.Expire(g, now)
		}
		g.wakeAtLocked(g.nextDeadlineLocked())
		g.mu.Unlock()
	}
}

// run drives expire and the offset retention pass until ctx ends.
func (gs *Groups) run(ctx context.Context) {
	defer close(gs.done)
	if gs.opts.manualExpiry {
		<-ctx.Done()
		return
	}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	nextRetention := gs.now().Add(gs.opts.RetentionCheckInterval)
	for {
		next := gs.expire()
		now := gs.now()
		if !now.Before(nextRetention) {
			gs.expireOffsets()
			nextRetention = now.Add(gs.opts.RetentionCheckInterval)
		}
		wait := nextRetention.Sub(now)
		if !next.IsZero() {
			wait = min(wait, next.Sub(now))
		}
		timer.Reset(max(wait, 0))
		select {
		case <-ctx.Done():
			return
		case <-gs.sched.wake:
			if !timer.Stop() {
				select {
				case <-timer.C:
				default:
				}
			}
		case <-timer.C:
		}
	}
}
