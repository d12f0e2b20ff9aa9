package groups

import (
	"bytes"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// partitions is a set of partitions by topic id, each list sorted: what a
// KIP-848 member is assigned, gives back, or is targeted to own.
type partitions map[topicID][]int32

func (ps partitions) clone() partitions {
	out := make(partitions, len(ps))
	for id, p := range ps {
		out[id] = slices.Clone(p)
	}
	return out
}

func (ps partitions) count() int {
	n := 0
	for _, p := range ps {
		n += len(p)
	}
	return n
}

func (ps partitions) has(id topicID, p int32) bool {
	_, ok := slices.BinarySearch(ps[id], p)
	return ok
}

// add inserts p, keeping the list sorted.
func (ps partitions) add(id topicID, p int32) {
	l := ps[id]
	i, ok := slices.BinarySearch(l, p)
	if !ok {
		ps[id] = slices.Insert(l, i, p)
	}
}

func (ps partitions) equal(o partitions) bool {
	return maps.EqualFunc(ps, o, slices.Equal)
}

// sortedIDs returns the topic ids in byte order.
func (ps partitions) sortedIDs() []topicID {
	ids := slices.Collect(maps.Keys(ps))
	slices.SortFunc(ids, func(a, b topicID) int { return bytes.Compare(a[:], b[:]) })
	return ids
}

// ownedPartitions reads the partitions a heartbeat reports owned.
func ownedPartitions(topics []kmsg.ConsumerGroupHeartbeatRequestTopic) partitions {
	ps := make(partitions, len(topics))
	for _, t := range topics {
		for _, p := range t.Partitions {
			ps.add(t.TopicID, p)
		}
	}
	return ps
}

// subsetOf reports whether every partition of ps is in o.
func (ps partitions) subsetOf(o partitions) bool {
	for id, l := range ps {
		for _, p := range l {
			if !o.has(id, p) {
				return false
			}
		}
	}
	return true
}

// intersects reports whether ps and o share a partition.
func (ps partitions) intersects(o partitions) bool {
	for id, l := range ps {
		for _, p := range l {
			if o.has(id, p) {
				return true
			}
		}
	}
	return false
}

// heartbeatAssignment is ps as a ConsumerGroupHeartbeat response carries it.
func (ps partitions) heartbeatAssignment() *kmsg.ConsumerGroupHeartbeatResponseAssignment {
	a := kmsg.NewConsumerGroupHeartbeatResponseAssignment()
	a.Topics = []kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic{}
	for _, id := range ps.sortedIDs() {
		t := kmsg.NewConsumerGroupHeartbeatResponseAssignmentTopic()
		t.TopicID, t.Partitions = id, slices.Clone(ps[id])
		a.Topics = append(a.Topics, t)
	}
	return &a
}

// describeAssignment is ps as ConsumerGroupDescribe shows it, with topic
// names where known.
func (ps partitions) describeAssignment(snap *topicSnapshot) kmsg.Assignment {
	a := kmsg.NewAssignment()
	a.TopicPartitions = []kmsg.AssignmentTopicPartition{}
	for _, id := range ps.sortedIDs() {
		t := kmsg.NewAssignmentTopicPartition()
		t.TopicID, t.Partitions = id, slices.Clone(ps[id])
		if snap != nil {
			t.Topic = snap.byID[id]
		}
		a.TopicPartitions = append(a.TopicPartitions, t)
	}
	return a
}
