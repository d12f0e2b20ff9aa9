package rpc

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/groups"
)

// Group ops carry the Kafka group API's own request and response bodies
// (kmsg, at the client's request version): the Kafka protocol is already a
// compact, versioned binary encoding of exactly these messages, so the
// coordinator decodes what the client sent and the broker relays what the
// coordinator answered.
const (
	opJoinGroup              = "join_group"
	opSyncGroup              = "sync_group"
	opHeartbeat              = "heartbeat"
	opLeaveGroup             = "leave_group"
	opOffsetCommit           = "offset_commit"
	opOffsetFetch            = "offset_fetch"
	opOffsetDelete           = "offset_delete"
	opTxnOffsetCommit        = "txn_offset_commit"
	opDescribeGroups         = "describe_groups"
	opListGroups             = "list_groups"
	opDeleteGroups           = "delete_groups"
	opConsumerGroupHeartbeat = "consumer_group_heartbeat"
	opConsumerGroupDescribe  = "consumer_group_describe"
	opShareGroupHeartbeat    = "share_group_heartbeat"
	opShareGroupDescribe     = "share_group_describe"
	// The share groups' offsets admin APIs.
	opDescribeShareGroupOffsets = "describe_share_group_offsets"
	opAlterShareGroupOffsets    = "alter_share_group_offsets"
	opDeleteShareGroupOffsets   = "delete_share_group_offsets"
	// The group configs (ConfigResource GROUP): the GROUP resources of a
	// DescribeConfigs or IncrementalAlterConfigs request.
	opDescribeGroupConfigs = "describe_group_configs"
	opAlterGroupConfigs    = "alter_group_configs"
)

const (
	// maxGroupWait bounds a JoinGroup or SyncGroup held in a rebalance:
	// group.max.session.timeout.ms (30 minutes) and some room. The Kafka
	// client's own request timeout, which closes its connection and so
	// cancels the broker's request, is what normally ends a wait early.
	maxGroupWait = 31 * time.Minute
	// groupWaitSlack is added to a JoinGroup's rebalance timeout: the
	// join phase may run a little past it before members are answered.
	groupWaitSlack = 10 * time.Second
	// maxHeldGroupRequests bounds the JoinGroups and SyncGroups held at
	// once. They do not count against maxConcurrent: a mass rebalance must
	// not stall commits.
	maxHeldGroupRequests = 1 << 16
)

// heldOps are the ops that wait for a rebalance: they get their own
// concurrency bound and may run up to maxGroupWait.
// A share_acquire may wait for records up to its MaxWaitMs: held, it
// does not take a slot commits need either.
var heldOps = map[string]bool{opJoinGroup: true, opSyncGroup: true, opShareAcquire: true}

// groupCall serves one group op on gs: req is the decoded Kafka request, c
// the Kafka client it came from.
type groupCall func(gs *groups.Groups, ctx context.Context, c coordapi.ClientInfo, req kmsg.Request) (kmsg.Response, error)

// groupOp is one group op: the Kafka API it carries and how to serve it.
type groupOp struct {
	key  kmsg.Key
	call groupCall
}

// plain adapts a groups method that cannot fail.
func plain[Req kmsg.Request, Resp kmsg.Response](fn func(*groups.Groups, context.Context, Req) Resp) groupCall {
	return func(gs *groups.Groups, ctx context.Context, _ coordapi.ClientInfo, req kmsg.Request) (kmsg.Response, error) {
		return fn(gs, ctx, req.(Req)), nil
	}
}

// groupOps maps every group op to its Kafka API.
var groupOps = map[string]groupOp{
	opJoinGroup: {kmsg.JoinGroup, func(gs *groups.Groups, ctx context.Context, c coordapi.ClientInfo, req kmsg.Request) (kmsg.Response, error) {
		return gs.JoinGroup(ctx, c, req.(*kmsg.JoinGroupRequest))
	}},
	opSyncGroup: {kmsg.SyncGroup, func(gs *groups.Groups, ctx context.Context, _ coordapi.ClientInfo, req kmsg.Request) (kmsg.Response, error) {
		return gs.SyncGroup(ctx, req.(*kmsg.SyncGroupRequest))
	}},
	opHeartbeat:    {kmsg.Heartbeat, plain((*groups.Groups).Heartbeat)},
	opLeaveGroup:   {kmsg.LeaveGroup, plain((*groups.Groups).LeaveGroup)},
	opOffsetCommit: {kmsg.OffsetCommit, plain((*groups.Groups).OffsetCommit)},
	opOffsetFetch:  {kmsg.OffsetFetch, plain((*groups.Groups).OffsetFetch)},
	opOffsetDelete: {kmsg.OffsetDelete, plain((*groups.Groups).OffsetDelete)},
	opTxnOffsetCommit: {kmsg.TxnOffsetCommit, func(gs *groups.Groups, ctx context.Context, _ coordapi.ClientInfo, req kmsg.Request) (kmsg.Response, error) {
		return gs.TxnOffsetCommit(ctx, req.(*kmsg.TxnOffsetCommitRequest)), nil
	}},
	opDescribeGroups: {kmsg.DescribeGroups, plain((*groups.Groups).DescribeGroups)},
	opListGroups:     {kmsg.ListGroups, plain((*groups.Groups).ListGroups)},
	opDeleteGroups:   {kmsg.DeleteGroups, plain((*groups.Groups).DeleteGroups)},
	opConsumerGroupHeartbeat: {kmsg.ConsumerGroupHeartbeat, func(gs *groups.Groups, ctx context.Context, c coordapi.ClientInfo, req kmsg.Request) (kmsg.Response, error) {
		return gs.ConsumerGroupHeartbeat(ctx, c, req.(*kmsg.ConsumerGroupHeartbeatRequest)), nil
	}},
	opConsumerGroupDescribe: {kmsg.ConsumerGroupDescribe, plain((*groups.Groups).ConsumerGroupDescribe)},
	opShareGroupHeartbeat: {kmsg.ShareGroupHeartbeat, func(gs *groups.Groups, ctx context.Context, c coordapi.ClientInfo, req kmsg.Request) (kmsg.Response, error) {
		return gs.ShareGroupHeartbeat(ctx, c, req.(*kmsg.ShareGroupHeartbeatRequest)), nil
	}},
	opShareGroupDescribe:        {kmsg.ShareGroupDescribe, plain((*groups.Groups).ShareGroupDescribe)},
	opDescribeGroupConfigs:      {kmsg.DescribeConfigs, plain((*groups.Groups).DescribeGroupConfigs)},
	opAlterGroupConfigs:         {kmsg.IncrementalAlterConfigs, plain((*groups.Groups).AlterGroupConfigs)},
	opDescribeShareGroupOffsets: {kmsg.DescribeShareGroupOffsets, plain((*groups.Groups).DescribeShareGroupOffsets)},
	opAlterShareGroupOffsets:    {kmsg.AlterShareGroupOffsets, plain((*groups.Groups).AlterShareGroupOffsets)},
	opDeleteShareGroupOffsets:   {kmsg.DeleteShareGroupOffsets, plain((*groups.Groups).DeleteShareGroupOffsets)},
}

// encGroupReq writes a group request: the Kafka request version, the
// client's id and host, for an OffsetCommit or a TxnOffsetCommit its
// topics' ids (which the body does not carry below v10, v6 for
// TxnOffsetCommit, and with which the coordinator stores the offsets), and
// last the Kafka request body, appended in place.
func encGroupReq(e *encoder, c coordapi.ClientInfo, req kmsg.Request) {
	e.varint(int64(req.GetVersion()))
	e.str(c.ID)
	e.str(c.Host)
	switch r := req.(type) {
	case *kmsg.OffsetCommitRequest:
		e.uvarint(uint64(len(r.Topics)))
		for _, t := range r.Topics {
			e.id(coordapi.TopicID(t.TopicID))
		}
	case *kmsg.TxnOffsetCommitRequest:
		e.uvarint(uint64(len(r.Topics)))
		for _, t := range r.Topics {
			e.id(coordapi.TopicID(t.TopicID))
		}
	}
	e.b = req.AppendTo(e.b)
}

// decGroupReq reads a group request of the Kafka API key.
func decGroupReq(d *decoder, key kmsg.Key) (coordapi.ClientInfo, kmsg.Request) {
	var c coordapi.ClientInfo
	v := d.int16()
	c.ID, c.Host = d.str(), d.str()
	var ids []coordapi.TopicID
	if key == kmsg.OffsetCommit || key == kmsg.TxnOffsetCommit {
		n := d.count(16)
		for i := 0; i < n && d.err == nil; i++ {
			ids = append(ids, d.id())
		}
	}
	if d.err != nil {
		return c, nil
	}
	body := d.b[d.off:]
	d.off = len(d.b)
	req := kmsg.RequestForKey(int16(key))
	if v < 0 || v > req.MaxVersion() {
		d.fail("%s version %d", key.Name(), v)
		return c, nil
	}
	req.SetVersion(v)
	if err := req.ReadFrom(body); err != nil {
		d.fail("%s v%d body: %v", key.Name(), v, err)
		return c, nil
	}
	switch r := req.(type) {
	case *kmsg.OffsetCommitRequest:
		if len(ids) != len(r.Topics) {
			d.fail("offset commit: %d topic ids for %d topics", len(ids), len(r.Topics))
			return c, nil
		}
		for i, id := range ids {
			r.Topics[i].TopicID = id
		}
	case *kmsg.TxnOffsetCommitRequest:
		if len(ids) != len(r.Topics) {
			d.fail("txn offset commit: %d topic ids for %d topics", len(ids), len(r.Topics))
			return c, nil
		}
		for i, id := range ids {
			if r.Version >= 6 && id != coordapi.TopicID(r.Topics[i].TopicID) {
				d.fail("txn offset commit v%d: topic id %x in the body, %x beside it", r.Version, r.Topics[i].TopicID, id)
				return c, nil
			}
			r.Topics[i].TopicID = id
		}
	}
	return c, req
}

// handleGroupOp returns the handler of a group op.
func handleGroupOp(op groupOp) handler {
	return func(s *Server, ctx context.Context, d *decoder, e *encoder) error {
		c, req := decGroupReq(d, op.key)
		if d.err != nil {
			return &coordapi.KafkaError{Code: kerr.InvalidRequest, Message: d.err.Error()}
		}
		resp, err := op.call(s.groups, ctx, c, req)
		if err != nil {
			return err
		}
		e.b = resp.AppendTo(e.b)
		return nil
	}
}

// GroupClient calls the group coordinator served with
// ServerOptions.Groups: every broker of the cluster reaches the same group
// state through it, so any broker may coordinate any group. It implements
// coordapi.GroupCoordinator. A request that gets no answer (no coordinator,
// NATS down, deadline passed) returns an error wrapping ErrUnavailable; the
// broker answers it COORDINATOR_NOT_AVAILABLE, and the client finds the
// coordinator again.
type GroupClient struct{ c *Client }

var _ coordapi.GroupCoordinator = (*GroupClient)(nil)

// Groups returns the client of the cluster's group coordinator.
func (c *Client) Groups() *GroupClient { return &GroupClient{c: c} }

// groupRequest sends req as op and decodes the answer into a response of
// req's kind and version. timeout 0 is the client's default.
func groupRequest[Resp kmsg.Response](g *GroupClient, ctx context.Context, op string, timeout time.Duration, c coordapi.ClientInfo, req kmsg.Request) (Resp, error) {
	resp := req.ResponseKind().(Resp)
	resp.SetVersion(req.GetVersion())
	_, err := callWith(g.c, ctx, op, timeout, func(e *encoder) { encGroupReq(e, c, req) }, func(d *decoder) struct{} {
		if err := resp.ReadFrom(d.b[d.off:]); err != nil {
			d.fail("%s v%d response: %v", op, req.GetVersion(), err)
		}
		return struct{}{}
	})
	if err != nil {
		var zero Resp
		return zero, err
	}
	return resp, nil
}

const (
	// heldPingInterval is how often a client holding a JoinGroup or
	// SyncGroup checks that the coordinator serving it is still there.
	heldPingInterval = 2 * time.Second
	// heldPingMisses pings in a row without an answer mean the
	// coordinator is gone.
	heldPingMisses = 2
)

// errCoordinatorLost ends a held request whose coordinator died or
// restarted: its answer will never come.
var errCoordinatorLost = errors.New("the coordinator holding the request is gone")

// heldRequest is groupRequest for a request the coordinator holds in a
// rebalance. While it waits, it pings the coordinator: a coordinator that
// stops answering or answers with another instance id (it restarted) has
// lost the request, which then fails with ErrUnavailable at once rather
// than at its timeout (the rebalance timeout, up to minutes). The broker
// answers COORDINATOR_NOT_AVAILABLE, and the client rejoins the coordinator
// that is there now.
func heldRequest[Resp kmsg.Response](g *GroupClient, ctx context.Context, op string, timeout time.Duration, c coordapi.ClientInfo, req kmsg.Request) (Resp, error) {
	// The instance the request will reach, asked first so that a restart
	// between the two is not missed.
	instance, err := g.ping(ctx)
	if err != nil {
		var zero Resp
		return zero, err
	}
	hctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go g.watch(hctx, cancel, instance)
	resp, err := groupRequest[Resp](g, hctx, op, timeout, c, req)
	if err != nil && ctx.Err() == nil && errors.Is(context.Cause(hctx), errCoordinatorLost) {
		return resp, &clientError{op, ErrUnavailable, errCoordinatorLost}
	}
	return resp, err
}

// ping returns the serving coordinator's instance id.
func (g *GroupClient) ping(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, heldPingInterval)
	defer cancel()
	return call(g.c, ctx, opPing, func(*encoder) {}, decString)
}

// watch pings the coordinator until ctx ends, and cancels ctx with
// errCoordinatorLost when instance is gone: heldPingMisses pings in a row
// unanswered, or answered by another instance.
func (g *GroupClient) watch(ctx context.Context, cancel context.CancelCauseFunc, instance string) {
	t := time.NewTicker(heldPingInterval)
	defer t.Stop()
	misses := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		id, err := g.ping(ctx)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			if misses++; misses >= heldPingMisses {
				cancel(errCoordinatorLost)
				return
			}
		case id != instance:
			cancel(errCoordinatorLost)
			return
		default:
			misses = 0
		}
	}
}

// joinWait is how long a JoinGroup may be held: its rebalance timeout (the
// session timeout before v1), and some room.
func joinWait(req *kmsg.JoinGroupRequest) time.Duration {
	ms := req.RebalanceTimeoutMillis
	if req.Version < 1 || ms <= 0 {
		ms = req.SessionTimeoutMillis
	}
	return min(time.Duration(ms)*time.Millisecond+groupWaitSlack, maxGroupWait)
}

// JoinGroup joins a classic group; the answer is held until the
// rebalance's join phase completes.
func (g *GroupClient) JoinGroup(ctx context.Context, c coordapi.ClientInfo, req *kmsg.JoinGroupRequest) (*kmsg.JoinGroupResponse, error) {
	return heldRequest[*kmsg.JoinGroupResponse](g, ctx, opJoinGroup, joinWait(req), c, req)
}

// SyncGroup completes a classic rebalance; a follower's answer is held
// until the leader's SyncGroup (or the rebalance ends otherwise).
func (g *GroupClient) SyncGroup(ctx context.Context, req *kmsg.SyncGroupRequest) (*kmsg.SyncGroupResponse, error) {
	return heldRequest[*kmsg.SyncGroupResponse](g, ctx, opSyncGroup, maxGroupWait, coordapi.ClientInfo{}, req)
}

// Heartbeat keeps a classic member alive.
func (g *GroupClient) Heartbeat(ctx context.Context, req *kmsg.HeartbeatRequest) (*kmsg.HeartbeatResponse, error) {
	return groupRequest[*kmsg.HeartbeatResponse](g, ctx, opHeartbeat, 0, coordapi.ClientInfo{}, req)
}

// LeaveGroup removes classic members.
func (g *GroupClient) LeaveGroup(ctx context.Context, req *kmsg.LeaveGroupRequest) (*kmsg.LeaveGroupResponse, error) {
	return groupRequest[*kmsg.LeaveGroupResponse](g, ctx, opLeaveGroup, 0, coordapi.ClientInfo{}, req)
}

// OffsetCommit commits offsets; each topic's TopicID (set by the broker)
// travels with it.
func (g *GroupClient) OffsetCommit(ctx context.Context, req *kmsg.OffsetCommitRequest) (*kmsg.OffsetCommitResponse, error) {
	return groupRequest[*kmsg.OffsetCommitResponse](g, ctx, opOffsetCommit, 0, coordapi.ClientInfo{}, req)
}

// OffsetFetch fetches committed offsets.
func (g *GroupClient) OffsetFetch(ctx context.Context, req *kmsg.OffsetFetchRequest) (*kmsg.OffsetFetchResponse, error) {
	return groupRequest[*kmsg.OffsetFetchResponse](g, ctx, opOffsetFetch, 0, coordapi.ClientInfo{}, req)
}

// OffsetDelete deletes committed offsets of a group.
func (g *GroupClient) OffsetDelete(ctx context.Context, req *kmsg.OffsetDeleteRequest) (*kmsg.OffsetDeleteResponse, error) {
	return groupRequest[*kmsg.OffsetDeleteResponse](g, ctx, opOffsetDelete, 0, coordapi.ClientInfo{}, req)
}

// TxnOffsetCommit writes a transactional producer's pending offsets; each
// topic's TopicID (set by the broker) travels with it.
func (g *GroupClient) TxnOffsetCommit(ctx context.Context, req *kmsg.TxnOffsetCommitRequest) (*kmsg.TxnOffsetCommitResponse, error) {
	return groupRequest[*kmsg.TxnOffsetCommitResponse](g, ctx, opTxnOffsetCommit, 0, coordapi.ClientInfo{}, req)
}

// DescribeGroups describes groups.
func (g *GroupClient) DescribeGroups(ctx context.Context, req *kmsg.DescribeGroupsRequest) (*kmsg.DescribeGroupsResponse, error) {
	return groupRequest[*kmsg.DescribeGroupsResponse](g, ctx, opDescribeGroups, 0, coordapi.ClientInfo{}, req)
}

// ListGroups lists the cluster's groups.
func (g *GroupClient) ListGroups(ctx context.Context, req *kmsg.ListGroupsRequest) (*kmsg.ListGroupsResponse, error) {
	return groupRequest[*kmsg.ListGroupsResponse](g, ctx, opListGroups, 0, coordapi.ClientInfo{}, req)
}

// DeleteGroups deletes empty groups and their offsets.
func (g *GroupClient) DeleteGroups(ctx context.Context, req *kmsg.DeleteGroupsRequest) (*kmsg.DeleteGroupsResponse, error) {
	return groupRequest[*kmsg.DeleteGroupsResponse](g, ctx, opDeleteGroups, 0, coordapi.ClientInfo{}, req)
}

// ConsumerGroupHeartbeat is a KIP-848 member's heartbeat.
func (g *GroupClient) ConsumerGroupHeartbeat(ctx context.Context, c coordapi.ClientInfo, req *kmsg.ConsumerGroupHeartbeatRequest) (*kmsg.ConsumerGroupHeartbeatResponse, error) {
	return groupRequest[*kmsg.ConsumerGroupHeartbeatResponse](g, ctx, opConsumerGroupHeartbeat, 0, c, req)
}

// ConsumerGroupDescribe describes KIP-848 groups.
func (g *GroupClient) ConsumerGroupDescribe(ctx context.Context, req *kmsg.ConsumerGroupDescribeRequest) (*kmsg.ConsumerGroupDescribeResponse, error) {
	return groupRequest[*kmsg.ConsumerGroupDescribeResponse](g, ctx, opConsumerGroupDescribe, 0, coordapi.ClientInfo{}, req)
}

// ShareGroupHeartbeat is a KIP-932 share group member's heartbeat.
func (g *GroupClient) ShareGroupHeartbeat(ctx context.Context, c coordapi.ClientInfo, req *kmsg.ShareGroupHeartbeatRequest) (*kmsg.ShareGroupHeartbeatResponse, error) {
	return groupRequest[*kmsg.ShareGroupHeartbeatResponse](g, ctx, opShareGroupHeartbeat, 0, c, req)
}

// ShareGroupDescribe describes share groups.
func (g *GroupClient) ShareGroupDescribe(ctx context.Context, req *kmsg.ShareGroupDescribeRequest) (*kmsg.ShareGroupDescribeResponse, error) {
	return groupRequest[*kmsg.ShareGroupDescribeResponse](g, ctx, opShareGroupDescribe, 0, coordapi.ClientInfo{}, req)
}

// DescribeGroupConfigs describes the group configs of the GROUP resources
// in req.
func (g *GroupClient) DescribeGroupConfigs(ctx context.Context, req *kmsg.DescribeConfigsRequest) (*kmsg.DescribeConfigsResponse, error) {
	return groupRequest[*kmsg.DescribeConfigsResponse](g, ctx, opDescribeGroupConfigs, 0, coordapi.ClientInfo{}, req)
}

// AlterGroupConfigs changes the group configs of the GROUP resources in
// req.
func (g *GroupClient) AlterGroupConfigs(ctx context.Context, req *kmsg.IncrementalAlterConfigsRequest) (*kmsg.IncrementalAlterConfigsResponse, error) {
	return groupRequest[*kmsg.IncrementalAlterConfigsResponse](g, ctx, opAlterGroupConfigs, 0, coordapi.ClientInfo{}, req)
}

// DescribeShareGroupOffsets describes share groups' start offsets and lag.
func (g *GroupClient) DescribeShareGroupOffsets(ctx context.Context, req *kmsg.DescribeShareGroupOffsetsRequest) (*kmsg.DescribeShareGroupOffsetsResponse, error) {
	return groupRequest[*kmsg.DescribeShareGroupOffsetsResponse](g, ctx, opDescribeShareGroupOffsets, 0, coordapi.ClientInfo{}, req)
}

// AlterShareGroupOffsets moves an Empty share group's start offsets.
func (g *GroupClient) AlterShareGroupOffsets(ctx context.Context, req *kmsg.AlterShareGroupOffsetsRequest) (*kmsg.AlterShareGroupOffsetsResponse, error) {
	return groupRequest[*kmsg.AlterShareGroupOffsetsResponse](g, ctx, opAlterShareGroupOffsets, 0, coordapi.ClientInfo{}, req)
}

// DeleteShareGroupOffsets drops an Empty share group's state of topics.
func (g *GroupClient) DeleteShareGroupOffsets(ctx context.Context, req *kmsg.DeleteShareGroupOffsetsRequest) (*kmsg.DeleteShareGroupOffsetsResponse, error) {
	return groupRequest[*kmsg.DeleteShareGroupOffsetsResponse](g, ctx, opDeleteShareGroupOffsets, 0, coordapi.ClientInfo{}, req)
}
