package groups

import (
	"cmp"
	"crypto/sha256"
	"fmt"
	"slices"
	"strings"

	"github.com/floe-io/floe/groups/members"
)

// Server assignors of KIP-848 groups.
const (
	assignorUniform = "uniform"
	assignorRange   = "range"
)

func validAssignor(name string) bool { return name == assignorUniform || name == assignorRange }

// preferredAssignorLocked is the server assignor most members ask for
// (uniform when none asks, and on a tie).
func (c *consumerGroup) preferredAssignorLocked() string {
	votes := map[string]int{}
	for _, m := range c.members {
		if m.assignor != "" {
			votes[m.assignor]++
		}
	}
	if votes[assignorRange] > votes[assignorUniform] {
		return assignorRange
	}
	return assignorUniform
}

// metaSigLocked describes the metadata of every subscribed topic; the
// target is recomputed when it changes. It is a SHA-256 digest (as Kafka
// 4.1's metadata hash), so that it is small enough to be written down with
// the group: a topic that changed while the coordinator was down is then
// noticed at the first heartbeat after a restart.
func (c *consumerGroup) metaSigLocked(snap *topicSnapshot) string {
	topics := map[string]bool{}
	for _, m := range c.members {
		for t := range m.subscribedLocked(snap) {
			topics[t] = true
		}
	}
	names := make([]string, 0, len(topics))
	for t := range topics {
		names = append(names, t)
	}
	if len(names) == 0 {
		return ""
	}
	slices.Sort(names)
	h := sha256.New()
	for _, t := range names {
		tm := snap.byName[t]
		fmt.Fprintf(h, "%s/%x/%d;", t, tm.id, tm.partitions)
	}
	return string(h.Sum(nil))
}

// assignTP is one partition to assign.
type assignTP struct {
	topic string
	id    topicID
	p     int32
}

// computeTargetLocked recomputes every member's target assignment at the
// current group epoch.
func (c *consumerGroup) computeTargetLocked(snap *topicSnapshot) {
	c.assignor = c.preferredAssignorLocked()
	ms := c.sortedMembersLocked()
	subs := make(map[string]map[string]bool, len(ms))
	all := map[string]bool{}
	for _, m := range ms {
		subs[m.id] = m.subscribedLocked(snap)
		for t := range subs[m.id] {
			all[t] = true
		}
	}
	var tps []assignTP
	for t := range all {
		tm := snap.byName[t]
		for p := range tm.partitions {
			tps = append(tps, assignTP{topic: t, id: tm.id, p: p})
		}
	}
	slices.SortFunc(tps, func(a, b assignTP) int { return cmp.Or(strings.Compare(a.topic, b.topic), cmp.Compare(a.p, b.p)) })
	var targets map[string]members.Partitions
	if c.assignor == assignorRange {
		targets = assignRange(ms, subs, tps)
	} else {
		targets = assignUniform(ms, subs, tps)
	}
	for _, m := range ms {
		m.target = targets[m.id]
		if m.target == nil {
			m.target = members.Partitions{}
		}
	}
	c.assignmentEpoch = c.epoch
	c.metaSig, c.sigSnap = c.metaSigLocked(snap), snap
	c.dirtyAll = true
}

// metadataChangedLocked reports whether the subscribed topics' metadata
// differs from what the target was computed from; it looks again only when
// the snapshot is new.
func (c *consumerGroup) metadataChangedLocked(snap *topicSnapshot) bool {
	if snap == c.sigSnap {
		return false
	}
	if c.metaSigLocked(snap) != c.metaSig {
		return true
	}
	c.sigSnap = snap
	return false
}

// assignUniform spreads the partitions evenly over the members subscribed
// to them, sticking to the current targets: valid targets are kept,
// unassigned partitions go to the least loaded eligible member, then
// partitions move one at a time from a member to an eligible one with at
// least two fewer, until none can.
func assignUniform(ms []*consumerMember, subs map[string]map[string]bool, tps []assignTP) map[string]members.Partitions {
	out := make(map[string]members.Partitions, len(ms))
	load := make(map[string]int, len(ms))
	owner := make(map[assignTP]string, len(tps))
	valid := make(map[assignTP]bool, len(tps))
	for _, tp := range tps {
		valid[tp] = true
	}
	for _, m := range ms {
		out[m.id] = members.Partitions{}
		for _, tp := range tps {
			if m.target.Has(tp.id, tp.p) && subs[m.id][tp.topic] && owner[tp] == "" {
				owner[tp] = m.id
				out[m.id].Add(tp.id, tp.p)
				load[m.id]++
			}
		}
	}
	leastLoaded := func(tp assignTP) string {
		best := ""
		for _, m := range ms {
			if subs[m.id][tp.topic] && (best == "" || load[m.id] < load[best]) {
				best = m.id
			}
		}
		return best
	}
	move := func(tp assignTP, to string) {
		if from := owner[tp]; from != "" {
			l := out[from][tp.id]
			if i, ok := slices.BinarySearch(l, tp.p); ok {
				out[from][tp.id] = slices.Delete(l, i, i+1)
				if len(out[from][tp.id]) == 0 {
					delete(out[from], tp.id)
				}
			}
			load[from]--
		}
		owner[tp] = to
		out[to].Add(tp.id, tp.p)
		load[to]++
	}
	for _, tp := range tps {
		if owner[tp] == "" {
			if to := leastLoaded(tp); to != "" {
				move(tp, to)
			}
		}
	}
	for moved := true; moved; {
		moved = false
		// Take from the most loaded members first, their last
		// partitions first, so that the result does not depend on
		// map order.
		for i := len(tps) - 1; i >= 0; i-- {
			tp := tps[i]
			from := owner[tp]
			to := leastLoaded(tp)
			if from != "" && to != "" && load[from]-load[to] >= 2 {
				move(tp, to)
				moved = true
			}
		}
	}
	return out
}

// assignRange gives each member a contiguous range of each topic it
// subscribes to, the first members one more when the partitions do not
// divide evenly. Static members come first, by instance id, then dynamic
// ones by member id.
func assignRange(ms []*consumerMember, subs map[string]map[string]bool, tps []assignTP) map[string]members.Partitions {
	ordered := slices.Clone(ms)
	slices.SortFunc(ordered, func(a, b *consumerMember) int {
		switch {
		case a.instanceID != nil && b.instanceID != nil:
			return strings.Compare(*a.instanceID, *b.instanceID)
		case a.instanceID != nil:
			return -1
		case b.instanceID != nil:
			return 1
		}
		return strings.Compare(a.id, b.id)
	})
	out := make(map[string]members.Partitions, len(ms))
	for _, m := range ms {
		out[m.id] = members.Partitions{}
	}
	for start := 0; start < len(tps); {
		end := start
		for end < len(tps) && tps[end].topic == tps[start].topic {
			end++
		}
		topic := tps[start:end]
		var eligible []*consumerMember
		for _, m := range ordered {
			if subs[m.id][topic[0].topic] {
				eligible = append(eligible, m)
			}
		}
		if n := len(eligible); n > 0 {
			quota, extra := len(topic)/n, len(topic)%n
			next := 0
			for i, m := range eligible {
				q := quota
				if i < extra {
					q++
				}
				for _, tp := range topic[next : next+q] {
					out[m.id].Add(tp.id, tp.p)
				}
				next += q
			}
		}
		start = end
	}
	return out
}
