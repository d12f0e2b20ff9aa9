package groups

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/groups/sharegroups"
)

// State is a classic group's state, named as Apache Kafka names it in
// DescribeGroups and ListGroups.
type State int8

// The classic group states.
const (
	// Empty: no members; the group may still hold committed offsets.
	Empty State = iota
	// PreparingRebalance: JoinGroup responses are held until every known
	// member rejoined or the rebalance timeout passed.
	PreparingRebalance
	// CompletingRebalance: members got their JoinGroup responses; followers
	// wait in SyncGroup for the leader's assignment.
	CompletingRebalance
	// Stable: the leader's assignment was handed out.
	Stable
	// Dead: the group was deleted.
	Dead
)

// String returns the state's name as Kafka spells it.
func (s State) String() string {
	switch s {
	case Empty:
		return "Empty"
	case PreparingRebalance:
		return "PreparingRebalance"
	case CompletingRebalance:
		return "CompletingRebalance"
	case Stable:
		return "Stable"
	case Dead:
		return "Dead"
	default:
		return "Unknown"
	}
}

// consumerProtocolType is the protocol type of Kafka consumers, whose
// member metadata names the subscribed topics.
const consumerProtocolType = "consumer"

// member is a classic group member.
type member struct {
	id           string
	instanceID   *string
	clientID     string
	clientHost   string
	protocolType string
	protocols    []kmsg.JoinGroupRequestProtocol
	session      time.Duration
	rebalance    time.Duration
	assignment   []byte

	// joinWait is set while the member's JoinGroup is held in a rebalance;
	// syncWait while its SyncGroup waits for the leader's. Both have room
	// for one answer, so answering never blocks.
	joinWait chan *kmsg.JoinGroupResponse
	syncWait chan *kmsg.SyncGroupResponse

	// isNew is set from the member's first JoinGroup until the rebalance
	// it joined completes; a new member expires at deadline even while it
	// waits in JoinGroup.
	isNew bool
	// deadline is when the member's session expires; zero when no
	// heartbeat is expected (it waits in JoinGroup or SyncGroup).
	deadline time.Time
}

// matches reports whether protocols are exactly the member's (names and
// metadata, in order).
func (m *member) matches(protocols []kmsg.JoinGroupRequestProtocol) bool {
	return slices.EqualFunc(m.protocols, protocols, func(a, b kmsg.JoinGroupRequestProtocol) bool {
		return a.Name == b.Name && bytes.Equal(a.Metadata, b.Metadata)
	})
}

// metadata returns the member's metadata for protocol.
func (m *member) metadata(protocol string) []byte {
	for _, p := range m.protocols {
		if p.Name == protocol {
			return p.Metadata
		}
	}
	return nil
}

// group is one consumer group: a classic group (JoinGroup/SyncGroup), or a
// KIP-848 consumer group (ConsumerGroupHeartbeat), and its committed
// offsets either way.
type group struct {
	gs   *Groups
	name string

	mu struct {
		sync.Mutex
		// dead is set once the group is removed from Groups; a caller that
		// finds it set looks the group up again.
		dead bool
		// persisted is set while a group record exists in Pebble.
		persisted bool

		state      State
		stateSince time.Time

		protocolType string
		protocol     string // selected protocol; "" when Empty
		generation   int32
		leader       string

		members map[string]*member
		// pending holds member ids handed out with MEMBER_ID_REQUIRED and
		// when each expires unless it joins.
		pending map[string]time.Time
		// static maps group.instance.id to its current member id.
		static map[string]string
		// protocols counts the members supporting each protocol name.
		protocols map[string]int
		// awaitingJoin counts members whose JoinGroup is held.
		awaitingJoin int
		// pendingSync holds the members that got a JoinGroup response of
		// the current generation but have not sent SyncGroup yet.
		pendingSync map[string]struct{}

		// joinDeadline ends the join phase of a rebalance; syncDeadline
		// ends the wait for pendingSync members. Zero when not running.
		joinDeadline time.Time
		syncDeadline time.Time
		// initialDelay is set while the first rebalance of an empty group
		// waits InitialRebalanceDelay for more members.
		initialDelay     bool
		initialCur       time.Duration
		initialRemaining time.Duration
		newMemberAdded   bool

		// subscribed is the union of the members' subscribed topics, when
		// known (protocol type "consumer" and metadata that parses).
		subscribed      map[string]struct{}
		subscribedKnown bool

		offsets map[string]map[int32]offsetRecord
		// txns holds the pending transactional offsets by producer id:
		// written by TxnOffsetCommit, made committed offsets or dropped
		// by CompleteTxnOffsets. Never an empty entry.
		txns map[int64]*txnOffsets

		// consumer is set for a KIP-848 consumer group.
		consumer *consumerGroup
		// share is set for a KIP-932 share group (package sharegroups).
		share *sharegroups.Group

		// schedAt and schedSeq name the group's entry in the scheduler;
		// zero schedAt when it has none.
		schedAt  time.Time
		schedSeq uint64
	}
}

func newGroup(gs *Groups, name string) *group {
	g := &group{gs: gs, name: name}
	g.mu.members = make(map[string]*member)
	g.mu.pending = make(map[string]time.Time)
	g.mu.static = make(map[string]string)
	g.mu.protocols = make(map[string]int)
	g.mu.offsets = make(map[string]map[int32]offsetRecord)
	g.mu.txns = make(map[int64]*txnOffsets)
	g.mu.stateSince = gs.now()
	return g
}

// setStateLocked changes the group's state and stamps when.
func (g *group) setStateLocked(s State) {
	g.mu.state = s
	g.mu.stateSince = g.gs.now()
}

// unusedLocked reports whether the group holds nothing worth keeping: no
// members, pending members, offsets (committed or transactional) or
// durable record.
func (g *group) unusedLocked() bool {
	return g.mu.state == Empty && len(g.mu.members) == 0 && len(g.mu.pending) == 0 &&
		len(g.mu.offsets) == 0 && len(g.mu.txns) == 0 && !g.mu.persisted && g.mu.consumer == nil && g.mu.share == nil
}

// sortedMembersLocked returns the members ordered by member id.
func (g *group) sortedMembersLocked() []*member {
	ms := make([]*member, 0, len(g.mu.members))
	for _, m := range g.mu.members {
		ms = append(ms, m)
	}
	slices.SortFunc(ms, func(a, b *member) int { return strings.Compare(a.id, b.id) })
	return ms
}

// validateMemberLocked checks memberID (and instanceID, for static members)
// against the group, as Kafka's ClassicGroup.validateMember.
func (g *group) validateMemberLocked(memberID string, instanceID *string) *kerr.Error {
	if instanceID != nil {
		known, ok := g.mu.static[*instanceID]
		switch {
		case !ok:
			return kerr.UnknownMemberID
		case known != memberID:
			return kerr.FencedInstanceID
		}
		return nil
	}
	if _, ok := g.mu.members[memberID]; !ok {
		return kerr.UnknownMemberID
	}
	return nil
}

// supportsProtocolsLocked reports whether a member of protocolType with
// protocols may join: anything non-empty joins an Empty group; otherwise the
// type must match and one protocol must be supported by every member.
func (g *group) supportsProtocolsLocked(protocolType string, protocols []kmsg.JoinGroupRequestProtocol) bool {
	if g.mu.state == Empty {
		return protocolType != "" && len(protocols) > 0
	}
	if g.mu.protocolType != protocolType {
		return false
	}
	for _, p := range protocols {
		if g.mu.protocols[p.Name] == len(g.mu.members) {
			return true
		}
	}
	return false
}

// selectProtocolLocked picks the protocol of the next generation: among
// those every member supports, each member votes for its most preferred;
// the most votes win, ties going to the leader's preference.
func (g *group) selectProtocolLocked() string {
	candidates := make(map[string]bool)
	for name, n := range g.mu.protocols {
		if n == len(g.mu.members) {
			candidates[name] = true
		}
	}
	votes := make(map[string]int)
	for _, m := range g.mu.members {
		for _, p := range m.protocols {
			if candidates[p.Name] {
				votes[p.Name]++
				break
			}
		}
	}
	var order []kmsg.JoinGroupRequestProtocol
	if l := g.mu.members[g.mu.leader]; l != nil {
		order = l.protocols
	}
	best, bestVotes := "", -1
	for _, p := range order {
		if candidates[p.Name] && votes[p.Name] > bestVotes {
			best, bestVotes = p.Name, votes[p.Name]
		}
	}
	for name, v := range votes { // candidates the leader does not list
		if v > bestVotes || (v == bestVotes && name < best) {
			best, bestVotes = name, v
		}
	}
	return best
}

// computeSubscribedLocked recomputes the subscribed topics from the members'
// consumer protocol metadata.
func (g *group) computeSubscribedLocked() {
	g.mu.subscribed, g.mu.subscribedKnown = nil, false
	if g.mu.protocolType != consumerProtocolType {
		return
	}
	topics := make(map[string]struct{})
	for _, m := range g.mu.members {
		var meta kmsg.ConsumerMemberMetadata
		if err := meta.ReadFrom(m.metadata(g.mu.protocol)); err != nil {
			return
		}
		for _, t := range meta.Topics {
			topics[t] = struct{}{}
		}
	}
	g.mu.subscribed, g.mu.subscribedKnown = topics, true
}

// isSubscribedLocked reports whether the group consumes topic; when the
// subscriptions are unknown, a consumer group counts as subscribed.
func (g *group) isSubscribedLocked(topic string) bool {
	if c := g.mu.consumer; c != nil {
		return c.isSubscribedLocked(topic)
	}
	if s := g.mu.share; s != nil {
		return s.IsSubscribed(topic)
	}
	if g.mu.subscribedKnown {
		_, ok := g.mu.subscribed[topic]
		return ok
	}
	return g.mu.protocolType == consumerProtocolType
}

// rebalanceTimeoutLocked is the longest rebalance timeout of the members.
func (g *group) rebalanceTimeoutLocked() time.Duration {
	var d time.Duration
	for _, m := range g.mu.members {
		d = max(d, m.rebalance)
	}
	return d
}

// allJoinedLocked reports whether every member waits in JoinGroup and no
// MEMBER_ID_REQUIRED member is still expected.
func (g *group) allJoinedLocked() bool {
	return g.mu.awaitingJoin == len(g.mu.members) && len(g.mu.pending) == 0
}

// newMemberID returns a member id as Kafka builds them: the instance id for
// static members, else the client id, then a random UUID.
func newMemberID(clientID string, instanceID *string) string {
	prefix := clientID
	if instanceID != nil {
		prefix = *instanceID
	}
	return prefix + "-" + randomUUID()
}

func randomUUID() string {
	var u [16]byte
	rand.Read(u[:])
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	var b [36]byte
	hex.Encode(b[0:8], u[0:4])
	b[8] = '-'
	hex.Encode(b[9:13], u[4:6])
	b[13] = '-'
	hex.Encode(b[14:18], u[6:8])
	b[18] = '-'
	hex.Encode(b[19:23], u[8:10])
	b[23] = '-'
	hex.Encode(b[24:], u[10:])
	return string(b[:])
}

// cloneProtocols copies protocols out of a request, whose strings and bytes
// may alias the request frame.
func cloneProtocols(ps []kmsg.JoinGroupRequestProtocol) []kmsg.JoinGroupRequestProtocol {
	out := make([]kmsg.JoinGroupRequestProtocol, len(ps))
	for i, p := range ps {
		out[i] = kmsg.JoinGroupRequestProtocol{Name: strings.Clone(p.Name), Metadata: bytes.Clone(p.Metadata)}
	}
	return out
}

func cloneStrPtr(s *string) *string {
	if s == nil {
		return nil
	}
	c := strings.Clone(*s)
	return &c
}

func strPtr(s string) *string { return &s }

// nilIfEmpty returns nil for "", else a pointer to s: Kafka's
// Optional.orElse(null).
func nilIfEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
