package broker

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/vfs"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/coordinator"
	"github.com/floe-io/floe/coordinator/rpc"
	"github.com/floe-io/floe/groups"
	"github.com/floe-io/floe/internal/testkit"
	"github.com/floe-io/floe/internal/testkit/natstest"
)

// newGroupsBroker returns a broker with a real coordinator holding topic
// "t" (4 partitions) and a real group coordinator, both in memory.
func newGroupsBroker(t *testing.T) *Broker {
	t.Helper()
	c := newTestCoordinator(t)
	createTopic(t, c, "t", 4, nil)
	return newTestBroker(t, Deps{Coordinator: c, Groups: groups.Direct(newTestGroups(t, c))})
}

// newTestGroups opens a group coordinator in memory on topics (nil: none),
// closed when the test ends.
func newTestGroups(t *testing.T, topics groups.TopicLister) *groups.Groups {
	t.Helper()
	g, err := groups.Open(groups.Options{Dir: "groups", FS: vfs.NewMem(), Topics: topics})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := g.Close(); err != nil {
			t.Errorf("close groups: %v", err)
		}
	})
	return g
}

func TestFindCoordinator(t *testing.T) {
	b := newGroupsBroker(t)
	for _, v := range servedVersions(t, kmsg.FindCoordinator) {
		req := kmsg.NewPtrFindCoordinatorRequest()
		if v < 4 {
			req.CoordinatorKey = "g"
			resp := serveVersion[*kmsg.FindCoordinatorResponse](t, b, req, v)
			if resp.ErrorCode != 0 || resp.NodeID != 1 || resp.Host != "127.0.0.1" || resp.Port != 9092 {
				t.Fatalf("v%d: %+v", v, resp)
			}
			if v >= 1 {
				// Kafka's error message is never null: "NONE" on success.
				if showStr(resp.ErrorMessage) != "NONE" {
					t.Errorf("v%d: error message %s, want NONE", v, showStr(resp.ErrorMessage))
				}
				req.CoordinatorType = 1 // a transactional id: served here too
				resp = serveVersion[*kmsg.FindCoordinatorResponse](t, b, req, v)
				if resp.ErrorCode != 0 || resp.NodeID != 1 || showStr(resp.ErrorMessage) != "NONE" {
					t.Fatalf("v%d transaction: %+v", v, resp)
				}
				req.CoordinatorType = 7
				if resp = serveVersion[*kmsg.FindCoordinatorResponse](t, b, req, v); resp.ErrorCode != kerr.InvalidRequest.Code {
					t.Fatalf("v%d bad type: %+v", v, resp)
				}
			}
			continue
		}
		req.CoordinatorKeys = []string{"a", "b", ""}
		resp := serveVersion[*kmsg.FindCoordinatorResponse](t, b, req, v)
		if len(resp.Coordinators) != 3 {
			t.Fatalf("v%d: %d coordinators", v, len(resp.Coordinators))
		}
		for i, c := range resp.Coordinators {
			if c.Key != req.CoordinatorKeys[i] || c.ErrorCode != 0 || c.NodeID != 1 || c.Port != 9092 || showStr(c.ErrorMessage) != "NONE" {
				t.Fatalf("v%d: %+v (error message %s)", v, c, showStr(c.ErrorMessage))
			}
		}
		req.CoordinatorType = 1
		resp = serveVersion[*kmsg.FindCoordinatorResponse](t, b, req, v)
		for _, c := range resp.Coordinators {
			if c.ErrorCode != 0 || c.NodeID != 1 {
				t.Fatalf("v%d transaction: %+v", v, c)
			}
		}
	}
}

// TestGroupLifecycleEveryVersion runs one member through join, sync,
// heartbeat, commit, fetch, describe, list, leave and delete at every served
// version of each API.
func TestGroupLifecycleEveryVersion(t *testing.T) {
	b := newGroupsBroker(t)
	meta := kmsg.NewConsumerMemberMetadata()
	meta.Topics = []string{"t"}
	for _, v := range servedVersions(t, kmsg.JoinGroup) {
		group := "g" + string(rune('0'+v))
		join := kmsg.NewPtrJoinGroupRequest()
		join.Group, join.SessionTimeoutMillis, join.RebalanceTimeoutMillis, join.ProtocolType = group, 10000, 10000, "consumer"
		join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: meta.AppendTo(nil)}}
		resp := serveVersion[*kmsg.JoinGroupResponse](t, b, join, v)
		if v >= 4 {
			if resp.ErrorCode != kerr.MemberIDRequired.Code {
				t.Fatalf("join v%d: %s", v, kerr.ErrorForCode(resp.ErrorCode))
			}
			join.MemberID = resp.MemberID
			resp = serveVersion[*kmsg.JoinGroupResponse](t, b, join, v)
		}
		if resp.ErrorCode != 0 || resp.Generation != 1 || resp.LeaderID != resp.MemberID || len(resp.Members) != 1 {
			t.Fatalf("join v%d: %+v", v, resp)
		}
		if resp.Protocol == nil || *resp.Protocol != "range" {
			t.Fatalf("join v%d: protocol %v", v, resp.Protocol)
		}
		member, gen := resp.MemberID, resp.Generation

		sv := min(v, 5)
		sync := kmsg.NewPtrSyncGroupRequest()
		sync.Group, sync.MemberID, sync.Generation = group, member, gen
		sync.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{{MemberID: member, MemberAssignment: []byte("x")}}
		sresp := serveVersion[*kmsg.SyncGroupResponse](t, b, sync, sv)
		if sresp.ErrorCode != 0 || string(sresp.MemberAssignment) != "x" {
			t.Fatalf("sync v%d: %+v", sv, sresp)
		}

		hb := kmsg.NewPtrHeartbeatRequest()
		hb.Group, hb.MemberID, hb.Generation = group, member, gen
		if r := serveVersion[*kmsg.HeartbeatResponse](t, b, hb, min(v, 4)); r.ErrorCode != 0 {
			t.Fatalf("heartbeat: %s", kerr.ErrorForCode(r.ErrorCode))
		}

		desc := kmsg.NewPtrDescribeGroupsRequest()
		desc.Groups = []string{group}
		d := serveVersion[*kmsg.DescribeGroupsResponse](t, b, desc, min(v, 6))
		if g := d.Groups[0]; g.State != "Stable" || len(g.Members) != 1 || string(g.Members[0].MemberAssignment) != "x" {
			t.Fatalf("describe: %+v", g)
		}

		leave := kmsg.NewPtrLeaveGroupRequest()
		leave.Group = group
		lv := min(v, 5)
		if lv < 3 {
			leave.MemberID = member
		} else {
			leave.Members = []kmsg.LeaveGroupRequestMember{{MemberID: member}}
		}
		if r := serveVersion[*kmsg.LeaveGroupResponse](t, b, leave, lv); r.ErrorCode != 0 || (lv >= 3 && r.Members[0].ErrorCode != 0) {
			t.Fatalf("leave v%d: %+v", lv, r)
		}
	}

	list := kmsg.NewPtrListGroupsRequest()
	for _, v := range servedVersions(t, kmsg.ListGroups) {
		r := serveVersion[*kmsg.ListGroupsResponse](t, b, list, v)
		if r.ErrorCode != 0 || len(r.Groups) != 10 || r.Groups[0].ProtocolType != "consumer" {
			t.Fatalf("list v%d: %+v", v, r)
		}
		if v >= 4 && r.Groups[0].GroupState != "Empty" {
			t.Fatalf("list v%d: state %q", v, r.Groups[0].GroupState)
		}
	}

	for _, v := range servedVersions(t, kmsg.DeleteGroups) {
		del := kmsg.NewPtrDeleteGroupsRequest()
		del.Groups = []string{"g" + string(rune('0'+v)), "nope"}
		r := serveVersion[*kmsg.DeleteGroupsResponse](t, b, del, v)
		if r.Groups[0].ErrorCode != 0 || r.Groups[1].ErrorCode != kerr.GroupIDNotFound.Code {
			t.Fatalf("delete v%d: %+v", v, r)
		}
	}
}

func TestOffsetCommitFetchEveryVersion(t *testing.T) {
	b := newGroupsBroker(t)
	for _, v := range servedVersions(t, kmsg.OffsetCommit) {
		group := "c" + string(rune('0'+v))
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Group = group
		known := kmsg.NewOffsetCommitRequestTopic()
		known.Topic = "t"
		known.Partitions = []kmsg.OffsetCommitRequestTopicPartition{
			{Partition: 2, Offset: 10 + int64(v), LeaderEpoch: 4, Metadata: kmsg.StringPtr("m")},
			{Partition: 9, Offset: 1, LeaderEpoch: -1},
		}
		unknown := kmsg.NewOffsetCommitRequestTopic()
		unknown.Topic = "missing"
		unknown.Partitions = []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 1, LeaderEpoch: -1}}
		req.Topics = []kmsg.OffsetCommitRequestTopic{known, unknown}
		resp := serveVersion[*kmsg.OffsetCommitResponse](t, b, req, v)
		got := []int16{resp.Topics[0].Partitions[0].ErrorCode, resp.Topics[0].Partitions[1].ErrorCode, resp.Topics[1].Partitions[0].ErrorCode}
		want := []int16{0, kerr.UnknownTopicOrPartition.Code, kerr.UnknownTopicOrPartition.Code}
		if got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
			t.Fatalf("commit v%d: codes %v, want %v", v, got, want)
		}
		for _, fv := range servedVersions(t, kmsg.OffsetFetch) {
			f := kmsg.NewPtrOffsetFetchRequest()
			var parts []kmsg.OffsetFetchResponseGroupTopicPartition
			if fv >= 8 {
				f.Groups = []kmsg.OffsetFetchRequestGroup{{Group: group, Topics: []kmsg.OffsetFetchRequestGroupTopic{{Topic: "t", Partitions: []int32{2, 3}}}}}
				fr := serveVersion[*kmsg.OffsetFetchResponse](t, b, f, fv)
				parts = fr.Groups[0].Topics[0].Partitions
			} else {
				f.Group = group
				f.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "t", Partitions: []int32{2, 3}}}
				fr := serveVersion[*kmsg.OffsetFetchResponse](t, b, f, fv)
				for _, p := range fr.Topics[0].Partitions {
					parts = append(parts, kmsg.OffsetFetchResponseGroupTopicPartition{Partition: p.Partition, Offset: p.Offset, LeaderEpoch: p.LeaderEpoch, Metadata: p.Metadata, ErrorCode: p.ErrorCode})
				}
			}
			wantEpoch := int32(4)
			if v < 6 || fv < 5 {
				wantEpoch = -1
			}
			if p := parts[0]; p.Offset != 10+int64(v) || p.LeaderEpoch != wantEpoch || p.Metadata == nil || *p.Metadata != "m" || p.ErrorCode != 0 {
				t.Fatalf("commit v%d fetch v%d: %+v", v, fv, p)
			}
			if p := parts[1]; p.Offset != -1 || p.LeaderEpoch != -1 || p.ErrorCode != 0 {
				t.Fatalf("commit v%d fetch v%d uncommitted: %+v", v, fv, p)
			}
		}
	}
}

func TestOffsetDeleteUnknownTopic(t *testing.T) {
	b := newGroupsBroker(t)
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Group = "g"
	commit.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 5, LeaderEpoch: -1}}}}
	serveVersion[*kmsg.OffsetCommitResponse](t, b, commit, 9)
	req := kmsg.NewPtrOffsetDeleteRequest()
	req.Group = "g"
	req.Topics = []kmsg.OffsetDeleteRequestTopic{
		{Topic: "missing", Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}},
		{Topic: "t", Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 7}, {Partition: 0}}},
	}
	resp := serveVersion[*kmsg.OffsetDeleteResponse](t, b, req, 0)
	if resp.ErrorCode != 0 || resp.Topics[0].Partitions[0].ErrorCode != kerr.UnknownTopicOrPartition.Code ||
		resp.Topics[1].Partitions[0].ErrorCode != kerr.UnknownTopicOrPartition.Code || resp.Topics[1].Partitions[1].ErrorCode != 0 {
		t.Fatalf("delete: %+v", resp)
	}
	req.Group = "nope"
	if r := serveVersion[*kmsg.OffsetDeleteResponse](t, b, req, 0); r.ErrorCode != kerr.GroupIDNotFound.Code || len(r.Topics) != 0 {
		t.Fatalf("missing group: %+v", r)
	}
}

func TestGroupAPIsWithoutCoordinator(t *testing.T) {
	b := newAdminBroker(t, newTestCoordinator(t))
	join := kmsg.NewPtrJoinGroupRequest()
	join.Group = "g"
	if r := serveVersion[*kmsg.JoinGroupResponse](t, b, join, 9); r.ErrorCode != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("join: %+v", r)
	}
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKey = "g"
	if r := serveVersion[*kmsg.FindCoordinatorResponse](t, b, fc, 3); r.ErrorCode != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("find coordinator: %+v", r)
	}
	// Before v2 every asked partition carries the error, with Kafka's
	// empty metadata (NO_METADATA), never null.
	for _, v := range []int16{0, 1} {
		of := kmsg.NewPtrOffsetFetchRequest()
		of.Group = "g"
		of.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "t", Partitions: []int32{0, 1}}}
		r := serveVersion[*kmsg.OffsetFetchResponse](t, b, of, v)
		if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 2 {
			t.Fatalf("offset fetch v%d: %+v", v, r)
		}
		for _, p := range r.Topics[0].Partitions {
			if p.ErrorCode != kerr.CoordinatorNotAvailable.Code || p.Offset != -1 || p.Metadata == nil || *p.Metadata != "" {
				t.Errorf("offset fetch v%d partition %d: code %d offset %d metadata %s", v, p.Partition, p.ErrorCode, p.Offset, showStr(p.Metadata))
			}
		}
	}
}

func TestConsumerGroupHeartbeatEveryVersion(t *testing.T) {
	b := newGroupsBroker(t)
	for _, v := range servedVersions(t, kmsg.ConsumerGroupHeartbeat) {
		group := "cg" + string(rune('0'+v))
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Group, req.RebalanceTimeoutMillis = group, 30000
		if v >= 1 {
			req.MemberID = "member-" + group
		}
		req.SubscribedTopicNames = []string{"t"}
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		resp := serveVersion[*kmsg.ConsumerGroupHeartbeatResponse](t, b, req, v)
		if resp.ErrorCode != 0 || resp.MemberID == nil || resp.MemberEpoch != 1 || resp.Assignment == nil ||
			len(resp.Assignment.Topics) != 1 || len(resp.Assignment.Topics[0].Partitions) != 4 || resp.HeartbeatIntervalMillis <= 0 {
			t.Fatalf("v%d join: %+v", v, resp)
		}
		member := *resp.MemberID

		fetch := kmsg.NewPtrOffsetFetchRequest()
		rg := kmsg.NewOffsetFetchRequestGroup()
		rg.Group, rg.MemberID, rg.MemberEpoch = group, &member, 7
		fetch.Groups = append(fetch.Groups, rg)
		if fr := serveVersion[*kmsg.OffsetFetchResponse](t, b, fetch, 9); fr.Groups[0].ErrorCode != kerr.StaleMemberEpoch.Code {
			t.Fatalf("fetch with a wrong epoch: %+v", fr.Groups[0])
		}

		desc := kmsg.NewPtrConsumerGroupDescribeRequest()
		desc.Groups = []string{group, "nope"}
		for _, dv := range servedVersions(t, kmsg.ConsumerGroupDescribe) {
			d := serveVersion[*kmsg.ConsumerGroupDescribeResponse](t, b, desc, dv)
			if g := d.Groups[0]; g.ErrorCode != 0 || g.State != "Stable" || len(g.Members) != 1 || g.Members[0].MemberID != member ||
				g.Members[0].Assignment.TopicPartitions[0].Topic != "t" {
				t.Fatalf("describe v%d: %+v", dv, g)
			}
			if d.Groups[1].ErrorCode != kerr.GroupIDNotFound.Code {
				t.Fatalf("describe v%d missing group: %+v", dv, d.Groups[1])
			}
		}

		leave := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		leave.Group, leave.MemberID, leave.MemberEpoch = group, member, -1
		if r := serveVersion[*kmsg.ConsumerGroupHeartbeatResponse](t, b, leave, v); r.ErrorCode != 0 || r.MemberEpoch != -1 {
			t.Fatalf("v%d leave: %+v", v, r)
		}
	}
}

// TestEveryBrokerServesGroups: with brokers 1, 3 and 5 live, broker 3
// names itself the coordinator of every group (any broker serves any
// group) and serves them all; its ListGroups lists only its share of the
// groups, by a stable hash over the live brokers, so that a client merging
// every broker's answer sees each group once.
func TestEveryBrokerServesGroups(t *testing.T) {
	c := newTestCoordinator(t, func(o *coordinator.Options) { o.BrokerTTL = time.Hour })
	createTopic(t, c, "t", 4, nil)
	others := []coordapi.BrokerInfo{{NodeID: 1, Host: "10.0.0.1", Port: 9092}, {NodeID: 5, Host: "10.0.0.5", Port: 9092}}
	registerBrokers(t, c, append(others, coordapi.BrokerInfo{NodeID: 3, Host: "10.0.0.3", Port: 9092})...)
	b := newTestBroker(t, Deps{Coordinator: c, Groups: groups.Direct(newTestGroups(t, nil))},
		func(o *Options) { o.NodeID = 3; o.AdvertisedAddr = "10.0.0.3:9092" })

	fc := kmsg.NewPtrFindCoordinatorRequest()
	var all []string
	for i := 0; i < 30; i++ {
		all = append(all, fmt.Sprintf("g%d", i))
	}
	fc.CoordinatorKeys = all
	for _, c := range serveVersion[*kmsg.FindCoordinatorResponse](t, b, fc, 4).Coordinators {
		if c.ErrorCode != 0 || c.NodeID != 3 || c.Host != "10.0.0.3" || c.Port != 9092 {
			t.Fatalf("coordinator of %s: %+v", c.Key, c)
		}
	}
	for _, group := range all {
		commit := kmsg.NewPtrOffsetCommitRequest()
		commit.Group = group
		commit.Topics = []kmsg.OffsetCommitRequestTopic{
			{Topic: "t", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 7, LeaderEpoch: -1}}},
			{Topic: "missing", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 1, LeaderEpoch: -1}}},
		}
		r := serveVersion[*kmsg.OffsetCommitResponse](t, b, commit, 9)
		if r.Topics[0].Partitions[0].ErrorCode != 0 || r.Topics[1].Partitions[0].ErrorCode != kerr.UnknownTopicOrPartition.Code {
			t.Fatalf("commit %s: %+v", group, r)
		}
	}
	fetch := kmsg.NewPtrOffsetFetchRequest()
	fetch.Groups = []kmsg.OffsetFetchRequestGroup{{Group: "g7", Topics: []kmsg.OffsetFetchRequestGroupTopic{{Topic: "t", Partitions: []int32{0}}}}}
	if r := serveVersion[*kmsg.OffsetFetchResponse](t, b, fetch, 8); r.Groups[0].ErrorCode != 0 || r.Groups[0].Topics[0].Partitions[0].Offset != 7 {
		t.Fatalf("fetch: %+v", r)
	}

	// ListGroups: broker 3's share, stable, and a third or so of them.
	listed := func() []string {
		var out []string
		for _, g := range serveVersion[*kmsg.ListGroupsResponse](t, b, kmsg.NewPtrListGroupsRequest(), 5).Groups {
			out = append(out, g.Group)
		}
		slices.Sort(out)
		return out
	}
	mine := listed()
	if len(mine) == 0 || len(mine) == len(all) {
		t.Fatalf("broker 3 lists %d of %d groups, want its share", len(mine), len(all))
	}
	if again := listed(); !slices.Equal(again, mine) {
		t.Fatalf("listed %v, then %v", mine, again)
	}
	// Alone in the cluster, it lists them all once its view of the
	// registry is refreshed (within registryRefresh).
	for _, bi := range others {
		if err := c.DeregisterBroker(t.Context(), bi); err != nil {
			t.Fatal(err)
		}
	}
	testkit.CheckFor(t, 5*time.Second, 10*time.Millisecond, func() error {
		if n := len(listed()); n != len(all) {
			return fmt.Errorf("alone, broker 3 lists %d of %d groups", n, len(all))
		}
		return nil
	})
}

// TestGroupCoordinatorDown: while the cluster's group coordinator does not
// answer (a real NATS server, no coordinator subscribed), every group API
// answers COORDINATOR_NOT_AVAILABLE (retriable: clients find the
// coordinator again), in the shape of its response.
func TestGroupCoordinatorDown(t *testing.T) {
	c := newTestCoordinator(t)
	createTopic(t, c, "t", 4, nil)
	nc := natstest.Connect(t, natstest.Start(t))
	b := newTestBroker(t, Deps{Coordinator: c, Groups: rpc.NewClient(nc, "test", rpc.ClientOptions{Timeout: time.Second}).Groups()})
	const na = 15 // COORDINATOR_NOT_AVAILABLE
	if na != kerr.CoordinatorNotAvailable.Code {
		t.Fatal("code")
	}

	join := kmsg.NewPtrJoinGroupRequest()
	join.Group, join.MemberID, join.ProtocolType = "g", "m", "consumer"
	sync := kmsg.NewPtrSyncGroupRequest()
	sync.Group, sync.MemberID = "g", "m"
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Group, hb.MemberID = "g", "m"
	leave := kmsg.NewPtrLeaveGroupRequest()
	leave.Group = "g"
	cgh := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	cgh.Group = "g"
	for name, code := range map[string]int16{
		"join":      serveVersion[*kmsg.JoinGroupResponse](t, b, join, 9).ErrorCode,
		"sync":      serveVersion[*kmsg.SyncGroupResponse](t, b, sync, 5).ErrorCode,
		"heartbeat": serveVersion[*kmsg.HeartbeatResponse](t, b, hb, 4).ErrorCode,
		"leave":     serveVersion[*kmsg.LeaveGroupResponse](t, b, leave, 5).ErrorCode,
		"list":      serveVersion[*kmsg.ListGroupsResponse](t, b, kmsg.NewPtrListGroupsRequest(), 5).ErrorCode,
		"848":       serveVersion[*kmsg.ConsumerGroupHeartbeatResponse](t, b, cgh, 0).ErrorCode,
	} {
		if code != na {
			t.Errorf("%s: code %d, want COORDINATOR_NOT_AVAILABLE", name, code)
		}
	}
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Group = "g"
	commit.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 1, Offset: 1}, {Partition: 2, Offset: 1}}}}
	for _, p := range serveVersion[*kmsg.OffsetCommitResponse](t, b, commit, 9).Topics[0].Partitions {
		if p.ErrorCode != na {
			t.Errorf("commit partition %d: code %d", p.Partition, p.ErrorCode)
		}
	}
	fetch := kmsg.NewPtrOffsetFetchRequest()
	fetch.Groups = []kmsg.OffsetFetchRequestGroup{{Group: "g"}, {Group: "h"}}
	for _, g := range serveVersion[*kmsg.OffsetFetchResponse](t, b, fetch, 8).Groups {
		if g.ErrorCode != na {
			t.Errorf("fetch %s: code %d", g.Group, g.ErrorCode)
		}
	}
	describe := kmsg.NewPtrDescribeGroupsRequest()
	describe.Groups = []string{"g"}
	if r := serveVersion[*kmsg.DescribeGroupsResponse](t, b, describe, 5); len(r.Groups) != 1 || r.Groups[0].ErrorCode != na {
		t.Errorf("describe: %+v", r)
	}
	del := kmsg.NewPtrDeleteGroupsRequest()
	del.Groups = []string{"g"}
	if r := serveVersion[*kmsg.DeleteGroupsResponse](t, b, del, 2); len(r.Groups) != 1 || r.Groups[0].ErrorCode != na {
		t.Errorf("delete: %+v", r)
	}
	od := kmsg.NewPtrOffsetDeleteRequest()
	od.Group = "g"
	if r := serveVersion[*kmsg.OffsetDeleteResponse](t, b, od, 0); r.ErrorCode != na {
		t.Errorf("offset delete: %+v", r)
	}
}

// TestRecreatedTopicOffsets: the broker stores each commit with its
// topic's id, so a topic deleted and created again starts without offsets
// even though DeleteTopics did not clear them.
func TestRecreatedTopicOffsets(t *testing.T) {
	c := newTestCoordinator(t)
	createTopic(t, c, "t", 4, nil)
	b := newTestBroker(t, Deps{Coordinator: c, Groups: groups.Direct(newTestGroups(t, c))})
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Group = "g"
	commit.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 1, Offset: 9, LeaderEpoch: -1}}}}
	serveVersion[*kmsg.OffsetCommitResponse](t, b, commit, 9)
	fetch := func() int64 {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Groups = []kmsg.OffsetFetchRequestGroup{{Group: "g", Topics: []kmsg.OffsetFetchRequestGroupTopic{{Topic: "t", Partitions: []int32{1}}}}}
		return serveVersion[*kmsg.OffsetFetchResponse](t, b, req, 8).Groups[0].Topics[0].Partitions[0].Offset
	}
	if off := fetch(); off != 9 {
		t.Fatalf("offset %d", off)
	}
	if _, err := c.DeleteTopic(t.Context(), "t"); err != nil {
		t.Fatal(err)
	}
	createTopic(t, c, "t", 4, nil)
	// The group coordinator's topic view is at most 500ms old, the broker's
	// topic cache at most topicTTL.
	testkit.CheckFor(t, 5*time.Second, 10*time.Millisecond, func() error {
		if off := fetch(); off != -1 {
			return fmt.Errorf("the recreated topic still has the old offset %d", off)
		}
		return nil
	})
}

// TestDrainAnswersHeldJoin: a JoinGroup held in a rebalance is answered
// NOT_COORDINATOR when the broker starts draining (the client rejoins
// through another broker), rather than holding the drain up.
func TestDrainAnswersHeldJoin(t *testing.T) {
	b := newGroupsBroker(t)
	join := func(member string) *kmsg.JoinGroupResponse {
		req := kmsg.NewPtrJoinGroupRequest()
		req.Group, req.MemberID, req.ProtocolType = "g", member, "consumer"
		req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 30_000, 30_000
		req.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range"}}
		return serveVersion[*kmsg.JoinGroupResponse](t, b, req, 9)
	}
	first := join("")
	if r := join(first.MemberID); r.ErrorCode != 0 {
		t.Fatalf("join: %+v", r)
	}
	// A second member's join is held until the first rejoins: the group
	// goes to PreparingRebalance when it arrives.
	second := join("")
	held := make(chan *kmsg.JoinGroupResponse, 1)
	go func() { held <- join(second.MemberID) }()
	notAnswered := func() {
		t.Helper()
		select {
		case r := <-held:
			t.Fatalf("join answered before the rebalance completed: %+v", r)
		default:
		}
	}
	testkit.CheckFor(t, 10*time.Second, 10*time.Millisecond, func() error {
		notAnswered()
		desc := kmsg.NewPtrDescribeGroupsRequest()
		desc.Groups = []string{"g"}
		if st := serveVersion[*kmsg.DescribeGroupsResponse](t, b, desc, 5).Groups[0].State; st != "PreparingRebalance" {
			return fmt.Errorf("group state %s, want PreparingRebalance", st)
		}
		return nil
	})
	notAnswered()
	b.Drain()
	select {
	case r := <-held:
		if r.ErrorCode != kerr.NotCoordinator.Code || r.MemberID != second.MemberID {
			t.Fatalf("held join on drain: %+v", r)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("held join not answered when the broker drained")
	}
}
