package groups

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/groups/members"
)

// A KIP-848 member's partitions (assigned, given back, targeted) are a
// members.Partitions, the set package sharegroups keeps for its members
// too; what follows is how ConsumerGroupHeartbeat reads and answers them.

// ownedPartitions reads the partitions a heartbeat reports owned.
func ownedPartitions(topics []kmsg.ConsumerGroupHeartbeatRequestTopic) members.Partitions {
	ps := make(members.Partitions, len(topics))
	for _, t := range topics {
		for _, p := range t.Partitions {
			ps.Add(t.TopicID, p)
		}
	}
	return ps
}

// heartbeatAssignment is ps as a ConsumerGroupHeartbeat response carries it.
func heartbeatAssignment(ps members.Partitions) *kmsg.ConsumerGroupHeartbeatResponseAssignment {
	a := kmsg.NewConsumerGroupHeartbeatResponseAssignment()
	a.Topics = []kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic{}
	for _, id := range ps.SortedIDs() {
		t := kmsg.NewConsumerGroupHeartbeatResponseAssignmentTopic()
		t.TopicID, t.Partitions = id, slices.Clone(ps[id])
		a.Topics = append(a.Topics, t)
	}
	return &a
}
