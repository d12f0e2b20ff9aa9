package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/coordinator/groups"
)

// LocalGroups serves the group APIs from a group coordinator in this
// process, for a broker that is alone with its state (tools and tests). A
// cluster's brokers use the coordinator's over NATS (rpc.GroupClient), so
// that they share one group state.
func LocalGroups(g *groups.Groups) GroupCoordinator { return localGroups{g} }

// localGroups adapts *groups.Groups, whose calls cannot go unanswered, to
// GroupCoordinator.
type localGroups struct{ g *groups.Groups }

func (l localGroups) JoinGroup(ctx context.Context, c groups.Client, req *kmsg.JoinGroupRequest) (*kmsg.JoinGroupResponse, error) {
	return l.g.JoinGroup(ctx, c, req)
}

func (l localGroups) SyncGroup(ctx context.Context, req *kmsg.SyncGroupRequest) (*kmsg.SyncGroupResponse, error) {
	return l.g.SyncGroup(ctx, req)
}

func (l localGroups) Heartbeat(ctx context.Context, req *kmsg.HeartbeatRequest) (*kmsg.HeartbeatResponse, error) {
	return l.g.Heartbeat(ctx, req), nil
}

func (l localGroups) LeaveGroup(ctx context.Context, req *kmsg.LeaveGroupRequest) (*kmsg.LeaveGroupResponse, error) {
	return l.g.LeaveGroup(ctx, req), nil
}

func (l localGroups) OffsetCommit(ctx context.Context, req *kmsg.OffsetCommitRequest) (*kmsg.OffsetCommitResponse, error) {
	return l.g.OffsetCommit(ctx, req), nil
}

func (l localGroups) OffsetFetch(ctx context.Context, req *kmsg.OffsetFetchRequest) (*kmsg.OffsetFetchResponse, error) {
	return l.g.OffsetFetch(ctx, req), nil
}

func (l localGroups) OffsetDelete(ctx context.Context, req *kmsg.OffsetDeleteRequest) (*kmsg.OffsetDeleteResponse, error) {
	return l.g.OffsetDelete(ctx, req), nil
}

func (l localGroups) DescribeGroups(ctx context.Context, req *kmsg.DescribeGroupsRequest) (*kmsg.DescribeGroupsResponse, error) {
	return l.g.DescribeGroups(ctx, req), nil
}

func (l localGroups) ListGroups(ctx context.Context, req *kmsg.ListGroupsRequest) (*kmsg.ListGroupsResponse, error) {
	return l.g.ListGroups(ctx, req), nil
}

func (l localGroups) DeleteGroups(ctx context.Context, req *kmsg.DeleteGroupsRequest) (*kmsg.DeleteGroupsResponse, error) {
	return l.g.DeleteGroups(ctx, req), nil
}

func (l localGroups) ConsumerGroupHeartbeat(ctx context.Context, c groups.Client, req *kmsg.ConsumerGroupHeartbeatRequest) (*kmsg.ConsumerGroupHeartbeatResponse, error) {
	return l.g.ConsumerGroupHeartbeat(ctx, c, req), nil
}

func (l localGroups) ConsumerGroupDescribe(ctx context.Context, req *kmsg.ConsumerGroupDescribeRequest) (*kmsg.ConsumerGroupDescribeResponse, error) {
	return l.g.ConsumerGroupDescribe(ctx, req), nil
}
