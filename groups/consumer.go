package groups

import (
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/groups/members"
)

// KIP-848 consumer group states, as Kafka names them.
const (
	consumerEmpty       = "Empty"
	consumerAssigning   = "Assigning"
	consumerReconciling = "Reconciling"
	consumerStable      = "Stable"
)

// staticLeftEpoch is the member epoch of a static member that left for a
// while (a restart): its partitions stay reserved until it rejoins or its
// session expires.
const staticLeftEpoch = -2

// memberState is where a KIP-848 member is in reconciling towards its
// target assignment (Kafka's MemberState).
type memberState int8

const (
	// memberStable: the member owns its target assignment, or all of it
	// that other members have released.
	memberStable memberState = iota
	// memberUnrevoked: the member must give partitions back first; its
	// epoch stays until it reports them gone.
	memberUnrevoked
	// memberUnreleased: partitions of its target are still held by
	// other members.
	memberUnreleased
)

// consumerGroup is the state of a KIP-848 consumer group (g.mu held for
// all of it).
type consumerGroup struct {
	// epoch is the group epoch, bumped by every membership, subscription
	// or subscribed-topic change; assignmentEpoch is the epoch the target
	// assignment was computed at (behind epoch: Assigning).
	epoch           int32
	assignmentEpoch int32
	// assignor is the server assignor the members prefer ("uniform" or
	// "range").
	assignor string
	members  map[string]*consumerMember
	// static maps group.instance.id to its member id.
	static map[string]string
	// owners maps each partition a member is assigned or still revoking
	// to that member: a partition is handed to a new member only once
	// its previous owner released it.
	owners map[topicID]map[int32]string
	// metaSig describes the subscribed topics' metadata the target was
	// computed from; a change (new partitions, a new matching topic)
	// bumps the epoch.
	metaSig string
	// sigSnap is the topic snapshot metaSig was last checked against.
	sigSnap    *topicSnapshot
	emptySince time.Time

	// What was last written (consumer_store.go): the epoch, the group
	// record and state values; dirty names the members changed (or
	// removed) since, dirtyAll says every member's target may have.
	persistedEpoch int32
	writtenGroup   []byte
	writtenState   []byte
	dirty          map[string]struct{}
	dirtyAll       bool
}

// consumerMember is a KIP-848 group member.
type consumerMember struct {
	id         string
	instanceID *string
	rackID     *string
	clientID   string
	clientHost string

	epoch     int32
	prevEpoch int32
	state     memberState
	rebalance time.Duration
	assignor  string

	topics []string // subscribed topic names, sorted
	regex  string
	re     *regexp.Regexp

	target   members.Partitions // what the assignor gives it
	assigned members.Partitions // what it was told to own
	revoking members.Partitions // what it must give back before moving on
	// since holds the member epoch at which each partition it holds
	// (assigned or revoking) was assigned to it (KIP-1251): a commit at
	// an older epoch is accepted for partitions held since then.
	since map[topicID]map[int32]int32

	// session is when the member expires without a heartbeat; revokeBy
	// when it is fenced for not giving partitions back (zero unless
	// memberUnrevoked).
	session  time.Time
	revokeBy time.Time

	// written is the member's record as last written; nil when none.
	written []byte
}

func newConsumerGroup(epoch int32, now time.Time) *consumerGroup {
	return &consumerGroup{
		epoch:           epoch,
		assignmentEpoch: epoch,
		persistedEpoch:  epoch,
		assignor:        "uniform",
		members:         make(map[string]*consumerMember),
		static:          make(map[string]string),
		owners:          make(map[topicID]map[int32]string),
		emptySince:      now,
	}
}

func (c *consumerGroup) emptyLocked() bool { return len(c.members) == 0 }

// stateLocked is the group state as ListGroups and the describes show it.
func (c *consumerGroup) stateLocked() string {
	if len(c.members) == 0 {
		return consumerEmpty
	}
	if c.epoch > c.assignmentEpoch {
		return consumerAssigning
	}
	for _, m := range c.members {
		if m.epoch == staticLeftEpoch {
			continue
		}
		if m.state != memberStable || m.epoch != c.assignmentEpoch {
			return consumerReconciling
		}
	}
	return consumerStable
}

func (c *consumerGroup) sortedMembersLocked() []*consumerMember {
	ms := make([]*consumerMember, 0, len(c.members))
	for _, m := range c.members {
		ms = append(ms, m)
	}
	slices.SortFunc(ms, func(a, b *consumerMember) int { return strings.Compare(a.id, b.id) })
	return ms
}

// subscribedLocked resolves m's subscription against snap: the named
// topics that exist and every topic the regex matches in full.
func (m *consumerMember) subscribedLocked(snap *topicSnapshot) map[string]bool {
	out := make(map[string]bool)
	for _, t := range m.topics {
		if _, ok := snap.byName[t]; ok {
			out[t] = true
		}
	}
	if m.re != nil {
		for t := range snap.byName {
			if m.re.MatchString(t) {
				out[t] = true
			}
		}
	}
	return out
}

// isSubscribedLocked reports whether any member subscribes to topic.
func (c *consumerGroup) isSubscribedLocked(topic string) bool {
	for _, m := range c.members {
		if slices.Contains(m.topics, topic) || (m.re != nil && m.re.MatchString(topic)) {
			return true
		}
	}
	return false
}

// setAssignmentLocked replaces m's assigned and revoking partitions, moves
// their ownership, and stamps the partitions new to m with epoch.
func (c *consumerGroup) setAssignmentLocked(m *consumerMember, assigned, revoking members.Partitions, epoch int32) {
	c.releaseLocked(m)
	since := make(map[topicID]map[int32]int32)
	for _, ps := range []members.Partitions{assigned, revoking} {
		for id, l := range ps {
			if since[id] == nil {
				since[id] = make(map[int32]int32, len(l))
			}
			for _, p := range l {
				e, ok := m.since[id][p]
				if !ok {
					e = epoch
				}
				since[id][p] = e
			}
		}
	}
	m.assigned, m.revoking, m.since = assigned, revoking, since
	c.markLocked(m.id)
	c.claimLocked(m, m.assigned)
	c.claimLocked(m, m.revoking)
}

// releaseLocked drops m's ownership of everything it holds.
func (c *consumerGroup) releaseLocked(m *consumerMember) {
	for _, ps := range []members.Partitions{m.assigned, m.revoking} {
		for id, l := range ps {
			owners := c.owners[id]
			for _, p := range l {
				if owners[p] == m.id {
					delete(owners, p)
				}
			}
			if len(owners) == 0 {
				delete(c.owners, id)
			}
		}
	}
}

func (c *consumerGroup) claimLocked(m *consumerMember, ps members.Partitions) {
	for id, l := range ps {
		owners := c.owners[id]
		if owners == nil {
			owners = make(map[int32]string)
			c.owners[id] = owners
		}
		for _, p := range l {
			owners[p] = m.id
		}
	}
}

// removeMemberLocked drops m and frees its partitions; the caller bumps
// the epoch.
func (c *consumerGroup) removeMemberLocked(m *consumerMember, now time.Time) {
	c.releaseLocked(m)
	delete(c.members, m.id)
	c.markLocked(m.id)
	if m.instanceID != nil && c.static[*m.instanceID] == m.id {
		delete(c.static, *m.instanceID)
	}
	if len(c.members) == 0 {
		c.emptySince = now
	}
}

// nextDeadlineLocked is the earliest session or revocation deadline.
func (c *consumerGroup) nextDeadlineLocked() time.Time {
	var next time.Time
	for _, m := range c.members {
		for _, t := range []time.Time{m.session, m.revokeBy} {
			if !t.IsZero() && (next.IsZero() || t.Before(next)) {
				next = t
			}
		}
	}
	return next
}

// expireConsumerLocked fences members whose session expired or that did
// not give partitions back within their rebalance timeout. The target
// assignment is recomputed at the next heartbeat (the group is Assigning
// until then).
func (g *group) expireConsumerLocked(now time.Time) {
	c := g.mu.consumer
	removed := false
	for _, m := range c.sortedMembersLocked() {
		switch {
		case !m.session.IsZero() && !now.Before(m.session):
			g.gs.log.Info("consumer group member session expired, fencing it", "group", g.name, "member_id", m.id, "member_epoch", m.epoch)
		case !m.revokeBy.IsZero() && !now.Before(m.revokeBy):
			g.gs.log.Info("consumer group member did not revoke partitions within its rebalance timeout, fencing it", "group", g.name, "member_id", m.id, "member_epoch", m.epoch)
		default:
			continue
		}
		c.removeMemberLocked(m, now)
		removed = true
	}
	if removed {
		c.epoch++
		if err := g.persistConsumerLocked(); err != nil {
			g.gs.log.Error("persist consumer group", "group", g.name, "err", err)
		}
	}
}

// validateConsumerCommitLocked checks an OffsetCommit against a KIP-848
// group, as Kafka 4.3's ConsumerGroup.validateOffsetCommit (KIP-1251): a
// member commits with v9+ at its current epoch, or at an older one for the
// partitions it has held since that epoch (a heartbeat moved it on before
// it heard); else STALE_MEMBER_EPOCH, for the request or per partition
// (the returned check, nil when every partition passes). The check finds a
// topic by the id the broker resolved for the commit (TopicID), else by
// name in the group's last topic snapshot (none right after a restart,
// until the group's first heartbeat).
func (g *group) validateConsumerCommitLocked(req *kmsg.OffsetCommitRequest) (*kerr.Error, func(topic string, id topicID, p int32) *kerr.Error) {
	return g.validateConsumerMemberCommitLocked(req.MemberID, req.Generation, false, req.Version)
}

// validateConsumerMemberCommitLocked is validateConsumerCommitLocked for
// the commit of memberID at epoch; a transactional commit (TxnOffsetCommit,
// any version) answers ILLEGAL_GENERATION where OffsetCommit answers
// STALE_MEMBER_EPOCH, as Kafka's OffsetMetadataManager.
func (g *group) validateConsumerMemberCommitLocked(memberID string, epoch int32, txn bool, version int16) (*kerr.Error, func(topic string, id topicID, p int32) *kerr.Error) {
	stale := kerr.StaleMemberEpoch
	if txn {
		stale = kerr.IllegalGeneration
	}
	c := g.mu.consumer
	if epoch < 0 && len(c.members) == 0 {
		return nil, nil // admin or manual commit to an empty group
	}
	m := c.members[memberID]
	if m == nil {
		return kerr.UnknownMemberID, nil
	}
	if !txn && version < 9 {
		return kerr.UnsupportedVersion, nil
	}
	switch {
	case epoch == m.epoch:
		return nil, nil
	case epoch > m.epoch:
		return stale, nil
	}
	snap := c.sigSnap // names every topic the member can hold
	return nil, func(topic string, id topicID, p int32) *kerr.Error {
		if id == (topicID{}) {
			if snap == nil {
				return stale
			}
			tm, ok := snap.byName[topic]
			if !ok {
				return stale
			}
			id = tm.id
		}
		if e, ok := m.since[id][p]; !ok || e > epoch {
			return stale
		}
		return nil
	}
}

// validateConsumerFetchLocked checks an OffsetFetch v9+ naming a member of
// a KIP-848 group; admin fetches (no member, epoch -1) pass.
func (g *group) validateConsumerFetchLocked(rg kmsg.OffsetFetchRequestGroup) *kerr.Error {
	if rg.MemberID == nil && rg.MemberEpoch < 0 {
		return nil
	}
	var m *consumerMember
	if rg.MemberID != nil {
		m = g.mu.consumer.members[*rg.MemberID]
	}
	if m == nil {
		return kerr.UnknownMemberID
	}
	if rg.MemberEpoch != m.epoch {
		return kerr.StaleMemberEpoch
	}
	return nil
}
