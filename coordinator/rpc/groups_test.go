package rpc_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/coordinator"
	"github.com/floe-io/floe/coordinator/rpc"
	"github.com/floe-io/floe/groups"
	"github.com/floe-io/floe/internal/testkit"
	"github.com/floe-io/floe/internal/testkit/natstest"
)

// groupsEnv is a coordinator and a group coordinator served over a real
// NATS server, and two brokers' clients (each on its own connection).
type groupsEnv struct {
	coord  *coordinator.Coordinator
	groups *groups.Groups
	srv    *rpc.Server
	a, b   *rpc.GroupClient
	client *rpc.Client
}

// openGroupsState opens a coordinator and a group coordinator in temp
// dirs, closed when the test ends.
func openGroupsState(t *testing.T) (*coordinator.Coordinator, *groups.Groups) {
	t.Helper()
	c, err := coordinator.Open(coordinator.Options{Dir: t.TempDir(), Logger: testkit.Logger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	gs, err := groups.Open(groups.Options{Dir: t.TempDir(), Logger: testkit.Logger(), Topics: c})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gs.Close() })
	return c, gs
}

func newGroupsEnv(t *testing.T) *groupsEnv {
	t.Helper()
	ns := natstest.Start(t)
	c, gs := openGroupsState(t)
	srv, err := rpc.ServeWith(context.Background(), natstest.Connect(t, ns), "test", c, rpc.ServerOptions{Logger: testkit.Logger(), Groups: gs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	client := func() *rpc.Client {
		return rpc.NewClient(natstest.Connect(t, ns), "test", rpc.ClientOptions{Timeout: 2 * time.Second, Logger: testkit.Logger()})
	}
	e := &groupsEnv{coord: c, groups: gs, srv: srv, client: client()}
	e.a, e.b = e.client.Groups(), client().Groups()
	return e
}

func joinReq(member string) *kmsg.JoinGroupRequest {
	req := kmsg.NewPtrJoinGroupRequest()
	req.Version = 9
	req.Group, req.MemberID, req.ProtocolType = "g", member, "consumer"
	req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 10_000, 10_000
	req.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0, 1}}}
	return req
}

// TestGroupsOverNATS: a classic group whose two members reach the group
// coordinator through different brokers' clients: member ids, a held
// JoinGroup answered when the second member joins, the leader's
// assignment handed to the follower, and offsets committed through one
// broker (with the topic id the broker resolved) fetched through the other.
func TestGroupsOverNATS(t *testing.T) {
	e := newGroupsEnv(t)
	ctx := context.Background()
	tp, err := e.coord.CreateTopic(ctx, coordapi.CreateTopicRequest{Name: "t", Partitions: 2, ReplicationFactor: -1})
	if err != nil {
		t.Fatal(err)
	}

	// A new member is told its id first (v4+), whichever broker it asks.
	ids := make([]string, 2)
	for i, g := range []*rpc.GroupClient{e.a, e.b} {
		resp, err := g.JoinGroup(ctx, coordapi.ClientInfo{ID: "client", Host: "/127.0.0.1"}, joinReq(""))
		if err != nil {
			t.Fatal(err)
		}
		if resp.ErrorCode != kerr.MemberIDRequired.Code || resp.MemberID == "" || resp.Version != 9 {
			t.Fatalf("first join: %+v", resp)
		}
		ids[i] = resp.MemberID
	}
	// Both join; the group waits for both (the first member's join is
	// held), then answers them together.
	var wg sync.WaitGroup
	joins := make([]*kmsg.JoinGroupResponse, 2)
	for i, g := range []*rpc.GroupClient{e.a, e.b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := g.JoinGroup(ctx, coordapi.ClientInfo{ID: "client", Host: "/127.0.0.1"}, joinReq(ids[i]))
			if err != nil {
				t.Error(err)
				return
			}
			joins[i] = resp
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	leader := joins[0].LeaderID
	for i, j := range joins {
		if j.ErrorCode != 0 || j.Generation != 1 || j.LeaderID != leader || j.MemberID != ids[i] {
			t.Fatalf("join %d: %+v", i, j)
		}
	}
	var leaderJoin *kmsg.JoinGroupResponse
	for _, j := range joins {
		if j.MemberID == leader {
			leaderJoin = j
		}
	}
	if len(leaderJoin.Members) != 2 {
		t.Fatalf("leader sees %d members", len(leaderJoin.Members))
	}

	// The follower's SyncGroup is held until the leader's, through the
	// other broker, hands out the assignment.
	follower := ids[0]
	fg, lg := e.a, e.b
	if follower == leader {
		follower = ids[1]
		fg, lg = e.b, e.a
	}
	syncDone := make(chan *kmsg.SyncGroupResponse, 1)
	go func() {
		req := kmsg.NewPtrSyncGroupRequest()
		req.Version, req.Group, req.MemberID, req.Generation = 5, "g", follower, 1
		req.ProtocolType, req.Protocol = kmsg.StringPtr("consumer"), kmsg.StringPtr("range")
		resp, err := fg.SyncGroup(ctx, req)
		if err != nil {
			t.Error(err)
		}
		syncDone <- resp
	}()
	req := kmsg.NewPtrSyncGroupRequest()
	req.Version, req.Group, req.MemberID, req.Generation = 5, "g", leader, 1
	req.ProtocolType, req.Protocol = kmsg.StringPtr("consumer"), kmsg.StringPtr("range")
	req.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{
		{MemberID: leader, MemberAssignment: []byte("leader's")},
		{MemberID: follower, MemberAssignment: []byte("follower's")},
	}
	if resp, err := lg.SyncGroup(ctx, req); err != nil || resp.ErrorCode != 0 || string(resp.MemberAssignment) != "leader's" {
		t.Fatalf("leader sync: %+v, %v", resp, err)
	}
	if resp := <-syncDone; resp == nil || resp.ErrorCode != 0 || string(resp.MemberAssignment) != "follower's" {
		t.Fatalf("follower sync: %+v", resp)
	}

	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Version, hb.Group, hb.MemberID, hb.Generation = 4, "g", follower, 0
	if resp, err := e.a.Heartbeat(ctx, hb); err != nil || resp.ErrorCode != kerr.IllegalGeneration.Code {
		t.Fatalf("heartbeat of an old generation: %+v, %v", resp, err)
	}

	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Version, commit.Group, commit.MemberID, commit.Generation = 9, "g", leader, 1
	commit.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "t", TopicID: tp.ID, Partitions: []kmsg.OffsetCommitRequestTopicPartition{
		{Partition: 0, Offset: 42, LeaderEpoch: 3, Metadata: kmsg.StringPtr("meta")},
		{Partition: 1, Offset: 7, LeaderEpoch: -1},
	}}}
	if resp, err := lg.OffsetCommit(ctx, commit); err != nil || resp.Topics[0].Partitions[0].ErrorCode != 0 || resp.Topics[0].Partitions[1].ErrorCode != 0 {
		t.Fatalf("commit: %+v, %v", resp, err)
	}
	fetch := kmsg.NewPtrOffsetFetchRequest()
	fetch.Version = 8
	fetch.Groups = []kmsg.OffsetFetchRequestGroup{{Group: "g", Topics: []kmsg.OffsetFetchRequestGroupTopic{{Topic: "t", Partitions: []int32{0, 1}}}}}
	resp, err := fg.OffsetFetch(ctx, fetch)
	if err != nil {
		t.Fatal(err)
	}
	ps := resp.Groups[0].Topics[0].Partitions
	if ps[0].Offset != 42 || ps[0].LeaderEpoch != 3 || ps[0].Metadata == nil || *ps[0].Metadata != "meta" || ps[1].Offset != 7 {
		t.Fatalf("fetched %+v", ps)
	}

	describe := kmsg.NewPtrDescribeGroupsRequest()
	describe.Version, describe.Groups = 5, []string{"g"}
	if resp, err := e.b.DescribeGroups(ctx, describe); err != nil || resp.Groups[0].State != "Stable" || len(resp.Groups[0].Members) != 2 ||
		resp.Groups[0].Members[0].ClientHost != "/127.0.0.1" {
		t.Fatalf("describe: %+v, %v", resp, err)
	}
	list := kmsg.NewPtrListGroupsRequest()
	list.Version = 5
	if resp, err := e.a.ListGroups(ctx, list); err != nil || len(resp.Groups) != 1 || resp.Groups[0].Group != "g" {
		t.Fatalf("list: %+v, %v", resp, err)
	}

	// Deleting the topic drops its committed offsets with it.
	if _, err := e.client.DeleteTopic(ctx, "t"); err != nil {
		t.Fatal(err)
	}
	all := kmsg.NewPtrOffsetFetchRequest()
	all.Version = 8
	all.Groups = []kmsg.OffsetFetchRequestGroup{{Group: "g"}}
	if resp := e.groups.OffsetFetch(ctx, all); len(resp.Groups[0].Topics) != 0 {
		t.Fatalf("offsets left of a deleted topic: %+v", resp.Groups[0].Topics)
	}
}

// TestGroupsUnavailable: with no group coordinator served, group requests
// fail at once with an error wrapping ErrUnavailable (the broker answers
// COORDINATOR_NOT_AVAILABLE), rather than hang.
func TestGroupsUnavailable(t *testing.T) {
	ns := natstest.Start(t)
	c, err := coordinator.Open(coordinator.Options{Dir: t.TempDir(), Logger: testkit.Logger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	srv, err := rpc.Serve(context.Background(), natstest.Connect(t, ns), "test", c, testkit.Logger()) // no Groups
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	g := rpc.NewClient(natstest.Connect(t, ns), "test", rpc.ClientOptions{Timeout: 2 * time.Second}).Groups()
	_, err = g.JoinGroup(context.Background(), coordapi.ClientInfo{}, joinReq(""))
	if !errors.Is(err, rpc.ErrUnavailable) || !errors.Is(err, nats.ErrNoResponders) {
		t.Fatalf("join with no group coordinator: %v", err)
	}
	hb := kmsg.NewPtrHeartbeatRequest()
	if _, err := g.Heartbeat(context.Background(), hb); !errors.Is(err, rpc.ErrUnavailable) {
		t.Fatalf("heartbeat with no group coordinator: %v", err)
	}
}

// TestHeldJoinOnClose: a JoinGroup held in a rebalance is answered when
// the group coordinator closes (NOT_COORDINATOR: the client finds the
// coordinator again and rejoins), not left to its timeout.
func TestHeldJoinOnClose(t *testing.T) {
	e := newGroupsEnv(t)
	ctx := context.Background()
	first, err := e.a.JoinGroup(ctx, coordapi.ClientInfo{}, joinReq(""))
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := e.a.JoinGroup(ctx, coordapi.ClientInfo{}, joinReq(first.MemberID)); err != nil || resp.ErrorCode != 0 {
		t.Fatalf("join: %+v, %v", resp, err)
	}
	// A second member triggers a rebalance; its join is held until the
	// first member rejoins, which it never does here.
	second, err := e.b.JoinGroup(ctx, coordapi.ClientInfo{}, joinReq(""))
	if err != nil {
		t.Fatal(err)
	}
	held := make(chan *kmsg.JoinGroupResponse, 1)
	go func() {
		resp, err := e.b.JoinGroup(ctx, coordapi.ClientInfo{}, joinReq(second.MemberID))
		if err != nil {
			t.Error(err)
		}
		held <- resp
	}()
	select {
	case resp := <-held:
		t.Fatalf("join answered before the rebalance completed: %+v", resp)
	case <-time.After(300 * time.Millisecond):
	}
	e.groups.Close()
	select {
	case resp := <-held:
		if resp == nil || resp.ErrorCode != kerr.NotCoordinator.Code {
			t.Fatalf("held join on close: %+v", resp)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("held join not answered when the group coordinator closed")
	}
}

// TestHeldJoinCoordinatorGone: a JoinGroup held in a rebalance by a
// coordinator that then dies without answering (its NATS connection cut),
// or that restarts, fails with ErrUnavailable within a few pings, not at
// its rebalance timeout (here a minute); the broker answers
// COORDINATOR_NOT_AVAILABLE and the client rejoins the coordinator that
// is there now.
func TestHeldJoinCoordinatorGone(t *testing.T) {
	for _, restart := range []bool{false, true} {
		t.Run(map[bool]string{false: "dies", true: "restarts"}[restart], func(t *testing.T) {
			ns := natstest.Start(t)
			c, gs := openGroupsState(t)
			srvConn := natstest.Connect(t, ns)
			if _, err := rpc.ServeWith(context.Background(), srvConn, "test", c, rpc.ServerOptions{Logger: testkit.Logger(), Groups: gs}); err != nil {
				t.Fatal(err)
			}
			g := rpc.NewClient(natstest.Connect(t, ns), "test", rpc.ClientOptions{Timeout: 2 * time.Second}).Groups()
			ctx := context.Background()
			long := func(member string) *kmsg.JoinGroupRequest {
				req := joinReq(member)
				req.RebalanceTimeoutMillis = 60_000
				return req
			}
			first, err := g.JoinGroup(ctx, coordapi.ClientInfo{}, long(""))
			if err != nil {
				t.Fatal(err)
			}
			if resp, err := g.JoinGroup(ctx, coordapi.ClientInfo{}, long(first.MemberID)); err != nil || resp.ErrorCode != 0 {
				t.Fatalf("join: %+v, %v", resp, err)
			}
			second, err := g.JoinGroup(ctx, coordapi.ClientInfo{}, long(""))
			if err != nil {
				t.Fatal(err)
			}
			held := make(chan error, 1)
			go func() {
				_, err := g.JoinGroup(ctx, coordapi.ClientInfo{}, long(second.MemberID))
				held <- err
			}()
			// The join is held: the group waits in a rebalance for the
			// first member to rejoin.
			testkit.CheckFor(t, 10*time.Second, time.Millisecond, func() error {
				req := kmsg.NewPtrDescribeGroupsRequest()
				req.Groups = []string{"g"}
				if st := gs.DescribeGroups(ctx, req).Groups[0].State; st != "PreparingRebalance" {
					return fmt.Errorf("group %s", st)
				}
				return nil
			})
			srvConn.Close() // the coordinator is gone, its held requests with it
			if restart {
				srv, err := rpc.ServeWith(context.Background(), natstest.Connect(t, ns), "test", c, rpc.ServerOptions{Logger: testkit.Logger(), Groups: gs})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(srv.Close)
			}
			select {
			case err := <-held:
				if !errors.Is(err, rpc.ErrUnavailable) {
					t.Fatalf("held join: %v, want ErrUnavailable", err)
				}
				t.Logf("held join ended: %v", err)
			case <-time.After(30 * time.Second):
				t.Fatal("held join still waiting 30s after its coordinator went away")
			}
		})
	}
}

// TestTxnOffsetCommitOverNATS: a transactional producer's offsets
// committed through one broker's client (with the topic id the broker
// resolved) are pending: the other broker's RequireStable fetch answers
// UNSTABLE_OFFSET_COMMIT and a plain fetch the old offset, until the
// transaction coordinator, in the coordinator's process, completes them.
// Deleting the topic drops them.
func TestTxnOffsetCommitOverNATS(t *testing.T) {
	e := newGroupsEnv(t)
	ctx := context.Background()
	tp, err := e.coord.CreateTopic(ctx, coordapi.CreateTopicRequest{Name: "t", Partitions: 1, ReplicationFactor: -1})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []int16{0, 3, 4} {
		commit := kmsg.NewPtrTxnOffsetCommitRequest()
		commit.Version, commit.TransactionalID, commit.Group, commit.ProducerID, commit.ProducerEpoch = v, "tx", "g", 11, 0
		commit.Topics = []kmsg.TxnOffsetCommitRequestTopic{{Topic: "t", TopicID: tp.ID, Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{
			{Partition: 0, Offset: 100 + int64(v), LeaderEpoch: 2, Metadata: kmsg.StringPtr("m")},
		}}}
		resp, err := e.a.TxnOffsetCommit(ctx, commit)
		if err != nil || resp.Version != v || len(resp.Topics) != 1 || resp.Topics[0].Topic != "t" || resp.Topics[0].Partitions[0].ErrorCode != 0 {
			t.Fatalf("txn offset commit v%d: %+v, %v", v, resp, err)
		}
	}
	fetch := func(stable bool) kmsg.OffsetFetchResponseGroupTopicPartition {
		t.Helper()
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Version, req.RequireStable = 8, stable
		req.Groups = []kmsg.OffsetFetchRequestGroup{{Group: "g", Topics: []kmsg.OffsetFetchRequestGroupTopic{{Topic: "t", Partitions: []int32{0}}}}}
		resp, err := e.b.OffsetFetch(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Groups[0].Topics[0].Partitions[0]
	}
	if p := fetch(true); p.ErrorCode != kerr.UnstableOffsetCommit.Code {
		t.Fatalf("stable fetch of a pending offset: %+v", p)
	}
	if p := fetch(false); p.ErrorCode != 0 || p.Offset != -1 {
		t.Fatalf("fetch of a pending offset: %+v", p)
	}
	if err := e.groups.CompleteTxnOffsets(ctx, "g", 11, true); err != nil {
		t.Fatal(err)
	}
	if p := fetch(true); p.ErrorCode != 0 || p.Offset != 104 || p.LeaderEpoch != 2 || p.Metadata == nil || *p.Metadata != "m" {
		t.Fatalf("stable fetch after the commit: %+v", p)
	}
	// Deleting the topic drops pending offsets of it too.
	again := kmsg.NewPtrTxnOffsetCommitRequest()
	again.Version, again.TransactionalID, again.Group, again.ProducerID, again.ProducerEpoch = 4, "tx", "g", 11, 1
	again.Topics = []kmsg.TxnOffsetCommitRequestTopic{{Topic: "t", TopicID: tp.ID, Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{{Partition: 0, Offset: 200, LeaderEpoch: -1}}}}
	if resp, err := e.a.TxnOffsetCommit(ctx, again); err != nil || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("txn offset commit: %+v, %v", resp, err)
	}
	if _, err := e.client.DeleteTopic(ctx, "t"); err != nil {
		t.Fatal(err)
	}
	if err := e.groups.CompleteTxnOffsets(ctx, "g", 11, true); err != nil {
		t.Fatal(err)
	}
	if p := fetch(true); p.ErrorCode != 0 || p.Offset != -1 {
		t.Fatalf("fetch after the topic was deleted: %+v", p)
	}
}
