package members

import (
	"bytes"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TopicID is a topic's UUID, as KIP-848 and KIP-932 requests name topics.
type TopicID = [16]byte

// Partitions is a set of partitions by topic id, each list sorted and free
// of duplicates: what a member is assigned, gives back, or is targeted to
// own. The methods keep the lists so; a literal must be built sorted.
type Partitions map[TopicID][]int32

// Clone returns a copy of ps that shares no list with it.
func (ps Partitions) Clone() Partitions {
	out := make(Partitions, len(ps))
	for id, p := range ps {
		out[id] = slices.Clone(p)
	}
	return out
}

// Count is the number of partitions in ps, over all its topics.
func (ps Partitions) Count() int {
	n := 0
	for _, p := range ps {
		n += len(p)
	}
	return n
}

// Has reports whether partition p of topic id is in ps.
func (ps Partitions) Has(id TopicID, p int32) bool {
	_, ok := slices.BinarySearch(ps[id], p)
	return ok
}

// Add inserts partition p of topic id, keeping the list sorted; it is a
// no-op when p is already in ps.
func (ps Partitions) Add(id TopicID, p int32) {
	l := ps[id]
	i, ok := slices.BinarySearch(l, p)
	if !ok {
		ps[id] = slices.Insert(l, i, p)
	}
}

// Equal reports whether ps and o hold the same topics with the same lists
// (a topic with an empty list is not the same as no topic).
func (ps Partitions) Equal(o Partitions) bool {
	return maps.EqualFunc(ps, o, slices.Equal)
}

// SubsetOf reports whether every partition of ps is in o.
func (ps Partitions) SubsetOf(o Partitions) bool {
	for id, l := range ps {
		for _, p := range l {
			if !o.Has(id, p) {
				return false
			}
		}
	}
	return true
}

// Intersects reports whether ps and o share a partition.
func (ps Partitions) Intersects(o Partitions) bool {
	for id, l := range ps {
		for _, p := range l {
			if o.Has(id, p) {
				return true
			}
		}
	}
	return false
}

// SortedIDs returns the topic ids of ps in byte order: the order in which
// ps is written and answered, so that both are deterministic.
func (ps Partitions) SortedIDs() []TopicID {
	ids := slices.Collect(maps.Keys(ps))
	slices.SortFunc(ids, func(a, b TopicID) int { return bytes.Compare(a[:], b[:]) })
	return ids
}

// DescribeAssignment is ps as ConsumerGroupDescribe and ShareGroupDescribe
// show a member's assignment: topics in id order, each named by name ("",
// for a topic the caller does not know, leaves it unnamed).
func (ps Partitions) DescribeAssignment(name func(TopicID) string) kmsg.Assignment {
	a := kmsg.NewAssignment()
	a.TopicPartitions = []kmsg.AssignmentTopicPartition{}
	for _, id := range ps.SortedIDs() {
		t := kmsg.NewAssignmentTopicPartition()
		t.TopicID, t.Partitions, t.Topic = id, slices.Clone(ps[id]), name(id)
		a.TopicPartitions = append(a.TopicPartitions, t)
	}
	return a
}
