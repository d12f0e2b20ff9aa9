package groups

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/groups/share"
)

// Share group states, as Kafka's ShareGroup names them.
const (
	shareEmpty  = "Empty"
	shareStable = "Stable"
)

// Share group names, as ListGroups, DescribeGroups and
// ShareGroupDescribe show them.
const (
	typeShare         = "share"
	shareProtocolType = "share"
	assignorSimple    = "simple"
)

// PartitionReader reads a partition's log start offset and high watermark,
// and the first offset at or after a timestamp; *coordinator.Coordinator
// implements it. A share group's partitions start from it
// (share.auto.offset.reset).
type PartitionReader interface {
	PartitionState(ctx context.Context, id coordapi.TopicID, partition int32) (coordapi.PartitionState, error)
	ListOffset(ctx context.Context, id coordapi.TopicID, partition int32, timestamp int64) (offset, ts int64, err error)
}

// shareGroup is the state of a KIP-932 share group (g.mu held for all of
// it): its members, the simple assignor's target assignment, and the
// share-partitions started so far.
type shareGroup struct {
	// epoch is the group epoch, bumped by every membership, subscription
	// or subscribed-topic change; assignmentEpoch is the epoch the target
	// assignment was computed at.
	epoch           int32
	assignmentEpoch int32
	members         map[string]*shareMember
	// metaSig describes the subscribed topics' metadata the target was
	// computed from (as consumerGroup.metaSig).
	metaSig    string
	sigSnap    *topicSnapshot
	emptySince time.Time

	// parts are the group's share-partitions, by topic id and partition,
	// started when a partition first entered the target assignment.
	parts map[topicID]map[int32]*share.Partition

	// What was last written (share_store.go), as in consumerGroup.
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
	// would deliver (share_fetch.go). Dropped with the member.
	releases map[string]uint64
	// lockAt is each share-partition's scheduled lock deadline (ms), the
	// one live entry of the lock scheduler (share_sched.go).
	lockAt map[tp]int64
	// counts are the records the group's operations moved, by topic, for
	// the metrics (share_metrics.go).
	counts map[topicID]*ShareCounts
}

// releaseKey names a member's records acquired through one broker.
func releaseKey(member string, via int32) string {
	return fmt.Sprintf("%s\x00%d", member, via)
}

// shareMember is a share group member. There is no revocation: a member
// takes its target assignment at its next heartbeat.
type shareMember struct {
	id         string
	rackID     *string
	clientID   string
	clientHost string

	epoch     int32
	prevEpoch int32
	topics    []string // subscribed topic names, sorted

	target   partitions // what the assignor gives it
	assigned partitions // what it was told it has

	// session is when the member is removed without a heartbeat.
	session time.Time
	// written is the member's record as last written; nil when none.
	written []byte
}

func newShareGroup(epoch int32, now time.Time) *shareGroup {
	return &shareGroup{
		epoch:           epoch,
		assignmentEpoch: epoch,
		persistedEpoch:  epoch,
		members:         make(map[string]*shareMember),
		parts:           make(map[topicID]map[int32]*share.Partition),
		emptySince:      now,
	}
}

func (s *shareGroup) emptyLocked() bool { return len(s.members) == 0 }

// stateLocked is the group state as ListGroups and the describes show it:
// share groups are Empty or Stable (members take their targets at once).
func (s *shareGroup) stateLocked() string {
	if len(s.members) == 0 {
		return shareEmpty
	}
	return shareStable
}

func (s *shareGroup) sortedMembersLocked() []*shareMember {
	ms := make([]*shareMember, 0, len(s.members))
	for _, m := range s.members {
		ms = append(ms, m)
	}
	slices.SortFunc(ms, func(a, b *shareMember) int { return strings.Compare(a.id, b.id) })
	return ms
}

func (s *shareGroup) markLocked(id string) {
	if s.dirty == nil {
		s.dirty = make(map[string]struct{})
	}
	s.dirty[id] = struct{}{}
}

// isSubscribedLocked reports whether any member subscribes to topic.
func (s *shareGroup) isSubscribedLocked(topic string) bool {
	for _, m := range s.members {
		if slices.Contains(m.topics, topic) {
			return true
		}
	}
	return false
}

// nextDeadlineLocked is the earliest session deadline (record locks
// have their own scheduler, share_sched.go).
func (s *shareGroup) nextDeadlineLocked() time.Time {
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
func (s *shareGroup) metaSigLocked(snap *topicSnapshot) string {
	names := map[string]bool{}
	for _, m := range s.members {
		for _, t := range m.topics {
			names[t] = true
		}
	}
	var b bytes.Buffer
	for _, t := range slices.Sorted(maps.Keys(names)) {
		tm, ok := snap.byName[t]
		if !ok {
			continue
		}
		b.WriteString(t)
		b.WriteByte(0)
		b.Write(tm.id[:])
		b.WriteByte(byte(tm.partitions >> 24))
		b.WriteByte(byte(tm.partitions >> 16))
		b.WriteByte(byte(tm.partitions >> 8))
		b.WriteByte(byte(tm.partitions))
	}
	return b.String()
}

// metadataChangedLocked reports whether the subscribed topics' metadata
// changed since the target was computed.
func (s *shareGroup) metadataChangedLocked(snap *topicSnapshot) bool {
	if snap == s.sigSnap {
		return false
	}
	s.sigSnap = snap
	return s.metaSigLocked(snap) != s.metaSig
}

// computeTargetLocked runs the simple assignor at the group epoch.
func (s *shareGroup) computeTargetLocked(snap *topicSnapshot) {
	members := s.sortedMembersLocked()
	subs := make([][]tp, len(members))
	prev := make([]partitions, len(members))
	for i, m := range members {
		for _, t := range m.topics {
			tm, ok := snap.byName[t]
			if !ok {
				continue
			}
			for p := range tm.partitions {
				subs[i] = append(subs[i], tp{tm.id, p})
			}
		}
		slices.SortFunc(subs[i], tp.compare)
		prev[i] = m.target
	}
	targets := simpleAssign(subs, prev)
	for i, m := range members {
		if !m.target.equal(targets[i]) {
			m.target = targets[i]
			s.markLocked(m.id)
		}
	}
	s.assignmentEpoch = s.epoch
	s.metaSig = s.metaSigLocked(snap)
	s.sigSnap = snap
}

// tp is one topic partition, by topic id.
type tp struct {
	id topicID
	p  int32
}

func (a tp) compare(b tp) int {
	if c := bytes.Compare(a.id[:], b.id[:]); c != 0 {
		return c
	}
	return cmp.Compare(a.p, b.p)
}

// simpleAssign is Kafka's simple share group assignor (4.1+): balanced and
// sticky. subs[i] lists member i's subscribed partitions (sorted), prev[i]
// its previous target. When every member subscribes to the same
// partitions they are spread together; otherwise each topic is spread
// over the members subscribing to it. With at least as many members as
// partitions, each member gets one partition and each partition ⌊M/P⌋ or
// ⌈M/P⌉ members; with fewer, each partition goes to one member, and each
// member gets ⌊P/M⌋ or ⌈P/M⌉. Members keep what they had where the
// balance allows.
func simpleAssign(subs [][]tp, prev []partitions) []partitions {
	out := make([]partitions, len(subs))
	for i := range out {
		out[i] = partitions{}
	}
	homogeneous := true
	for i := 1; i < len(subs); i++ {
		if !slices.Equal(subs[i], subs[0]) {
			homogeneous = false
			break
		}
	}
	if homogeneous {
		if len(subs) > 0 {
			all := make([]int, len(subs))
			for i := range all {
				all[i] = i
			}
			spread(subs[0], all, prev, out)
		}
		return out
	}
	// Heterogeneous: each topic over its subscribers.
	byTopic := map[topicID][]tp{}
	members := map[topicID][]int{}
	for i, s := range subs {
		for _, x := range s {
			if len(members[x.id]) == 0 || members[x.id][len(members[x.id])-1] != i {
				members[x.id] = append(members[x.id], i)
			}
			if len(members[x.id]) == 1 {
				byTopic[x.id] = append(byTopic[x.id], x)
			}
		}
	}
	ids := slices.SortedFunc(maps.Keys(byTopic), func(a, b topicID) int { return bytes.Compare(a[:], b[:]) })
	for _, id := range ids {
		spread(byTopic[id], members[id], prev, out)
	}
	return out
}

// spread assigns parts over the members ms (indexes into prev and out).
func spread(parts []tp, ms []int, prev, out []partitions) {
	if len(parts) == 0 || len(ms) == 0 {
		return
	}
	M, P := len(ms), len(parts)
	if M >= P {
		// Each member one partition; each partition floor or ceil
		// members, extras of them ceil.
		floor, extras := M/P, M%P
		count := make(map[tp]int, P)
		take := func(x tp) bool {
			switch n := count[x]; {
			case n < floor:
			case n == floor && extras > 0:
				extras--
			default:
				return false
			}
			count[x]++
			return true
		}
		var rest []int
		for _, i := range ms {
			kept := false
			for _, x := range parts {
				if prev[i].has(x.id, x.p) && take(x) {
					out[i].add(x.id, x.p)
					kept = true
					break
				}
			}
			if !kept {
				rest = append(rest, i)
			}
		}
		for _, i := range rest {
			// The least loaded partition that may take one more.
			best := -1
			for j, x := range parts {
				n := count[x]
				if n > floor || (n == floor && extras == 0) {
					continue
				}
				if best < 0 || n < count[parts[best]] {
					best = j
				}
			}
			x := parts[best]
			take(x)
			out[i].add(x.id, x.p)
		}
		return
	}
	// Each partition one member; each member floor or ceil partitions.
	floor, extras := P/M, P%M
	count := make(map[int]int, M)
	take := func(i int) bool {
		switch n := count[i]; {
		case n < floor:
		case n == floor && extras > 0:
			extras--
		default:
			return false
		}
		count[i]++
		return true
	}
	owned := make(map[tp]bool, P)
	for _, i := range ms {
		for _, x := range parts {
			if !owned[x] && prev[i].has(x.id, x.p) && take(i) {
				out[i].add(x.id, x.p)
				owned[x] = true
			}
		}
	}
	for _, x := range parts {
		if owned[x] {
			continue
		}
		best := -1
		for _, i := range ms {
			n := count[i]
			if n > floor || (n == floor && extras == 0) {
				continue
			}
			if best < 0 || n < count[best] {
				best = i
			}
		}
		take(best)
		out[best].add(x.id, x.p)
	}
}
