package groups

import (
	"time"

	"github.com/floe-io/floe/groups/members"
)

// reconcileLocked moves m towards its target assignment, as Kafka's
// CurrentAssignmentBuilder: partitions leaving m are revoked first (m keeps
// its epoch until it reports them gone); then m moves to the assignment
// epoch and gets the target partitions other members have released. owned
// is what the heartbeat reports m owns, nil when it did not say.
func (c *consumerGroup) reconcileLocked(m *consumerMember, owned members.Partitions, now time.Time) {
	wasUnrevoked, oldEpoch := m.state == memberUnrevoked, m.epoch
	switch {
	case m.state == memberStable && m.epoch == c.assignmentEpoch:
	case m.state == memberUnrevoked && ownsAny(m.revoking, owned):
		// Still waiting for the member to give partitions back.
	default:
		c.computeNextLocked(m, owned)
	}
	switch {
	case m.state != memberUnrevoked:
		m.revokeBy = time.Time{}
	case !wasUnrevoked || m.epoch != oldEpoch || m.revokeBy.IsZero():
		m.revokeBy = now.Add(m.rebalance)
	}
}

// ownsAny reports whether owned still holds one of pending; a member that
// did not report what it owns is taken to still own everything.
func ownsAny(pending, owned members.Partitions) bool {
	if len(pending) == 0 {
		return false
	}
	if owned == nil {
		return true
	}
	return pending.Intersects(owned)
}

// computeNextLocked is Kafka's CurrentAssignmentBuilder.computeNextAssignment.
func (c *consumerGroup) computeNextLocked(m *consumerMember, owned members.Partitions) {
	keep, revoke, add := members.Partitions{}, members.Partitions{}, members.Partitions{}
	unreleased := false
	ids := make(map[topicID]bool)
	for id := range m.target {
		ids[id] = true
	}
	for id := range m.assigned {
		ids[id] = true
	}
	for id := range ids {
		for _, p := range m.assigned[id] {
			if m.target.Has(id, p) {
				keep.Add(id, p)
			} else {
				revoke.Add(id, p)
			}
		}
		for _, p := range m.target[id] {
			if m.assigned.Has(id, p) {
				continue
			}
			// A partition still held by another member waits
			// until that member revoked it.
			if owner := c.owners[id][p]; owner == "" || owner == m.id {
				add.Add(id, p)
			} else {
				unreleased = true
			}
		}
	}
	switch {
	case len(revoke) > 0 && ownsAny(revoke, owned):
		m.state = memberUnrevoked
		m.prevEpoch = m.epoch
		c.setAssignmentLocked(m, keep, revoke, m.epoch)
	default:
		for id, l := range add {
			for _, p := range l {
				keep.Add(id, p)
			}
		}
		m.state = memberStable
		if unreleased {
			m.state = memberUnreleased
		}
		if m.epoch != c.assignmentEpoch {
			m.prevEpoch, m.epoch = m.epoch, c.assignmentEpoch
		}
		c.setAssignmentLocked(m, keep, members.Partitions{}, m.epoch)
	}
}
