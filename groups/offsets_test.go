package groups

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func commitReq(group, memberID string, gen int32, topic string, partition int32, offset int64) *kmsg.OffsetCommitRequest {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version = 9
	req.Group, req.MemberID, req.Generation = group, memberID, gen
	t := kmsg.NewOffsetCommitRequestTopic()
	t.Topic = topic
	p := kmsg.NewOffsetCommitRequestTopicPartition()
	p.Partition, p.Offset, p.LeaderEpoch, p.Metadata = partition, offset, 3, kmsg.StringPtr("meta")
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	return req
}

func (h *harness) commit(req *kmsg.OffsetCommitRequest) int16 {
	resp := h.gs.OffsetCommit(context.Background(), req)
	return resp.Topics[0].Partitions[0].ErrorCode
}

// fetch returns the committed offset, leader epoch and metadata of one
// partition, fetched at version.
func (h *harness) fetch(version int16, group, topic string, partition int32) (int64, int32, string) {
	h.t.Helper()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version = version
	if version >= 8 {
		g := kmsg.NewOffsetFetchRequestGroup()
		g.Group = group
		g.Topics = []kmsg.OffsetFetchRequestGroupTopic{{Topic: topic, Partitions: []int32{partition}}}
		req.Groups = append(req.Groups, g)
		resp := h.gs.OffsetFetch(context.Background(), req)
		sg := resp.Groups[0]
		if sg.ErrorCode != 0 || len(sg.Topics) != 1 || len(sg.Topics[0].Partitions) != 1 {
			h.t.Fatalf("fetch: %+v", sg)
		}
		p := sg.Topics[0].Partitions[0]
		return p.Offset, p.LeaderEpoch, *p.Metadata
	}
	req.Group = group
	req.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: topic, Partitions: []int32{partition}}}
	resp := h.gs.OffsetFetch(context.Background(), req)
	if resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		h.t.Fatalf("fetch: %+v", resp)
	}
	p := resp.Topics[0].Partitions[0]
	return p.Offset, p.LeaderEpoch, *p.Metadata
}

func TestOffsetCommitFencing(t *testing.T) {
	h := newHarness(t)
	ids, gen := h.stableGroup("g", 2)
	a := ids[0]
	simple := func(group string) *kmsg.OffsetCommitRequest { return commitReq(group, "", -1, "t", 0, 5) }
	for _, tc := range []struct {
		name string
		req  *kmsg.OffsetCommitRequest
		want *kerr.Error
	}{
		{"member of the generation", commitReq("g", a, gen, "t", 0, 5), nil},
		{"old generation", commitReq("g", a, gen-1, "t", 0, 5), kerr.IllegalGeneration},
		{"future generation", commitReq("g", a, gen+1, "t", 0, 5), kerr.IllegalGeneration},
		{"unknown member", commitReq("g", "nobody", gen, "t", 0, 5), kerr.UnknownMemberID},
		{"simple commit to a group with members", simple("g"), kerr.UnknownMemberID},
		{"generation commit to a missing group v9", commitReq("missing", "m", 1, "t", 0, 5), kerr.GroupIDNotFound},
		{"generation commit to a missing group v8", func() *kmsg.OffsetCommitRequest {
			r := commitReq("missing", "m", 1, "t", 0, 5)
			r.Version = 8
			return r
		}(), kerr.IllegalGeneration},
		{"simple commit creates a group", simple("simple"), nil},
		{"empty group id", simple(""), kerr.InvalidGroupID},
		{"metadata too large", func() *kmsg.OffsetCommitRequest {
			r := simple("simple")
			r.Topics[0].Partitions[0].Metadata = kmsg.StringPtr(strings.Repeat("x", 4097))
			return r
		}(), kerr.OffsetMetadataTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantCode(t, "commit", h.commit(tc.req), tc.want)
		})
	}
	if st := h.state("missing"); st != Dead {
		t.Errorf("a refused commit created group missing (%s)", st)
	}
	if st := h.state("simple"); st != Empty {
		t.Errorf("simple group state %s, want Empty", st)
	}
}

func TestOffsetCommitDuringRebalance(t *testing.T) {
	h := newHarness(t)
	ids, gen := h.stableGroup("g", 2)
	a, b := ids[0], ids[1]
	ja := h.startJoin(joinReq("g", a, "t"))
	h.waitParked("g", 1, 0)
	// PreparingRebalance: the old generation may still commit (the
	// revoke callback commits before rejoining).
	wantCode(t, "commit while preparing", h.commit(commitReq("g", b, gen, "t", 0, 7)), nil)
	jb := h.startJoin(joinReq("g", b, "t"))
	ra, rb := ja.wait(t), jb.wait(t)
	wantCode(t, "commit while completing", h.commit(commitReq("g", b, rb.Generation, "t", 0, 8)), kerr.RebalanceInProgress)
	wantCode(t, "old generation while completing", h.commit(commitReq("g", b, gen, "t", 0, 8)), kerr.IllegalGeneration)
	h.startSync(syncReq("g", b, rb.Generation, nil))
	h.waitParked("g", 0, 1)
	h.startSync(syncReq("g", a, ra.Generation, nil)).wait(t)
	wantCode(t, "commit when stable", h.commit(commitReq("g", b, rb.Generation, "t", 0, 9)), nil)
	if off, _, _ := h.fetch(8, "g", "t", 0); off != 9 {
		t.Fatalf("offset %d, want 9", off)
	}
}

func TestCommitKeepsSessionAlive(t *testing.T) {
	h := newHarness(t)
	ids, gen := h.stableGroup("g", 1)
	for range 5 {
		h.advance(6 * time.Second)
		wantCode(t, "commit", h.commit(commitReq("g", ids[0], gen, "t", 0, 1)), nil)
	}
	wantCode(t, "heartbeat", h.heartbeat("g", ids[0], gen, nil), nil)
}

func TestOffsetFetch(t *testing.T) {
	h := newHarness(t)
	req := commitReq("g", "", -1, "t", 1, 42)
	req.Topics[0].Partitions = append(req.Topics[0].Partitions, kmsg.OffsetCommitRequestTopicPartition{Partition: 3, Offset: 7, LeaderEpoch: -1})
	u := kmsg.NewOffsetCommitRequestTopic()
	u.Topic = "u"
	u.Partitions = []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 1, LeaderEpoch: 2, Metadata: kmsg.StringPtr("x")}}
	req.Topics = append(req.Topics, u)
	for _, tp := range h.gs.OffsetCommit(context.Background(), req).Topics {
		for _, p := range tp.Partitions {
			wantCode(t, "commit", p.ErrorCode, nil)
		}
	}
	for _, v := range []int16{1, 5, 7, 8} {
		off, epoch, meta := h.fetch(v, "g", "t", 1)
		wantEpoch := int32(3)
		if v < 5 {
			wantEpoch = -1 // not on the wire before v5
		}
		if off != 42 || meta != "meta" || (v >= 5 && epoch != wantEpoch) {
			t.Errorf("v%d: offset %d epoch %d metadata %q", v, off, epoch, meta)
		}
		off, epoch, meta = h.fetch(v, "g", "t", 2)
		if off != -1 || epoch != -1 || meta != "" {
			t.Errorf("v%d uncommitted: offset %d epoch %d metadata %q", v, off, epoch, meta)
		}
		off, _, meta = h.fetch(v, "g", "t", 3) // null metadata reads back as ""
		if off != 7 || meta != "" {
			t.Errorf("v%d: offset %d metadata %q", v, off, meta)
		}
		off, _, _ = h.fetch(v, "nobody", "t", 1)
		if off != -1 {
			t.Errorf("v%d: missing group offset %d", v, off)
		}
	}

	// Null topics: everything committed, sorted.
	all := kmsg.NewPtrOffsetFetchRequest()
	all.Version = 8
	all.Groups = []kmsg.OffsetFetchRequestGroup{{Group: "g"}, {Group: "nobody"}}
	resp := h.gs.OffsetFetch(context.Background(), all)
	if len(resp.Groups) != 2 {
		t.Fatalf("%d groups", len(resp.Groups))
	}
	g0 := resp.Groups[0]
	if len(g0.Topics) != 2 || g0.Topics[0].Topic != "t" || len(g0.Topics[0].Partitions) != 2 || g0.Topics[1].Topic != "u" || *g0.Topics[1].Partitions[0].Metadata != "x" {
		t.Fatalf("all offsets: %+v", g0.Topics)
	}
	if g1 := resp.Groups[1]; g1.ErrorCode != 0 || len(g1.Topics) != 0 {
		t.Fatalf("missing group: %+v", g1)
	}
	all.Version = 3
	all.Group, all.Topics = "g", nil
	if resp := h.gs.OffsetFetch(context.Background(), all); len(resp.Topics) != 2 {
		t.Fatalf("v3 all offsets: %+v", resp.Topics)
	}
}

// Before v2 a group-level error is on every asked partition, with Kafka's
// empty metadata (NO_METADATA), never null.
func TestOffsetFetchErrorMetadata(t *testing.T) {
	h := newHarness(t)
	if err := h.gs.Close(); err != nil {
		t.Fatal(err)
	}
	for _, v := range []int16{0, 1} {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Version, req.Group = v, "g"
		req.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "t", Partitions: []int32{0, 1}}}
		resp := h.gs.OffsetFetch(context.Background(), req)
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 2 {
			t.Fatalf("v%d: %+v", v, resp.Topics)
		}
		for _, p := range resp.Topics[0].Partitions {
			if p.ErrorCode != kerr.NotCoordinator.Code || p.Offset != -1 || p.Metadata == nil || *p.Metadata != "" {
				t.Errorf("v%d partition %d: code %d offset %d metadata %v", v, p.Partition, p.ErrorCode, p.Offset, p.Metadata)
			}
		}
	}
}

func TestOffsetsSurviveRestart(t *testing.T) {
	h := newHarness(t)
	ids, gen := h.stableGroup("g", 1)
	wantCode(t, "commit", h.commit(commitReq("g", ids[0], gen, "t", 0, 100)), nil)
	wantCode(t, "simple commit", h.commit(commitReq("simple", "", -1, "t", 2, 5)), nil)
	h.restart()
	off, epoch, meta := h.fetch(8, "g", "t", 0)
	if off != 100 || epoch != 3 || meta != "meta" {
		t.Fatalf("after restart: offset %d epoch %d metadata %q", off, epoch, meta)
	}
	if off, _, _ := h.fetch(8, "simple", "t", 2); off != 5 {
		t.Fatalf("simple group after restart: offset %d", off)
	}
	list := h.gs.ListGroups(context.Background(), kmsg.NewPtrListGroupsRequest())
	if len(list.Groups) != 2 || list.Groups[0].Group != "g" || list.Groups[0].GroupState != "Stable" || list.Groups[0].ProtocolType != "consumer" ||
		list.Groups[1].Group != "simple" || list.Groups[1].ProtocolType != "" || list.Groups[1].GroupState != "Empty" {
		t.Fatalf("groups after restart: %+v", list.Groups)
	}
}

// TestStableGroupSurvivesRestart: a Stable classic group comes back from a
// coordinator restart with its members, generation, leader, protocol and
// assignments, so its members carry on (heartbeats, commits, SyncGroup)
// without a rebalance; a member that does not heartbeat after the restart
// expires at its session timeout as before.
func TestStableGroupSurvivesRestart(t *testing.T) {
	h := newHarness(t)
	ids, gen := h.stableGroup("g", 3)
	h.restart()
	if st := h.state("g"); st != Stable {
		t.Fatalf("state after restart %s, want Stable", st)
	}
	for _, id := range ids {
		wantCode(t, "heartbeat "+id, h.heartbeat("g", id, gen, nil), nil)
	}
	wantCode(t, "commit", h.commit(commitReq("g", ids[1], gen, "t", 0, 9)), nil)
	if r := h.startSync(syncReq("g", ids[2], gen, nil)).wait(t); r.ErrorCode != 0 || string(r.MemberAssignment) != "assignment-of-"+ids[2] {
		t.Fatalf("sync after restart: %s %q", errName(r.ErrorCode), r.MemberAssignment)
	}
	describe := kmsg.NewPtrDescribeGroupsRequest()
	describe.Version, describe.Groups = 5, []string{"g"}
	d := h.gs.DescribeGroups(context.Background(), describe).Groups[0]
	if d.State != "Stable" || d.Protocol != "range" || len(d.Members) != 3 || d.Members[0].ClientID != client.ID || d.Members[0].ClientHost != client.Host {
		t.Fatalf("describe after restart: %+v", d)
	}

	// Members 0 and 1 keep heartbeating; member 2 went away with the old
	// coordinator: it expires, and the others are told to rejoin.
	for range 11 {
		h.advance(time.Second)
		for _, id := range ids[:2] {
			code := h.heartbeat("g", id, gen, nil)
			if code != 0 && code != kerr.RebalanceInProgress.Code {
				t.Fatalf("heartbeat %s: %s", id, errName(code))
			}
		}
	}
	wantCode(t, "expired member", h.heartbeat("g", ids[2], gen, nil), kerr.UnknownMemberID)
	wantCode(t, "survivor", h.heartbeat("g", ids[0], gen, nil), kerr.RebalanceInProgress)
}

// TestRestartMidRebalance: only a completed (Stable) generation is
// written down. A group restarted while preparing a rebalance comes back
// at its last Stable generation (the joining member rejoins and the
// rebalance starts again); one restarted after the join phase, whose new
// generation has no assignment yet, comes back Empty and its members
// rejoin.
func TestRestartMidRebalance(t *testing.T) {
	h := newHarness(t)
	ids, gen := h.stableGroup("g", 2)
	joining := h.joinNew(joinReq("g", "", "t")) // a third member starts a rebalance
	h.waitParked("g", 1, 0)
	h.restart()
	if r := joining.wait(t); r.ErrorCode != kerr.NotCoordinator.Code {
		t.Fatalf("held join on close: %s", errName(r.ErrorCode))
	}
	if st := h.state("g"); st != Stable {
		t.Fatalf("state after a restart while preparing a rebalance %s, want Stable", st)
	}
	wantCode(t, "member of the last generation", h.heartbeat("g", ids[0], gen, nil), nil)

	// The join phase completes (both members rejoin) but nobody syncs.
	j0 := h.startJoin(joinReq("g", ids[0], "t"))
	h.waitParked("g", 1, 0)
	j1 := h.startJoin(joinReq("g", ids[1], "t"))
	r0, r1 := j0.wait(t), j1.wait(t)
	if r0.ErrorCode != 0 || r1.ErrorCode != 0 || r0.Generation != gen+1 {
		t.Fatalf("rejoin: %s %s generation %d", errName(r0.ErrorCode), errName(r1.ErrorCode), r0.Generation)
	}
	h.restart()
	if st := h.state("g"); st != Empty {
		t.Fatalf("state after a restart in CompletingRebalance %s, want Empty", st)
	}
	wantCode(t, "member of the unsynced generation", h.heartbeat("g", ids[0], gen+1, nil), kerr.UnknownMemberID)
	r := h.joinNew(joinReq("g", "", "t")).wait(t)
	if r.ErrorCode != 0 || r.Generation <= gen+1 {
		t.Fatalf("rejoin: %s generation %d, want above %d", errName(r.ErrorCode), r.Generation, gen+1)
	}
}

// TestStaticReplacementSurvivesRestart: a static member that replaced its
// old member id without a rebalance is the one restored.
func TestStaticReplacementSurvivesRestart(t *testing.T) {
	h := newHarness(t)
	inst := "instance-0"
	req := joinReq("g", "", "t")
	req.InstanceID = &inst
	first := h.startJoin(req).wait(t)
	if first.ErrorCode != 0 {
		t.Fatalf("join: %s", errName(first.ErrorCode))
	}
	sync := syncReq("g", first.MemberID, first.Generation, map[string]string{first.MemberID: "a"})
	sync.InstanceID = &inst
	if r := h.startSync(sync).wait(t); r.ErrorCode != 0 {
		t.Fatalf("sync: %s", errName(r.ErrorCode))
	}
	again := h.startJoin(req).wait(t) // restarted: unknown member id, same instance
	if again.ErrorCode != 0 || again.MemberID == first.MemberID || again.Generation != first.Generation {
		t.Fatalf("static rejoin: %s member %s generation %d", errName(again.ErrorCode), again.MemberID, again.Generation)
	}
	h.restart()
	wantCode(t, "new member id", h.heartbeat("g", again.MemberID, again.Generation, &inst), nil)
	wantCode(t, "old member id", h.heartbeat("g", first.MemberID, first.Generation, &inst), kerr.FencedInstanceID)
}

func TestStableRecordCodec(t *testing.T) {
	inst := "i"
	for _, r := range []stableRecord{
		{generation: 1, protocol: "range", leader: "a", members: []memberRecord{{id: "a", protocols: []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{}}}, assignment: []byte{}}}},
		{generation: 7, protocol: "p", leader: "b", members: []memberRecord{
			{id: "a", clientID: "c", clientHost: "/h", sessionMs: 10, rebalanceMs: 20, assignment: []byte("x"),
				protocols: []kmsg.JoinGroupRequestProtocol{{Name: "p", Metadata: []byte{1}}, {Name: "q", Metadata: []byte{}}}},
			{id: "b", instanceID: &inst, assignment: []byte{}},
		}},
	} {
		got, err := decodeStableRecord(r.encode())
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, r) {
			t.Fatalf("round trip:\n%+v\n%+v", got, r)
		}
	}
	for _, bad := range [][]byte{nil, {1}, {1, 2, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f}, {2, 2, 0, 0, 0}} {
		if _, err := decodeStableRecord(bad); err == nil {
			t.Errorf("decoded %x", bad)
		}
	}
}

// FuzzStableRecord: the stable family's values are read back at Open; a
// corrupt one is an error, never a panic or a huge allocation.
func FuzzStableRecord(f *testing.F) {
	f.Add(stableRecord{generation: 3, protocol: "range", leader: "a", members: []memberRecord{{id: "a", assignment: []byte("x")}}}.encode())
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := decodeStableRecord(b)
		if err != nil {
			return
		}
		again, err := decodeStableRecord(r.encode())
		if err != nil || !reflect.DeepEqual(again, r) {
			t.Fatalf("re-encoding: %v\n%+v\n%+v", err, again, r)
		}
	})
}

func TestOffsetDelete(t *testing.T) {
	h := newHarness(t)
	ids, gen := h.stableGroup("g", 1)
	wantCode(t, "commit t", h.commit(commitReq("g", ids[0], gen, "t", 0, 1)), nil)
	wantCode(t, "commit other", h.commit(commitReq("g", ids[0], gen, "other", 0, 1)), nil)
	del := func(group string, topics ...string) *kmsg.OffsetDeleteResponse {
		req := kmsg.NewPtrOffsetDeleteRequest()
		req.Group = group
		for _, topic := range topics {
			rt := kmsg.NewOffsetDeleteRequestTopic()
			rt.Topic = topic
			rt.Partitions = []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}, {Partition: 1}}
			req.Topics = append(req.Topics, rt)
		}
		return h.gs.OffsetDelete(context.Background(), req)
	}
	resp := del("g", "t", "other")
	wantCode(t, "delete", resp.ErrorCode, nil)
	wantCode(t, "subscribed topic", resp.Topics[0].Partitions[0].ErrorCode, kerr.GroupSubscribedToTopic)
	wantCode(t, "unsubscribed topic", resp.Topics[1].Partitions[0].ErrorCode, nil)
	wantCode(t, "uncommitted partition", resp.Topics[1].Partitions[1].ErrorCode, nil)
	if off, _, _ := h.fetch(8, "g", "other", 0); off != -1 {
		t.Fatalf("deleted offset still %d", off)
	}
	if off, _, _ := h.fetch(8, "g", "t", 0); off != 1 {
		t.Fatalf("subscribed offset %d", off)
	}
	wantCode(t, "missing group", del("nope", "t").ErrorCode, kerr.GroupIDNotFound)
	wantCode(t, "empty group id", del("", "t").ErrorCode, kerr.InvalidGroupID)

	// Once Empty, any offset may be deleted.
	leave := kmsg.NewPtrLeaveGroupRequest()
	leave.Version, leave.Group, leave.MemberID = 1, "g", ids[0]
	h.gs.LeaveGroup(context.Background(), leave)
	wantCode(t, "delete from empty group", del("g", "t").Topics[0].Partitions[0].ErrorCode, nil)
	h.restart()
	if off, _, _ := h.fetch(8, "g", "t", 0); off != -1 {
		t.Fatalf("deleted offset back after restart: %d", off)
	}
}

func TestOffsetDeleteNonConsumerGroup(t *testing.T) {
	h := newHarness(t)
	req := joinReq("g", "", "t")
	req.ProtocolType = "connect"
	req.Version = 3
	h.startJoin(req).wait(t)
	d := kmsg.NewPtrOffsetDeleteRequest()
	d.Group = "g"
	wantCode(t, "delete from a non-empty connect group", h.gs.OffsetDelete(context.Background(), d).ErrorCode, kerr.NonEmptyGroup)
}

func TestOffsetRetention(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.OffsetRetention = time.Hour })
	ids, gen := h.stableGroup("g", 1)
	wantCode(t, "commit", h.commit(commitReq("g", ids[0], gen, "t", 0, 1)), nil)
	wantCode(t, "simple commit", h.commit(commitReq("simple", "", -1, "t", 0, 1)), nil)
	// A stable group keeps its subscribed offsets however old.
	for range 3 {
		h.clk.Advance(30 * time.Minute)
		wantCode(t, "heartbeat", h.heartbeat("g", ids[0], gen, nil), nil)
	}
	h.gs.expireOffsets()
	if off, _, _ := h.fetch(8, "g", "t", 0); off != 1 {
		t.Fatalf("stable group lost its offset")
	}
	if st := h.state("simple"); st != Dead {
		t.Fatalf("simple group with expired offsets still there (%s)", st)
	}
	leave := kmsg.NewPtrLeaveGroupRequest()
	leave.Version, leave.Group, leave.MemberID = 1, "g", ids[0]
	h.gs.LeaveGroup(context.Background(), leave)
	h.clk.Advance(59 * time.Minute)
	h.gs.expireOffsets()
	if off, _, _ := h.fetch(8, "g", "t", 0); off != 1 {
		t.Fatalf("offset expired before the retention since the group became empty")
	}
	h.clk.Advance(2 * time.Minute)
	h.gs.expireOffsets()
	if st := h.state("g"); st != Dead {
		t.Fatalf("empty group without offsets still there (%s)", st)
	}
	h.restart()
	if n := len(h.gs.ListGroups(context.Background(), kmsg.NewPtrListGroupsRequest()).Groups); n != 0 {
		t.Fatalf("%d groups after restart", n)
	}
}

func TestDeleteTopicOffsets(t *testing.T) {
	h := newHarness(t)
	wantCode(t, "commit", h.commit(commitReq("g", "", -1, "t", 0, 1)), nil)
	wantCode(t, "commit", h.commit(commitReq("g", "", -1, "u", 0, 1)), nil)
	if err := h.gs.DeleteTopicOffsets(context.Background(), "t"); err != nil {
		t.Fatal(err)
	}
	h.restart()
	if off, _, _ := h.fetch(8, "g", "t", 0); off != -1 {
		t.Fatalf("offset of deleted topic: %d", off)
	}
	if off, _, _ := h.fetch(8, "g", "u", 0); off != 1 {
		t.Fatalf("offset of other topic: %d", off)
	}
}

// TestRecreatedTopicStartsWithoutOffsets: offsets remember their topic's
// id; once the topic is deleted and created again, they are not fetched.
func TestRecreatedTopicStartsWithoutOffsets(t *testing.T) {
	h, ft := newConsumerHarness(t)
	old := ft.set("t", 2)
	req := commitReq("g", "", -1, "t", 0, 42)
	req.Topics[0].TopicID = old
	wantCode(t, "commit", h.commit(req), nil)
	if off, _, _ := h.fetch(8, "g", "t", 0); off != 42 {
		t.Fatalf("offset %d, want 42", off)
	}
	ft.mu.Lock()
	tp := ft.topics["t"]
	tp.ID[0] ^= 0xff // deleted and created again: a new id
	ft.topics["t"] = tp
	ft.mu.Unlock()
	h.topicsChanged()
	if off, _, _ := h.fetch(8, "g", "t", 0); off != -1 {
		t.Fatalf("recreated topic shows offset %d", off)
	}
	all := kmsg.NewPtrOffsetFetchRequest()
	all.Version = 8
	all.Groups = []kmsg.OffsetFetchRequestGroup{{Group: "g"}}
	if got := h.gs.OffsetFetch(context.Background(), all).Groups[0].Topics; len(got) != 0 {
		t.Fatalf("all offsets of the recreated topic: %+v", got)
	}
	// A commit to the new topic is fetched again.
	req.Topics[0].TopicID = tp.ID
	wantCode(t, "commit", h.commit(req), nil)
	if off, _, _ := h.fetch(8, "g", "t", 0); off != 42 {
		t.Fatalf("offset %d after a new commit", off)
	}
}
