package groups

import (
	"time"

	"github.com/floe-io/floe/coordapi"
)

// Record locks expire on the group scheduler (sched.go): a share group's
// next deadline is the earlier of its members' sessions and its
// share-partitions' lock deadlines, so each group has one entry in the
// heap at its earliest deadline, re-armed after every acquisition and at
// Open (restoreShareLocked), where locks that ran out while the
// coordinator was down expire at once. Deadlines are absolute milliseconds
// on the coordinator's clock, as they are stored.

// nextLockDeadlineLocked is the earliest lock deadline of the group's
// acquired records; zero when none are acquired.
func (s *shareGroup) nextLockDeadlineLocked() time.Time {
	var next int64
	found := false
	for _, ps := range s.parts {
		for _, p := range ps {
			if d, ok := p.NextDeadline(); ok && (!found || d < next) {
				next, found = d, true
			}
		}
	}
	if !found {
		return time.Time{}
	}
	return time.UnixMilli(next)
}

// expireShareLocksLocked makes the records whose lock expired by now
// available again, or archived once their delivery count reached the
// limit, queues the rows for the group's next write and wakes the held
// acquires of those partitions. It reports whether anything changed.
func (g *group) expireShareLocksLocked(now time.Time) bool {
	s := g.mu.share
	nowMs := msOf(now)
	var woken []tp
	changed := false
	for id, ps := range s.parts {
		for n, p := range ps {
			if d, ok := p.NextDeadline(); !ok || d > nowMs {
				continue
			}
			res := p.ExpireLocks(nowMs)
			if res.Stats.Expired > 0 {
				g.gs.log.Debug("share record locks expired", "group", g.name, "topic_id", coordapi.TopicID(id), "partition", n, "records", res.Stats.Expired, "archived", res.Stats.ArchivedLimit)
			}
			if len(res.Rows) > 0 {
				s.partRows = append(s.partRows, res.Rows...)
				changed = true
			}
			if res.Wake {
				woken = append(woken, tp{id, n})
			}
		}
	}
	if len(woken) > 0 {
		g.gs.shareWait.wake(woken...)
	}
	return changed
}
