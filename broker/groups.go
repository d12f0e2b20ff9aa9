package broker

import (
	"context"
	"net"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/coordinator/groups"
)

// GroupCoordinator is what the broker needs of the group coordinator. The
// in-process *groups.Groups implements it. Kafka-level failures are error
// codes in the responses; JoinGroup and SyncGroup block until the rebalance
// answers them and fail only when ctx (the connection) ends first.
type GroupCoordinator interface {
	JoinGroup(ctx context.Context, c groups.Client, req *kmsg.JoinGroupRequest) (*kmsg.JoinGroupResponse, error)
	SyncGroup(ctx context.Context, req *kmsg.SyncGroupRequest) (*kmsg.SyncGroupResponse, error)
	Heartbeat(ctx context.Context, req *kmsg.HeartbeatRequest) *kmsg.HeartbeatResponse
	LeaveGroup(ctx context.Context, req *kmsg.LeaveGroupRequest) *kmsg.LeaveGroupResponse
	OffsetCommit(ctx context.Context, req *kmsg.OffsetCommitRequest) *kmsg.OffsetCommitResponse
	OffsetFetch(ctx context.Context, req *kmsg.OffsetFetchRequest) *kmsg.OffsetFetchResponse
	OffsetDelete(ctx context.Context, req *kmsg.OffsetDeleteRequest) *kmsg.OffsetDeleteResponse
	DescribeGroups(ctx context.Context, req *kmsg.DescribeGroupsRequest) *kmsg.DescribeGroupsResponse
	ListGroups(ctx context.Context, req *kmsg.ListGroupsRequest) *kmsg.ListGroupsResponse
	DeleteGroups(ctx context.Context, req *kmsg.DeleteGroupsRequest) *kmsg.DeleteGroupsResponse
	ConsumerGroupHeartbeat(ctx context.Context, c groups.Client, req *kmsg.ConsumerGroupHeartbeatRequest) *kmsg.ConsumerGroupHeartbeatResponse
	ConsumerGroupDescribe(ctx context.Context, req *kmsg.ConsumerGroupDescribeRequest) *kmsg.ConsumerGroupDescribeResponse
	// DeleteTopicOffsets drops every group's committed offsets of deleted
	// topics, as Kafka does on DeleteTopics. (OffsetFetch already hides
	// the offsets of a topic that was recreated; this frees them.)
	DeleteTopicOffsets(ctx context.Context, topics ...string) error
}

var _ GroupCoordinator = (*groups.Groups)(nil)

// SetGroups sets the group coordinator. Call it before Serve; without one,
// the group APIs answer COORDINATOR_NOT_AVAILABLE.
func (b *Broker) SetGroups(g GroupCoordinator) { b.groups = g }

// groupCoordinator is the broker that coordinates every group: the live
// broker with the lowest node id. Group state (members and committed
// offsets) lives with the broker's own group coordinator, so all groups
// go to one broker, and one that stays put when brokers are added (a hash
// over the live brokers would move groups, and their offsets would not
// follow).
func (b *Broker) groupCoordinator() brokerInfo { return b.liveBrokers()[0] }

// groupsError is the code every group request gets when this broker
// cannot serve it: COORDINATOR_NOT_AVAILABLE without a group coordinator,
// NOT_COORDINATOR when another broker coordinates the groups (the client
// asks FindCoordinator again); 0 when it can.
func (b *Broker) groupsError() int16 {
	switch {
	case b.groups == nil:
		return kerr.CoordinatorNotAvailable.Code
	case b.groupCoordinator().nodeID != b.opts.NodeID:
		return kerr.NotCoordinator.Code
	}
	return 0
}

// groupClient identifies r's connection to the group coordinator: its
// client id, and its host as Kafka shows it ("/127.0.0.1").
func groupClient(r *request) groups.Client {
	var c groups.Client
	if r.clientID != nil {
		c.ID = *r.clientID
	}
	if r.conn != nil {
		if host, _, err := net.SplitHostPort(r.conn.nc.RemoteAddr().String()); err == nil {
			c.Host = "/" + host
		}
	}
	return c
}

// knownPartitions checks the partitions of an offset request against the
// topics, as Kafka's request layer does before the group coordinator sees
// them: partitions[i] are the partitions asked of topics[i]. codes holds
// UNKNOWN_TOPIC_OR_PARTITION (or the lookup's error) for the rest, keep[i]
// the indexes into partitions[i] to pass on, and ids[i] the topic's id.
func (b *Broker) knownPartitions(ctx context.Context, topics []string, partitions [][]int32) (codes [][]int16, keep [][]int, ids [][16]byte) {
	codes = make([][]int16, len(topics))
	keep = make([][]int, len(topics))
	ids = make([][16]byte, len(topics))
	seen := make(map[string]topicLookup)
	for i, topic := range topics {
		codes[i] = make([]int16, len(partitions[i]))
		tl := b.lookupTopic(ctx, seen, topic)
		ids[i] = tl.t.ID
		for j, p := range partitions[i] {
			switch {
			case tl.err != nil:
				codes[i][j] = errorCode(tl.err)
			case p < 0 || p >= tl.t.Partitions:
				codes[i][j] = kerr.UnknownTopicOrPartition.Code
			default:
				keep[i] = append(keep[i], j)
			}
		}
	}
	return codes, keep, ids
}
