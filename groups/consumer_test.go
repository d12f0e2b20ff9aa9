package groups

import (
	"context"
	"crypto/sha256"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/groups/members"
)

// fakeTopics is a TopicLister whose topics tests change.
type fakeTopics struct {
	mu     sync.Mutex
	topics map[string]coordapi.Topic
}

func (f *fakeTopics) Topics(context.Context) ([]coordapi.Topic, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []coordapi.Topic
	for _, t := range f.topics {
		out = append(out, t)
	}
	return out, nil
}

// set creates or resizes a topic and returns its id.
func (f *fakeTopics) set(name string, partitions int32) topicID {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.topics == nil {
		f.topics = make(map[string]coordapi.Topic)
	}
	sum := sha256.Sum256([]byte(name))
	id := coordapi.TopicID(sum[:16])
	f.topics[name] = coordapi.Topic{ID: id, Name: name, Partitions: partitions}
	return topicID(id)
}

// notifyingTopics is fakeTopics with topic notices (TopicSubscriber): set
// notifies them, as the coordinator does after a topic change.
type notifyingTopics struct {
	*fakeTopics
	mu   sync.Mutex
	subs []func([]coordapi.TopicNotice)
}

func (n *notifyingTopics) SubscribeTopics(fn func([]coordapi.TopicNotice)) (cancel func()) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.subs = append(n.subs, fn)
	return func() {}
}

func (n *notifyingTopics) set(name string, partitions int32) topicID {
	id := n.fakeTopics.set(name, partitions)
	n.mu.Lock()
	subs := slices.Clone(n.subs)
	n.mu.Unlock()
	for _, fn := range subs {
		fn([]coordapi.TopicNotice{{ID: coordapi.TopicID(id), Name: name}})
	}
	return id
}

// newConsumerHarness is a harness whose coordinator lists topics from ft.
func newConsumerHarness(t *testing.T) (*harness, *fakeTopics) {
	ft := &fakeTopics{}
	h := newHarness(t, func(o *Options) { o.Topics = ft })
	return h, ft
}

// topicsChanged drops the cached topic snapshot.
func (h *harness) topicsChanged() { h.gs.dropTopics() }

func joinHB(group, memberID string, topics ...string) *kmsg.ConsumerGroupHeartbeatRequest {
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Version = 1
	req.Group, req.MemberID, req.MemberEpoch = group, memberID, 0
	req.RebalanceTimeoutMillis = 30000
	req.SubscribedTopicNames = append([]string{}, topics...)
	req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	return req
}

// fullHB is a heartbeat reporting owned.
func fullHB(group, memberID string, epoch int32, owned members.Partitions, topics ...string) *kmsg.ConsumerGroupHeartbeatRequest {
	req := joinHB(group, memberID, topics...)
	req.MemberEpoch = epoch
	for _, id := range owned.SortedIDs() {
		req.Topics = append(req.Topics, kmsg.ConsumerGroupHeartbeatRequestTopic{TopicID: id, Partitions: owned[id]})
	}
	return req
}

// keepaliveHB is a heartbeat that repeats nothing.
func keepaliveHB(group, memberID string, epoch int32) *kmsg.ConsumerGroupHeartbeatRequest {
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Version = 1
	req.Group, req.MemberID, req.MemberEpoch = group, memberID, epoch
	return req
}

func (h *harness) hb(req *kmsg.ConsumerGroupHeartbeatRequest) *kmsg.ConsumerGroupHeartbeatResponse {
	return h.gs.ConsumerGroupHeartbeat(context.Background(), client, req)
}

func assigned(resp *kmsg.ConsumerGroupHeartbeatResponse) members.Partitions {
	if resp.Assignment == nil {
		return nil
	}
	ps := members.Partitions{}
	for _, t := range resp.Assignment.Topics {
		for _, p := range t.Partitions {
			ps.Add(t.TopicID, p)
		}
	}
	return ps
}

func wantHB(t *testing.T, what string, resp *kmsg.ConsumerGroupHeartbeatResponse, code *kerr.Error, epoch int32) {
	t.Helper()
	wantCode(t, what, resp.ErrorCode, code)
	if code == nil && resp.MemberEpoch != epoch {
		t.Fatalf("%s: member epoch %d, want %d", what, resp.MemberEpoch, epoch)
	}
	if code == nil && resp.HeartbeatIntervalMillis != 5000 {
		t.Fatalf("%s: heartbeat interval %d", what, resp.HeartbeatIntervalMillis)
	}
}

func TestConsumerHeartbeatValidation(t *testing.T) {
	h, ft := newConsumerHarness(t)
	ft.set("t", 4)
	for _, tc := range []struct {
		name string
		mod  func(*kmsg.ConsumerGroupHeartbeatRequest)
		want *kerr.Error
	}{
		{"empty group", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.Group = "" }, kerr.InvalidRequest},
		{"v1 without member id", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberID = "" }, kerr.InvalidRequest},
		{"no rebalance timeout", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.RebalanceTimeoutMillis = -1 }, kerr.InvalidRequest},
		{"owned partitions on join", func(r *kmsg.ConsumerGroupHeartbeatRequest) {
			r.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{{Partitions: []int32{0}}}
		}, kerr.InvalidRequest},
		{"null owned partitions on join", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.Topics = nil }, kerr.InvalidRequest},
		{"no subscription", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.SubscribedTopicNames = nil }, kerr.InvalidRequest},
		{"empty instance id", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.InstanceID = kmsg.StringPtr("") }, kerr.InvalidRequest},
		{"epoch -3", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberEpoch = -3 }, kerr.InvalidRequest},
		{"static leave without instance", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberEpoch = -2 }, kerr.InvalidRequest},
		{"unknown assignor", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.ServerAssignor = kmsg.StringPtr("sticky") }, kerr.UnsupportedAssignor},
		{"bad regex", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.SubscribedTopicRegex = kmsg.StringPtr("a(") }, kerr.InvalidRegularExpression},
		{"unknown member", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberEpoch = 3 }, kerr.GroupIDNotFound},
		{"empty subscription is fine", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.SubscribedTopicNames = []string{} }, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := joinHB("g-"+tc.name, "m1", "t")
			tc.mod(req)
			resp := h.hb(req)
			wantCode(t, "heartbeat", resp.ErrorCode, tc.want)
			if tc.want != nil && resp.ErrorMessage == nil && tc.want != kerr.GroupIDNotFound {
				t.Errorf("no error message")
			}
		})
	}
	// v0: the coordinator names a member that joins without an id.
	req := joinHB("v0", "", "t")
	req.Version = 0
	resp := h.hb(req)
	if resp.ErrorCode != 0 || resp.MemberID == nil || len(*resp.MemberID) != 22 {
		t.Fatalf("v0 join: %s member %v", errName(resp.ErrorCode), resp.MemberID)
	}
}

func TestConsumerRebalanceRevokesFirst(t *testing.T) {
	h, ft := newConsumerHarness(t)
	tid := ft.set("t", 4)
	a := h.hb(joinHB("g", "a", "t"))
	wantHB(t, "a joins", a, nil, 1)
	if got := assigned(a); got.Count() != 4 {
		t.Fatalf("a's assignment %v, want all 4", got)
	}
	ka := h.hb(keepaliveHB("g", "a", 1))
	wantHB(t, "a keepalive", ka, nil, 1)
	if ka.Assignment != nil {
		t.Fatalf("keepalive carried an assignment: %v", assigned(ka))
	}

	b := h.hb(joinHB("g", "b", "t"))
	wantHB(t, "b joins", b, nil, 2)
	if got := assigned(b); got.Count() != 0 {
		t.Fatalf("b got %v before a released anything", got)
	}
	// a is told to give two partitions back, at its old epoch.
	ra := h.hb(fullHB("g", "a", 1, assigned(a), "t"))
	wantHB(t, "a heartbeat", ra, nil, 1)
	keep := assigned(ra)
	if keep.Count() != 2 {
		t.Fatalf("a keeps %v, want 2 partitions", keep)
	}
	// b heartbeats before a released: still nothing.
	rb := h.hb(fullHB("g", "b", 2, members.Partitions{}, "t"))
	wantHB(t, "b heartbeat", rb, nil, 2)
	if assigned(rb).Count() != 0 {
		t.Fatalf("b got %v while a still owns it", assigned(rb))
	}
	// a reports the revocation done: it moves to epoch 2.
	ra = h.hb(fullHB("g", "a", 1, keep, "t"))
	wantHB(t, "a revoked", ra, nil, 2)
	rb = h.hb(fullHB("g", "b", 2, members.Partitions{}, "t"))
	got := assigned(rb)
	if got.Count() != 2 || got.Intersects(keep) {
		t.Fatalf("b got %v, a keeps %v", got, keep)
	}
	if st := h.consumerState("g"); st != consumerStable {
		t.Fatalf("state %s, want Stable", st)
	}
	_ = tid
}

func (h *harness) consumerState(group string) string {
	g, _ := h.gs.lockGroup(group, false)
	if g == nil {
		return "Dead"
	}
	defer g.mu.Unlock()
	if g.mu.consumer == nil {
		return "classic"
	}
	return g.mu.consumer.stateLocked()
}

// stableConsumers joins members ids to group subscribing to "t" and runs
// heartbeats until everyone owns its target; it returns each member's
// epoch and assignment.
func (h *harness) stableConsumers(group string, ids ...string) (map[string]int32, map[string]members.Partitions) {
	h.t.Helper()
	epochs := map[string]int32{}
	owned := map[string]members.Partitions{}
	for _, m := range ids {
		r := h.hb(joinHB(group, m, "t"))
		if r.ErrorCode != 0 {
			h.t.Fatalf("join %s: %s", m, errName(r.ErrorCode))
		}
		epochs[m], owned[m] = r.MemberEpoch, assigned(r)
	}
	for range 10 {
		for _, m := range ids {
			r := h.hb(fullHB(group, m, epochs[m], owned[m], "t"))
			if r.ErrorCode != 0 {
				h.t.Fatalf("heartbeat %s: %s", m, errName(r.ErrorCode))
			}
			epochs[m] = r.MemberEpoch
			if r.Assignment != nil {
				owned[m] = assigned(r)
			}
		}
		if h.consumerState(group) == consumerStable {
			return epochs, owned
		}
	}
	h.t.Fatalf("group %s not stable: %s", group, h.consumerState(group))
	return nil, nil
}

func TestConsumerEpochFencing(t *testing.T) {
	h, ft := newConsumerHarness(t)
	ft.set("t", 4)
	epochs, owned := h.stableConsumers("g", "a", "b")
	e := epochs["a"]
	wantHB(t, "future epoch", h.hb(keepaliveHB("g", "a", e+1)), kerr.FencedMemberEpoch, 0)
	wantHB(t, "unknown member", h.hb(keepaliveHB("g", "zz", e)), kerr.UnknownMemberID, 0)
	// A new member bumps the epoch; a's response moving it on is lost:
	// the previous epoch is accepted with owned partitions it still has.
	h.hb(joinHB("g", "c", "t"))
	r := h.hb(fullHB("g", "a", e, owned["a"], "t"))
	wantCode(t, "a heartbeat", r.ErrorCode, nil)
	if r.MemberEpoch == e {
		// a had to revoke first; report it.
		r = h.hb(fullHB("g", "a", e, assigned(r), "t"))
	}
	newEpoch := r.MemberEpoch
	if newEpoch <= e {
		t.Fatalf("a did not move on: epoch %d", newEpoch)
	}
	wantHB(t, "previous epoch, owned subset", h.hb(fullHB("g", "a", e, assigned(r), "t")), nil, newEpoch)
	wantHB(t, "previous epoch, keepalive", h.hb(keepaliveHB("g", "a", e)), kerr.FencedMemberEpoch, 0)
	// Fenced, a rejoins with epoch 0 and its member id, in place.
	rj := h.hb(joinHB("g", "a", "t"))
	wantHB(t, "rejoin", rj, nil, newEpoch)
	if rj.Assignment == nil {
		t.Fatal("rejoin without the assignment")
	}
}

func TestConsumerLeaveAndSessionExpiry(t *testing.T) {
	h, ft := newConsumerHarness(t)
	ft.set("t", 6)
	epochs, owned := h.stableConsumers("g", "a", "b", "c")
	for _, m := range []string{"a", "b", "c"} {
		if owned[m].Count() != 2 {
			t.Fatalf("%s owns %v, want 2 partitions", m, owned[m])
		}
	}
	leave := keepaliveHB("g", "c", -1)
	r := h.hb(leave)
	wantCode(t, "leave", r.ErrorCode, nil)
	if r.MemberEpoch != -1 || r.MemberID == nil || *r.MemberID != "c" {
		t.Fatalf("leave: epoch %d member %v", r.MemberEpoch, r.MemberID)
	}
	wantHB(t, "left member", h.hb(keepaliveHB("g", "c", epochs["c"])), kerr.UnknownMemberID, 0)
	// a and b pick up c's partitions.
	for range 3 {
		for _, m := range []string{"a", "b"} {
			r := h.hb(fullHB("g", m, epochs[m], owned[m], "t"))
			wantCode(t, "heartbeat", r.ErrorCode, nil)
			epochs[m] = r.MemberEpoch
			if r.Assignment != nil {
				owned[m] = assigned(r)
			}
		}
	}
	if owned["a"].Count()+owned["b"].Count() != 6 {
		t.Fatalf("a %v b %v, want all 6 partitions", owned["a"], owned["b"])
	}
	// b stops heartbeating: after the 45s session, a gets everything.
	for range 10 {
		h.advance(5 * time.Second)
		r := h.hb(fullHB("g", "a", epochs["a"], owned["a"], "t"))
		wantCode(t, "a heartbeat", r.ErrorCode, nil)
		epochs["a"] = r.MemberEpoch
		if r.Assignment != nil {
			owned["a"] = assigned(r)
		}
	}
	if owned["a"].Count() != 6 {
		t.Fatalf("a owns %v after b expired", owned["a"])
	}
	wantHB(t, "expired member", h.hb(keepaliveHB("g", "b", epochs["b"])), kerr.UnknownMemberID, 0)
}

func TestConsumerRebalanceTimeoutFences(t *testing.T) {
	h, ft := newConsumerHarness(t)
	ft.set("t", 4)
	epochs, owned := h.stableConsumers("g", "a")
	h.hb(joinHB("g", "b", "t"))
	r := h.hb(fullHB("g", "a", epochs["a"], owned["a"], "t"))
	if r.MemberEpoch != epochs["a"] || assigned(r).Count() != 2 {
		t.Fatalf("a should be revoking: epoch %d assignment %v", r.MemberEpoch, assigned(r))
	}
	// a keeps heartbeating but never gives the partitions back.
	for range 7 {
		h.advance(5 * time.Second)
		h.hb(keepaliveHB("g", "a", epochs["a"]))
		h.hb(keepaliveHB("g", "b", 2))
	}
	wantHB(t, "a after its rebalance timeout", h.hb(keepaliveHB("g", "a", epochs["a"])), kerr.UnknownMemberID, 0)
	rb := h.hb(fullHB("g", "b", 2, members.Partitions{}, "t"))
	wantCode(t, "b", rb.ErrorCode, nil)
	if assigned(rb).Count() != 4 {
		t.Fatalf("b got %v, want all 4", assigned(rb))
	}
}

func TestConsumerStaticMember(t *testing.T) {
	h, ft := newConsumerHarness(t)
	ft.set("t", 4)
	join := func(member, instance string) *kmsg.ConsumerGroupHeartbeatResponse {
		return h.joinStatic("g", member, instance, "t")
	}
	ra := join("a1", "ia")
	rb := join("b1", "ib")
	epochs := map[string]int32{"a1": ra.MemberEpoch, "b1": rb.MemberEpoch}
	owned := map[string]members.Partitions{"a1": assigned(ra), "b1": assigned(rb)}
	for range 3 {
		for _, m := range []string{"a1", "b1"} {
			r := h.hb(fullHB("g", m, epochs[m], owned[m], "t"))
			epochs[m] = r.MemberEpoch
			if r.Assignment != nil {
				owned[m] = assigned(r)
			}
		}
	}
	if owned["b1"].Count() != 2 {
		t.Fatalf("b1 owns %v", owned["b1"])
	}
	wantCode(t, "instance held by an active member", join("b2", "ib").ErrorCode, kerr.UnreleasedInstanceID)
	wrong := keepaliveHB("g", "a1", epochs["a1"])
	wrong.InstanceID = kmsg.StringPtr("ib")
	wantCode(t, "another member's instance", h.hb(wrong).ErrorCode, kerr.FencedInstanceID)

	// b1 restarts: it leaves with -2, its successor takes its partitions
	// without a new group epoch.
	leave := keepaliveHB("g", "b1", -2)
	leave.InstanceID = kmsg.StringPtr("ib")
	if r := h.hb(leave); r.ErrorCode != 0 || r.MemberEpoch != -2 {
		t.Fatalf("static leave: %s epoch %d", errName(r.ErrorCode), r.MemberEpoch)
	}
	groupEpoch := h.groupEpoch("g")
	rb2 := join("b2", "ib")
	wantHB(t, "b2 replaces b1", rb2, nil, epochs["b1"])
	if !assigned(rb2).Equal(owned["b1"]) {
		t.Fatalf("b2 got %v, b1 had %v", assigned(rb2), owned["b1"])
	}
	if e := h.groupEpoch("g"); e != groupEpoch {
		t.Fatalf("group epoch moved %d -> %d on a static rejoin", groupEpoch, e)
	}
	wantHB(t, "the old member", h.hb(keepaliveHB("g", "b1", epochs["b1"])), kerr.UnknownMemberID, 0)
}

func (h *harness) groupEpoch(group string) int32 {
	g, _ := h.gs.lockGroup(group, false)
	defer g.mu.Unlock()
	return g.mu.consumer.epoch
}

func TestConsumerRangeAssignor(t *testing.T) {
	h, ft := newConsumerHarness(t)
	t1, t2 := ft.set("t1", 3), ft.set("t2", 3)
	join := func(m string) *kmsg.ConsumerGroupHeartbeatResponse {
		req := joinHB("g", m, "t1", "t2")
		req.ServerAssignor = kmsg.StringPtr("range")
		return h.hb(req)
	}
	join("a")
	join("b")
	g, _ := h.gs.lockGroup("g", false)
	c := g.mu.consumer
	ta, tb := c.members["a"].target, c.members["b"].target
	assignor := c.assignor
	g.mu.Unlock()
	want := members.Partitions{t1: {0, 1}, t2: {0, 1}}
	if assignor != "range" || !ta.Equal(want) || !tb.Equal(members.Partitions{t1: {2}, t2: {2}}) {
		t.Fatalf("assignor %s targets a %v b %v", assignor, ta, tb)
	}
}

func TestConsumerUniformBalance(t *testing.T) {
	h, ft := newConsumerHarness(t)
	ft.set("t", 10)
	members := []string{"a", "b", "c"}
	_, owned := h.stableConsumers("g", members...)
	total := 0
	for _, m := range members {
		n := owned[m].Count()
		if n < 3 || n > 4 {
			t.Fatalf("%s owns %d partitions", m, n)
		}
		total += n
	}
	if total != 10 {
		t.Fatalf("%d partitions owned", total)
	}
	// A new partition count is noticed at the next heartbeat.
	before := h.groupEpoch("g")
	ft.set("t", 12)
	h.topicsChanged()
	h.hb(keepaliveHB("g", "a", before))
	if e := h.groupEpoch("g"); e != before+1 {
		t.Fatalf("group epoch %d after the topic grew, want %d", e, before+1)
	}
}

// TestConsumerJoinsNewTopic: a member joining right after its topic was
// created gets the topic's partitions in its first heartbeat's assignment,
// though the cached snapshot predates the topic: the topic's notice dropped
// it. Without notices, the snapshot stays until its TTL.
func TestConsumerJoinsNewTopic(t *testing.T) {
	for _, notify := range []bool{true, false} {
		t.Run(fmt.Sprintf("notices=%v", notify), func(t *testing.T) {
			ft := &fakeTopics{}
			var topics TopicLister = ft
			if notify {
				topics = &notifyingTopics{fakeTopics: ft}
			}
			h := newHarness(t, func(o *Options) { o.Topics = topics })
			ft.set("old", 1)
			wantCode(t, "join old", h.hb(joinHB("g1", "a", "old")).ErrorCode, nil)
			// However slow the run, the snapshot stays within its TTL.
			h.gs.topicCache.mu.Lock()
			h.gs.topicCache.mu.at = time.Now().Add(time.Minute)
			h.gs.topicCache.mu.Unlock()
			var fresh topicID
			if n, ok := topics.(*notifyingTopics); ok {
				fresh = n.set("fresh", 3)
			} else {
				fresh = ft.set("fresh", 3)
			}
			r := h.hb(joinHB("g2", "b", "fresh"))
			wantCode(t, "join fresh", r.ErrorCode, nil)
			want := members.Partitions{fresh: {0, 1, 2}}
			if !notify {
				want = nil // the snapshot before the topic, within its TTL
			}
			if got := assigned(r); !got.Equal(want) {
				t.Fatalf("first assignment %v, want %v", got, want)
			}
		})
	}
}

func TestConsumerRegexSubscription(t *testing.T) {
	h, ft := newConsumerHarness(t)
	foo1, foo2 := ft.set("foo-1", 1), ft.set("foo-2", 1)
	ft.set("bar", 1)
	req := joinHB("g", "a")
	req.SubscribedTopicNames = nil
	req.SubscribedTopicRegex = kmsg.StringPtr("foo-.*")
	r := h.hb(req)
	wantCode(t, "join", r.ErrorCode, nil)
	if got := assigned(r); !got.Equal(members.Partitions{foo1: {0}, foo2: {0}}) {
		t.Fatalf("regex assignment %v", got)
	}
	// A new matching topic joins the assignment.
	foo3 := ft.set("foo-3", 1)
	ft.set("xfoo-4", 1) // the regex matches whole names only
	h.topicsChanged()
	r = h.hb(fullHB("g", "a", r.MemberEpoch, assigned(r)))
	if got := assigned(r); !got.Equal(members.Partitions{foo1: {0}, foo2: {0}, foo3: {0}}) {
		t.Fatalf("assignment after a new topic %v", got)
	}
}

func TestConsumerOffsets(t *testing.T) {
	h, ft := newConsumerHarness(t)
	ft.set("t", 2)
	epochs, _ := h.stableConsumers("g", "a")
	e := epochs["a"]
	wantCode(t, "member commit", h.commit(commitReq("g", "a", e, "t", 0, 5)), nil)
	wantCode(t, "stale epoch", h.commit(commitReq("g", "a", e-1, "t", 0, 6)), kerr.StaleMemberEpoch)
	wantCode(t, "unknown member", h.commit(commitReq("g", "x", e, "t", 0, 6)), kerr.UnknownMemberID)
	old := commitReq("g", "a", e, "t", 0, 6)
	old.Version = 8
	wantCode(t, "v8 commit", h.commit(old), kerr.UnsupportedVersion)
	wantCode(t, "simple commit to a group with members", h.commit(commitReq("g", "", -1, "t", 0, 6)), kerr.UnknownMemberID)

	fetch := func(member *string, epoch int32) kmsg.OffsetFetchResponseGroup {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Version = 9
		rg := kmsg.NewOffsetFetchRequestGroup()
		rg.Group, rg.MemberID, rg.MemberEpoch = "g", member, epoch
		rg.Topics = []kmsg.OffsetFetchRequestGroupTopic{{Topic: "t", Partitions: []int32{0}}}
		req.Groups = append(req.Groups, rg)
		return h.gs.OffsetFetch(context.Background(), req).Groups[0]
	}
	if g := fetch(kmsg.StringPtr("a"), e); g.ErrorCode != 0 || g.Topics[0].Partitions[0].Offset != 5 {
		t.Fatalf("member fetch: %+v", g)
	}
	wantCode(t, "stale fetch", fetch(kmsg.StringPtr("a"), e+1).ErrorCode, kerr.StaleMemberEpoch)
	wantCode(t, "unknown member fetch", fetch(kmsg.StringPtr("x"), e).ErrorCode, kerr.UnknownMemberID)
	wantCode(t, "admin fetch", fetch(nil, -1).ErrorCode, nil)

	// Subscribed topics' offsets cannot be deleted.
	del := kmsg.NewPtrOffsetDeleteRequest()
	del.Group = "g"
	del.Topics = []kmsg.OffsetDeleteRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}}}
	wantCode(t, "delete subscribed", h.gs.OffsetDelete(context.Background(), del).Topics[0].Partitions[0].ErrorCode, kerr.GroupSubscribedToTopic)

	// Leave; the group is empty: deletable, and the offsets survive a
	// restart with the group's type and epoch.
	h.hb(keepaliveHB("g", "a", -1))
	ge := h.groupEpoch("g")
	h.restart()
	if off, _, _ := h.fetch(8, "g", "t", 0); off != 5 {
		t.Fatalf("offset after restart %d", off)
	}
	list := h.gs.ListGroups(context.Background(), kmsg.NewPtrListGroupsRequest())
	if len(list.Groups) != 1 || list.Groups[0].GroupType != "consumer" || list.Groups[0].GroupState != "Empty" {
		t.Fatalf("groups after restart: %+v", list.Groups)
	}
	if e := h.groupEpoch("g"); e != ge {
		t.Fatalf("group epoch %d after restart, want %d", e, ge)
	}
	dg := kmsg.NewPtrDeleteGroupsRequest()
	dg.Groups = []string{"g"}
	wantCode(t, "delete empty consumer group", h.gs.DeleteGroups(context.Background(), dg).Groups[0].ErrorCode, nil)
}

func TestConsumerGroupDescribe(t *testing.T) {
	h, ft := newConsumerHarness(t)
	ft.set("t", 2)
	h.stableConsumers("g", "a", "b")
	h.stableGroup("classic", 1)
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Version = 1
	req.Groups = []string{"g", "classic", "nope"}
	req.IncludeAuthorizedOperations = true
	resp := h.gs.ConsumerGroupDescribe(context.Background(), req)
	g := resp.Groups[0]
	if g.ErrorCode != 0 || g.State != "Stable" || g.AssignorName != "uniform" || g.Epoch != g.AssignmentEpoch || len(g.Members) != 2 {
		t.Fatalf("describe: %+v", g)
	}
	for _, m := range g.Members {
		if len(m.Assignment.TopicPartitions) != 1 || m.Assignment.TopicPartitions[0].Topic != "t" ||
			len(m.Assignment.TopicPartitions[0].Partitions) != 1 || m.MemberType != 1 || m.SubscribedTopics[0] != "t" {
			t.Fatalf("member: %+v", m)
		}
	}
	wantCode(t, "classic group", resp.Groups[1].ErrorCode, kerr.GroupIDNotFound)
	wantCode(t, "missing group", resp.Groups[2].ErrorCode, kerr.GroupIDNotFound)

	// The classic APIs see it too.
	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.Version = 5
	dg.Groups = []string{"g"}
	d := h.gs.DescribeGroups(context.Background(), dg).Groups[0]
	if d.State != "Stable" || d.ProtocolType != "consumer" || len(d.Members) != 2 {
		t.Fatalf("DescribeGroups: %+v", d)
	}
	var a kmsg.ConsumerMemberAssignment
	if err := a.ReadFrom(d.Members[0].MemberAssignment); err != nil || len(a.Topics) != 1 || a.Topics[0].Topic != "t" {
		t.Fatalf("DescribeGroups assignment: %+v %v", a, err)
	}
	list := kmsg.NewPtrListGroupsRequest()
	list.Version = 5
	list.TypesFilter = []string{"consumer"}
	if l := h.gs.ListGroups(context.Background(), list).Groups; len(l) != 1 || l[0].Group != "g" || l[0].ProtocolType != "consumer" {
		t.Fatalf("ListGroups consumer: %+v", l)
	}
}

func TestConsumerAndClassicDoNotMix(t *testing.T) {
	h, ft := newConsumerHarness(t)
	ft.set("t", 2)
	h.stableGroup("classic", 1)
	wantCode(t, "heartbeat to a classic group", h.hb(joinHB("classic", "a", "t")).ErrorCode, kerr.GroupIDNotFound)
	h.stableConsumers("g", "a")
	wantCode(t, "classic join to a consumer group", h.startJoin(joinReq("g", "", "t")).wait(t).ErrorCode, kerr.InconsistentGroupProtocol)
	// Once empty, a consumer group can go classic, and back.
	h.hb(keepaliveHB("g", "a", -1))
	r := h.joinNew(joinReq("g", "", "t")).wait(t)
	wantCode(t, "classic join to an empty consumer group", r.ErrorCode, nil)
	leave := kmsg.NewPtrLeaveGroupRequest()
	leave.Version, leave.Group, leave.MemberID = 1, "g", r.MemberID
	h.gs.LeaveGroup(context.Background(), leave)
	wantCode(t, "consumer join to an empty classic group", h.hb(joinHB("g", "a", "t")).ErrorCode, nil)
}

// TestConsumerCommitAssignmentEpochs: KIP-1251. A member whose epoch moved
// on may still commit, at its older epoch, the partitions it held since
// then; not others, and never at a future epoch.
func TestConsumerCommitAssignmentEpochs(t *testing.T) {
	h, ft := newConsumerHarness(t)
	ft.set("t", 4)
	epochs, owned := h.stableConsumers("g", "a")
	old := epochs["a"]
	h.hb(joinHB("g", "b", "t"))
	r := h.hb(fullHB("g", "a", old, owned["a"], "t")) // a revokes two
	kept := assigned(r)
	r = h.hb(fullHB("g", "a", old, kept, "t"))
	if r.MemberEpoch <= old {
		t.Fatalf("a did not move on: %d", r.MemberEpoch)
	}
	var keptP, gaveP int32 = -1, -1
	for _, l := range kept {
		keptP = l[0]
	}
	for p := range int32(4) {
		if !kept.Has(ft.set("t", 4), p) {
			gaveP = p
		}
	}
	wantCode(t, "old epoch, kept partition", h.commit(commitReq("g", "a", old, "t", keptP, 1)), nil)
	wantCode(t, "old epoch, given away", h.commit(commitReq("g", "a", old, "t", gaveP, 1)), kerr.StaleMemberEpoch)
	wantCode(t, "current epoch", h.commit(commitReq("g", "a", r.MemberEpoch, "t", gaveP, 1)), nil)
	wantCode(t, "future epoch", h.commit(commitReq("g", "a", r.MemberEpoch+1, "t", keptP, 1)), kerr.StaleMemberEpoch)
}

// joinStatic joins member to group as static member instance, subscribed
// to topics.
func (h *harness) joinStatic(group, member, instance string, topics ...string) *kmsg.ConsumerGroupHeartbeatResponse {
	req := joinHB(group, member, topics...)
	req.InstanceID = kmsg.StringPtr(instance)
	return h.hb(req)
}

// TestConsumerCommitOldEpochAfterRestart: right after a restart, before
// any heartbeat gave the group a topic snapshot, a KIP-1251 commit at an
// older epoch is checked by the topic id the broker resolved for it.
func TestConsumerCommitOldEpochAfterRestart(t *testing.T) {
	h, ft := newConsumerHarness(t)
	tid := ft.set("t", 4)
	epochs, owned := h.stableConsumers("g", "a")
	old := epochs["a"]
	h.hb(joinHB("g", "b", "t"))
	r := h.hb(fullHB("g", "a", old, owned["a"], "t")) // a revokes two
	kept := assigned(r)
	if r = h.hb(fullHB("g", "a", old, kept, "t")); r.MemberEpoch <= old {
		t.Fatalf("a did not move on: %d", r.MemberEpoch)
	}
	var keptP, gaveP int32 = -1, -1
	for _, l := range kept {
		keptP = l[0]
	}
	for p := range int32(4) {
		if !kept.Has(tid, p) {
			gaveP = p
		}
	}
	h.restart()
	withID := func(p int32) *kmsg.OffsetCommitRequest {
		req := commitReq("g", "a", old, "t", p, 1)
		req.Topics[0].TopicID = tid
		return req
	}
	wantCode(t, "old epoch, kept partition, topic id", h.commit(withID(keptP)), nil)
	wantCode(t, "old epoch, given away, topic id", h.commit(withID(gaveP)), kerr.StaleMemberEpoch)
	wantCode(t, "old epoch, no topic id, no snapshot yet", h.commit(commitReq("g", "a", old, "t", keptP, 1)), kerr.StaleMemberEpoch)
}
