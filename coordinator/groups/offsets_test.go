package groups

import (
	"context"
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
	if len(list.Groups) != 2 || list.Groups[0].Group != "g" || list.Groups[0].GroupState != "Empty" || list.Groups[0].ProtocolType != "consumer" ||
		list.Groups[1].Group != "simple" || list.Groups[1].ProtocolType != "" {
		t.Fatalf("groups after restart: %+v", list.Groups)
	}
	// The members are gone: they rejoin.
	wantCode(t, "old member heartbeat", h.heartbeat("g", ids[0], gen, nil), kerr.UnknownMemberID)
	r := h.joinNew(joinReq("g", "", "t")).wait(t)
	if r.ErrorCode != 0 || r.Generation <= gen {
		t.Fatalf("rejoin: %s generation %d, want above %d", errName(r.ErrorCode), r.Generation, gen)
	}
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
