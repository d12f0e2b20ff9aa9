package sharegroups

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/groups/members"
	"github.com/floe-io/floe/groups/share"
)

// topicID is a topic's UUID, as KIP-932 requests name topics.
type topicID = members.TopicID

// Share group states, as Kafka's ShareGroup names them.
const (
	shareEmpty  = "Empty"
	shareStable = "Stable"
)

// Share group names, as ListGroups, DescribeGroups and
// ShareGroupDescribe show them.
const (
	// GroupType is a share group's type in ListGroups (v5+).
	GroupType = "share"
	// ProtocolType is a share group's protocol type in ListGroups and
	// its group record.
	ProtocolType   = "share"
	assignorSimple = "simple"
)

// PartitionReader reads a partition's log start offset and high watermark,
// and the first offset at or after a timestamp; *coordinator.Coordinator
// implements it. A share group's partitions start from it
// (share.auto.offset.reset).
type PartitionReader interface {
	PartitionState(ctx context.Context, id coordapi.TopicID, partition int32) (coordapi.PartitionState, error)
	ListOffset(ctx context.Context, id coordapi.TopicID, partition int32, timestamp int64) (offset, ts int64, err error)
}

// Group is the state of a KIP-932 share group, guarded by its Entry's
// mutex (held for all of it, the methods included): its members, the simple assignor's target assignment, and the
// share-partitions started so far.
type Group struct {
	// epoch is the group epoch, bumped by every membership, subscription
	// or subscribed-topic change; assignmentEpoch is the epoch the target
	// assignment was computed at.
	epoch           int32
	assignmentEpoch int32
	members         map[string]*member
	// metaSig describes the subscribed topics' metadata the target was
	// computed from (as consumerGroup.metaSig).
	metaSig    string
	sigSnap    Topics
	emptySince time.Time

	// parts are the group's share-partitions, by topic id and partition,
	// started when a partition first entered the target assignment.
	parts map[topicID]map[int32]*share.Partition

	// What was last written (store.go), as in package groups'
	// consumerGroup.
	persistedEpoch int32
	writtenGroup   []byte
	writtenState   []byte
	dirty          map[string]struct{}
	// startErr is why each partition of the target assignment whose
	// share-partition could not be started failed (its offsets could not
	// be read); ShareAcquire answers it, until a heartbeat starts it.
	startErr map[tp]error
	// partRows are share-partition rows to write with the next persist
	// (partitions started since the last one).
	partRows []share.Mutation
	// releases counts the ShareReleases of each member through each
	// broker (releaseKey): a held ShareAcquire of that member and broker
	// that began before one gives up instead of acquiring records nobody
	// would deliver (fetch.go). Dropped with the member.
	releases map[string]uint64
	// lockAt is each share-partition's scheduled lock deadline (ms), the
	// one live entry of the lock scheduler (sched.go).
	lockAt map[tp]int64
	// counts are the records the group's operations moved, by topic, for
	// the metrics (metrics.go).
	counts map[topicID]*Counts
}

// releaseKey names a member's records acquired through one broker.
func releaseKey(member string, via int32) string {
	return fmt.Sprintf("%s\x00%d", member, via)
}

// member is a share group member. There is no revocation: a member
// takes its target assignment at its next heartbeat.
type member struct {
	id         string
	rackID     *string
	clientID   string
	clientHost string

	epoch     int32
	prevEpoch int32
	topics    []string // subscribed topic names, sorted

	target   members.Partitions // what the assignor gives it
	assigned members.Partitions // what it was told it has

	// session is when the member is removed without a heartbeat.
	session time.Time
	// written is the member's record as last written; nil when none.
	written []byte
}

func newGroup(epoch int32, now time.Time) *Group {
	return &Group{
		epoch:           epoch,
		assignmentEpoch: epoch,
		persistedEpoch:  epoch,
		members:         make(map[string]*member),
		parts:           make(map[topicID]map[int32]*share.Partition),
		emptySince:      now,
	}
}

// Empty reports that the group has no members.
func (s *Group) Empty() bool { return len(s.members) == 0 }

// State is the group state as ListGroups and the describes show it:
// share groups are Empty or Stable (members take their targets at once).
func (s *Group) State() string {
	if len(s.members) == 0 {
		return shareEmpty
	}
	return shareStable
}

func (s *Group) sortedMembersLocked() []*member {
	ms := make([]*member, 0, len(s.members))
	for _, m := range s.members {
		ms = append(ms, m)
	}
	slices.SortFunc(ms, func(a, b *member) int { return strings.Compare(a.id, b.id) })
	return ms
}

func (s *Group) markLocked(id string) {
	if s.dirty == nil {
		s.dirty = make(map[string]struct{})
	}
	s.dirty[id] = struct{}{}
}

// IsSubscribed reports whether any member subscribes to topic.
func (s *Group) IsSubscribed(topic string) bool {
	for _, m := range s.members {
		if slices.Contains(m.topics, topic) {
			return true
		}
	}
	return false
}

// NextDeadline is the earliest session deadline, zero when none (record
// locks have their own scheduler, sched.go): the host's deadline loop
// calls Coordinator.Expire on the group by then.
func (s *Group) NextDeadline() time.Time {
	var next time.Time
	for _, m := range s.members {
		if !m.session.IsZero() && (next.IsZero() || m.session.Before(next)) {
			next = m.session
		}
	}
	return next
}

// metaSigLocked describes the metadata of the topics the members
// subscribe to: their ids and partition counts.
func (s *Group) metaSigLocked(snap Topics) string {
	names := map[string]bool{}
	for _, m := range s.members {
		for _, t := range m.topics {
			names[t] = true
		}
	}
	var b bytes.Buffer
	for _, t := range slices.Sorted(maps.Keys(names)) {
		tm, ok := snap.Topic(t)
		if !ok {
			continue
		}
		b.WriteString(t)
		b.WriteByte(0)
		b.Write(tm.ID[:])
		b.WriteByte(byte(tm.Partitions >> 24))
		b.WriteByte(byte(tm.Partitions >> 16))
		b.WriteByte(byte(tm.Partitions >> 8))
		b.WriteByte(byte(tm.Partitions))
	}
	return b.String()
}

// metadataChangedLocked reports whether the subscribed topics' metadata
// changed since the target was computed.
func (s *Group) metadataChangedLocked(snap Topics) bool {
	if snap == s.sigSnap {
		return false
	}
	s.sigSnap = snap
	return s.metaSigLocked(snap) != s.metaSig
}

// computeTargetLocked runs the simple assignor at the group epoch.
func (s *Group) computeTargetLocked(snap Topics) {
	ms := s.sortedMembersLocked()
	subs := make([][]tp, len(ms))
	prev := make([]members.Partitions, len(ms))
	for i, m := range ms {
		for _, t := range m.topics {
			tm, ok := snap.Topic(t)
			if !ok {
				continue
			}
			for p := range tm.Partitions {
				subs[i] = append(subs[i], tp{topicID(tm.ID), p})
			}
		}
		slices.SortFunc(subs[i], tp.compare)
		prev[i] = m.target
	}
	targets := simpleAssign(subs, prev)
	for i, m := range ms {
		if !m.target.Equal(targets[i]) {
			m.target = targets[i]
			s.markLocked(m.id)
		}
	}
	s.assignmentEpoch = s.epoch
	s.metaSig = s.metaSigLocked(snap)
	s.sigSnap = snap
}
