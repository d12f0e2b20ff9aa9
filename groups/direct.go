package groups

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/coordapi"
)

// Direct serves the group APIs from g in this process, for a broker that is
// alone with its state (tools, tests and benchmarks). A cluster's brokers
// use the coordinator's over NATS (*rpc.GroupClient), so that they share
// one group state.
func Direct(g *Groups) coordapi.GroupCoordinator { return direct{g} }

// direct adapts *Groups, whose calls cannot go unanswered, to
// coordapi.GroupCoordinator.
type direct struct{ g *Groups }

func (l direct) JoinGroup(ctx context.Context, c coordapi.ClientInfo, req *kmsg.JoinGroupRequest) (*kmsg.JoinGroupResponse, error) {
	return l.g.JoinGroup(ctx, c, req)
}

func (l direct) SyncGroup(ctx context.Context, req *kmsg.SyncGroupRequest) (*kmsg.SyncGroupResponse, error) {
	return l.g.SyncGroup(ctx, req)
}

func (l direct) Heartbeat(ctx context.Context, req *kmsg.HeartbeatRequest) (*kmsg.HeartbeatResponse, error) {
	return l.g.Heartbeat(ctx, req), nil
}

func (l direct) LeaveGroup(ctx context.Context, req *kmsg.LeaveGroupRequest) (*kmsg.LeaveGroupResponse, error) {
	return l.g.LeaveGroup(ctx, req), nil
}

func (l direct) OffsetCommit(ctx context.Context, req *kmsg.OffsetCommitRequest) (*kmsg.OffsetCommitResponse, error) {
	return l.g.OffsetCommit(ctx, req), nil
}

func (l direct) OffsetFetch(ctx context.Context, req *kmsg.OffsetFetchRequest) (*kmsg.OffsetFetchResponse, error) {
	return l.g.OffsetFetch(ctx, req), nil
}

func (l direct) OffsetDelete(ctx context.Context, req *kmsg.OffsetDeleteRequest) (*kmsg.OffsetDeleteResponse, error) {
	return l.g.OffsetDelete(ctx, req), nil
}

func (l direct) TxnOffsetCommit(ctx context.Context, req *kmsg.TxnOffsetCommitRequest) (*kmsg.TxnOffsetCommitResponse, error) {
	return l.g.TxnOffsetCommit(ctx, req), nil
}

func (l direct) DescribeGroups(ctx context.Context, req *kmsg.DescribeGroupsRequest) (*kmsg.DescribeGroupsResponse, error) {
	return l.g.DescribeGroups(ctx, req), nil
}

func (l direct) ListGroups(ctx context.Context, req *kmsg.ListGroupsRequest) (*kmsg.ListGroupsResponse, error) {
	return l.g.ListGroups(ctx, req), nil
}

func (l direct) DeleteGroups(ctx context.Context, req *kmsg.DeleteGroupsRequest) (*kmsg.DeleteGroupsResponse, error) {
	return l.g.DeleteGroups(ctx, req), nil
}

func (l direct) ConsumerGroupHeartbeat(ctx context.Context, c coordapi.ClientInfo, req *kmsg.ConsumerGroupHeartbeatRequest) (*kmsg.ConsumerGroupHeartbeatResponse, error) {
	return l.g.ConsumerGroupHeartbeat(ctx, c, req), nil
}

func (l direct) ConsumerGroupDescribe(ctx context.Context, req *kmsg.ConsumerGroupDescribeRequest) (*kmsg.ConsumerGroupDescribeResponse, error) {
	return l.g.ConsumerGroupDescribe(ctx, req), nil
}

func (l direct) ShareGroupHeartbeat(ctx context.Context, c coordapi.ClientInfo, req *kmsg.ShareGroupHeartbeatRequest) (*kmsg.ShareGroupHeartbeatResponse, error) {
	return l.g.ShareGroupHeartbeat(ctx, c, req), nil
}

func (l direct) ShareGroupDescribe(ctx context.Context, req *kmsg.ShareGroupDescribeRequest) (*kmsg.ShareGroupDescribeResponse, error) {
	return l.g.ShareGroupDescribe(ctx, req), nil
}

func (l direct) DescribeGroupConfigs(ctx context.Context, req *kmsg.DescribeConfigsRequest) (*kmsg.DescribeConfigsResponse, error) {
	return l.g.DescribeGroupConfigs(ctx, req), nil
}

func (l direct) AlterGroupConfigs(ctx context.Context, req *kmsg.IncrementalAlterConfigsRequest) (*kmsg.IncrementalAlterConfigsResponse, error) {
	return l.g.AlterGroupConfigs(ctx, req), nil
}

func (l direct) ShareAcquire(ctx context.Context, req coordapi.ShareAcquireRequest) (coordapi.ShareAcquireResponse, error) {
	return l.g.ShareAcquire(ctx, req)
}

func (l direct) ShareRelease(ctx context.Context, req coordapi.ShareReleaseRequest) error {
	return l.g.ShareRelease(ctx, req)
}

func (l direct) DescribeShareGroupOffsets(ctx context.Context, req *kmsg.DescribeShareGroupOffsetsRequest) (*kmsg.DescribeShareGroupOffsetsResponse, error) {
	return l.g.DescribeShareGroupOffsets(ctx, req), nil
}

func (l direct) AlterShareGroupOffsets(ctx context.Context, req *kmsg.AlterShareGroupOffsetsRequest) (*kmsg.AlterShareGroupOffsetsResponse, error) {
	return l.g.AlterShareGroupOffsets(ctx, req), nil
}

func (l direct) DeleteShareGroupOffsets(ctx context.Context, req *kmsg.DeleteShareGroupOffsetsRequest) (*kmsg.DeleteShareGroupOffsetsResponse, error) {
	return l.g.DeleteShareGroupOffsets(ctx, req), nil
}
