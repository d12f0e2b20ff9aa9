package groups

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/groups/share"
)

// shareTopics is fakeTopics with partition offsets (PartitionReader).
type shareTopics struct {
	*fakeTopics
	mu     sync.Mutex
	states map[coordapi.TopicID]coordapi.PartitionState
	// byTime answers ListOffset for any timestamp; -1 for none.
	byTime int64
	// batches are each topic's batches (every partition alike), and
	// notify the commit notice subscriber (share_fetch_test.go).
	batches map[coordapi.TopicID][]coordapi.BatchCoord
	notify  func([]coordapi.CommitNotice)
}

func newShareTopics() *shareTopics {
	return &shareTopics{fakeTopics: &fakeTopics{}, states: map[coordapi.TopicID]coordapi.PartitionState{}, byTime: -1,
		batches: map[coordapi.TopicID][]coordapi.BatchCoord{}}
}

func (s *shareTopics) PartitionState(_ context.Context, id coordapi.TopicID, _ int32) (coordapi.PartitionState, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.states[id], nil
}

func (s *shareTopics) ListOffset(context.Context, coordapi.TopicID, int32, int64) (int64, int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.byTime, -1, nil
}

// setOffsets gives every partition of topic id the log start and high
// watermark.
func (s *shareTopics) setOffsets(id topicID, logStart, hw int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.states[coordapi.TopicID(id)] = coordapi.PartitionState{LogStartOffset: logStart, HighWatermark: hw, LastStableOffset: hw}
}

func newShareHarness(t *testing.T, mods ...func(*Options)) (*harness, *shareTopics) {
	t.Helper()
	st := newShareTopics()
	h := newHarness(t, append([]func(*Options){func(o *Options) { o.Topics = st }}, mods...)...)
	return h, st
}

func shareHB(group, member string, epoch int32, topics ...string) *kmsg.ShareGroupHeartbeatRequest {
	req := kmsg.NewPtrShareGroupHeartbeatRequest()
	req.Version = 1
	req.GroupID, req.MemberID, req.MemberEpoch = group, member, epoch
	if topics != nil {
		req.SubscribedTopicNames = topics
	}
	return req
}

func (h *harness) shareHeartbeat(req *kmsg.ShareGroupHeartbeatRequest) *kmsg.ShareGroupHeartbeatResponse {
	return h.gs.ShareGroupHeartbeat(context.Background(), client, req)
}

// shareJoin joins member to group on topics and returns its epoch.
func (h *harness) shareJoin(group, member string, topics ...string) int32 {
	h.t.Helper()
	resp := h.shareHeartbeat(shareHB(group, member, 0, topics...))
	if resp.ErrorCode != 0 || resp.Assignment == nil {
		h.t.Fatalf("join %s: %s %v, assignment %v", member, errName(resp.ErrorCode), showStr(resp.ErrorMessage), resp.Assignment)
	}
	return resp.MemberEpoch
}

func showStr(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

func (h *harness) shareDescribe(group string) kmsg.ShareGroupDescribeResponseGroup {
	req := kmsg.NewPtrShareGroupDescribeRequest()
	req.Version = 1
	req.GroupIDs = []string{group}
	return h.gs.ShareGroupDescribe(context.Background(), req).Groups[0]
}

// assignments is every member's assigned partitions (of topic t) as
// ShareGroupDescribe shows them, by member id.
func assignments(g kmsg.ShareGroupDescribeResponseGroup) map[string][]int32 {
	out := map[string][]int32{}
	for _, m := range g.Members {
		var ps []int32
		for _, tp := range m.Assignment.TopicPartitions {
			ps = append(ps, tp.Partitions...)
		}
		slices.Sort(ps)
		out[m.MemberID] = ps
	}
	return out
}

// TestShareHeartbeatErrors: the requests Kafka refuses, with its codes.
func TestShareHeartbeatErrors(t *testing.T) {
	h, st := newShareHarness(t, func(o *Options) { o.ShareMaxGroupSize = 2 })
	st.set("t", 2)
	// A classic group with offsets and a KIP-848 group hold their ids.
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Version, commit.Group, commit.Generation = 9, "classic", -1
	ct := kmsg.NewOffsetCommitRequestTopic()
	ct.Topic = "t"
	ct.Partitions = []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 1}}
	commit.Topics = append(commit.Topics, ct)
	wantCode(t, "commit", h.gs.OffsetCommit(context.Background(), commit).Topics[0].Partitions[0].ErrorCode, nil)
	cgh := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	cgh.Version, cgh.Group, cgh.MemberID, cgh.RebalanceTimeoutMillis = 1, "kip848", "c1", 30000
	cgh.SubscribedTopicNames, cgh.Topics = []string{"t"}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	wantCode(t, "848 join", h.gs.ConsumerGroupHeartbeat(context.Background(), client, cgh).ErrorCode, nil)
	h.shareJoin("g", "m1", "t")
	h.shareJoin("g", "m2", "t")

	rack := ""
	for _, c := range []struct {
		name string
		req  *kmsg.ShareGroupHeartbeatRequest
		want *kerr.Error
		msg  string
	}{
		{"empty member id", shareHB("g", "", 0, "t"), kerr.InvalidRequest, "MemberId can't be empty."},
		{"blank group", shareHB(" ", "m", 0, "t"), kerr.InvalidRequest, "GroupId can't be empty."},
		{"empty rack", func() *kmsg.ShareGroupHeartbeatRequest { r := shareHB("g", "m", 0, "t"); r.RackID = &rack; return r }(), kerr.InvalidRequest, "RackId can't be empty."},
		{"join without topics", shareHB("g", "m3", 0), kerr.InvalidRequest, "SubscribedTopicNames must be set in first request."},
		{"epoch -2", shareHB("g", "m1", -2), kerr.InvalidRequest, "MemberEpoch is invalid."},
		{"unknown member", shareHB("g", "nobody", 3), kerr.UnknownMemberID, "Member nobody is not a member of group g."},
		{"unknown member leaving", shareHB("g", "nobody", -1), kerr.UnknownMemberID, "Member nobody is not a member of group g."},
		{"epoch ahead", shareHB("g", "m1", 99), kerr.FencedMemberEpoch, ""},
		{"epoch far behind", shareHB("g", "m2", 1), kerr.FencedMemberEpoch, ""},
		{"full group", shareHB("g", "m3", 0, "t"), kerr.GroupMaxSizeReached, "The share group has reached its maximum capacity of 2 members."},
		{"unknown group", shareHB("none", "m", 1), kerr.GroupIDNotFound, "Share group none not found."},
		{"classic group", shareHB("classic", "m", 0, "t"), kerr.GroupIDNotFound, "Group classic is not a share group."},
		{"KIP-848 group", shareHB("kip848", "m", 0, "t"), kerr.GroupIDNotFound, "Group kip848 is not a share group."},
	} {
		t.Run(c.name, func(t *testing.T) {
			resp := h.shareHeartbeat(c.req)
			wantCode(t, c.name, resp.ErrorCode, c.want)
			if c.msg != "" && showStr(resp.ErrorMessage) != c.msg {
				t.Errorf("message %q, want %q", showStr(resp.ErrorMessage), c.msg)
			}
			if resp.Assignment != nil {
				t.Errorf("assignment with an error: %v", resp.Assignment)
			}
		})
	}
	// The other protocols do not take the share group's id.
	cgh.Group = "g"
	wantCode(t, "848 on a share group", h.gs.ConsumerGroupHeartbeat(context.Background(), client, cgh).ErrorCode, kerr.GroupIDNotFound)
	join, _ := h.gs.JoinGroup(context.Background(), client, joinReq("g", "", "t"))
	wantCode(t, "classic join on a share group", join.ErrorCode, kerr.InconsistentGroupProtocol)
	commit.Group = "g"
	wantCode(t, "commit to a share group", h.gs.OffsetCommit(context.Background(), commit).Topics[0].Partitions[0].ErrorCode, kerr.GroupIDNotFound)
	if d := h.shareDescribe("classic"); d.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Errorf("describe a classic group as a share group: %s", errName(d.ErrorCode))
	}
	if d := h.shareDescribe("none"); d.ErrorCode != kerr.GroupIDNotFound.Code || showStr(d.ErrorMessage) != "Group none not found." {
		t.Errorf("describe an unknown group: %s %s", errName(d.ErrorCode), showStr(d.ErrorMessage))
	}
}

// TestShareMembership: members join, take their targets at once, one
// leaves (epoch -1) and one times out (fake clock); the others get its
// partitions at their next heartbeat; describe shows it all.
func TestShareMembership(t *testing.T) {
	h, st := newShareHarness(t)
	tid := st.set("t", 4)
	st.setOffsets(tid, 3, 10)

	e1 := h.shareJoin("g", "m1", "t")
	if e1 != 1 {
		t.Fatalf("first member epoch %d, want 1", e1)
	}
	d := h.shareDescribe("g")
	if d.ErrorCode != 0 || d.GroupState != "Stable" || d.Assignor != "simple" || d.GroupEpoch != 1 || d.AssignmentEpoch != 1 {
		t.Fatalf("describe: %+v", d)
	}
	if got := assignments(d)["m1"]; !slices.Equal(got, []int32{0, 1, 2, 3}) {
		t.Fatalf("m1 alone: %v", got)
	}
	m := d.Members[0]
	if m.ClientID != client.ID || m.ClientHost != client.Host || !slices.Equal(m.SubscribedTopicNames, []string{"t"}) || m.Assignment.TopicPartitions[0].Topic != "t" {
		t.Fatalf("member: %+v", m)
	}

	e2 := h.shareJoin("g", "m2", "t")
	e3 := h.shareJoin("g", "m3", "t")
	// m1 heartbeats at its old epoch and takes its share.
	r := h.shareHeartbeat(shareHB("g", "m1", e1))
	if r.ErrorCode != 0 || r.MemberEpoch != 3 || r.Assignment == nil {
		t.Fatalf("m1 heartbeat: %s epoch %d assignment %v", errName(r.ErrorCode), r.MemberEpoch, r.Assignment)
	}
	e1 = r.MemberEpoch
	r = h.shareHeartbeat(shareHB("g", "m2", e2))
	e2 = r.MemberEpoch
	// A steady heartbeat sends no assignment.
	if r = h.shareHeartbeat(shareHB("g", "m3", e3)); r.ErrorCode != 0 || r.Assignment != nil || r.MemberEpoch != 3 {
		t.Fatalf("m3 steady heartbeat: %s epoch %d assignment %v", errName(r.ErrorCode), r.MemberEpoch, r.Assignment)
	}
	if r.HeartbeatIntervalMillis != 5000 {
		t.Errorf("heartbeat interval %d, want 5000", r.HeartbeatIntervalMillis)
	}
	a := assignments(h.shareDescribe("g"))
	checkSpread(t, a, 4)

	// Every assigned partition has its share-partition, started at the
	// high watermark (share.auto.offset.reset=latest).
	for p := range int32(4) {
		sp := h.sharePart("g", tid, p)
		if sp == nil || sp.Start() != 10 || sp.End() != 10 {
			t.Fatalf("partition %d: %v", p, sp)
		}
	}

	// m2 leaves: epoch -1 back, the rest take its partitions.
	if r = h.shareHeartbeat(shareHB("g", "m2", -1)); r.ErrorCode != 0 || r.MemberEpoch != -1 || showStr(r.MemberID) != "m2" {
		t.Fatalf("m2 leaves: %s epoch %d", errName(r.ErrorCode), r.MemberEpoch)
	}
	wantCode(t, "m2 after leaving", h.shareHeartbeat(shareHB("g", "m2", e2)).ErrorCode, kerr.UnknownMemberID)
	r1 := h.shareHeartbeat(shareHB("g", "m1", e1))
	r3 := h.shareHeartbeat(shareHB("g", "m3", 3))
	if r1.MemberEpoch != 4 || r3.MemberEpoch != 4 {
		t.Fatalf("epochs after a leave: %d %d, want 4", r1.MemberEpoch, r3.MemberEpoch)
	}
	a = assignments(h.shareDescribe("g"))
	checkSpread(t, a, 4)
	if len(a) != 2 {
		t.Fatalf("members %v", a)
	}

	// m3 stops heartbeating; m1 goes on. After the session timeout
	// (45s) m3 is gone and m1 has everything.
	for range 8 {
		h.advance(5 * time.Second)
		if r := h.shareHeartbeat(shareHB("g", "m1", 4)); r.ErrorCode != 0 || r.MemberEpoch != 4 {
			t.Fatalf("m1: %s epoch %d", errName(r.ErrorCode), r.MemberEpoch)
		}
	}
	if d := h.shareDescribe("g"); len(d.Members) != 2 {
		t.Fatalf("m3 gone before its session timeout: %v", assignments(d))
	}
	h.advance(6 * time.Second)
	d = h.shareDescribe("g")
	if len(d.Members) != 1 || d.GroupEpoch != 5 {
		t.Fatalf("after m3's session expired: epoch %d members %v", d.GroupEpoch, assignments(d))
	}
	r = h.shareHeartbeat(shareHB("g", "m1", 4))
	if r.MemberEpoch != 5 || r.Assignment == nil || len(r.Assignment.TopicPartitions[0].Partitions) != 4 {
		t.Fatalf("m1 after m3 expired: epoch %d assignment %v", r.MemberEpoch, r.Assignment)
	}
	// The answer that moved m1 to 5 was lost: epoch 4 (its previous)
	// is still accepted, 3 is fenced.
	wantCode(t, "previous epoch", h.shareHeartbeat(shareHB("g", "m1", 4)).ErrorCode, nil)
	wantCode(t, "older epoch", h.shareHeartbeat(shareHB("g", "m1", 3)).ErrorCode, kerr.FencedMemberEpoch)

	// The last member leaves: Empty, kept until DeleteGroups.
	h.shareHeartbeat(shareHB("g", "m1", -1))
	if d := h.shareDescribe("g"); d.ErrorCode != 0 || d.GroupState != "Empty" || len(d.Members) != 0 {
		t.Fatalf("empty group: %+v", d)
	}
	h.gs.expireOffsets()
	if d := h.shareDescribe("g"); d.ErrorCode != 0 {
		t.Fatalf("empty share group dropped by the retention pass: %s", errName(d.ErrorCode))
	}
}

// checkSpread checks that every one of n partitions is assigned to at
// least one member and the members' counts differ by at most one.
func checkSpread(t *testing.T, a map[string][]int32, n int) {
	t.Helper()
	seen := map[int32]bool{}
	lo, hi := n, 0
	for _, ps := range a {
		for _, p := range ps {
			seen[p] = true
		}
		lo, hi = min(lo, len(ps)), max(hi, len(ps))
	}
	if len(seen) != n || hi-lo > 1 {
		t.Fatalf("assignment %v: %d of %d partitions, counts %d-%d", a, len(seen), n, lo, hi)
	}
}

func (h *harness) sharePart(group string, id topicID, p int32) *share.Partition {
	g, _ := h.gs.lockGroup(group, false)
	if g == nil {
		return nil
	}
	defer g.mu.Unlock()
	if g.mu.share == nil {
		return nil
	}
	return g.mu.share.Partition(coordapi.TopicID(id), p)
}

// TestShareRestart: a share group with members and share-partitions
// survives a restart: same epochs, assignments and share-partition state;
// the members heartbeat on at their epochs.
func TestShareRestart(t *testing.T) {
	h, st := newShareHarness(t)
	tid := st.set("t", 3)
	st.setOffsets(tid, 0, 7)
	h.shareJoin("g", "m1", "t")
	h.shareJoin("g", "m2", "t")
	h.shareHeartbeat(shareHB("g", "m1", 1))
	before := h.shareDescribe("g")
	// An acquisition, written through the group's rows: it must come
	// back.
	st.commit(tid, 2)
	if a := h.acquire(acquireReq("m1", 1, tid, 2, coordapi.ShareAcquireRecordLimit)); acquired(a) != "7-8(1) batches 7-8" {
		t.Fatalf("acquire: %s", acquired(a))
	}

	h.restart()
	after := h.shareDescribe("g")
	if fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("after restart:\n%+v\nbefore:\n%+v", after, before)
	}
	sp := h.sharePart("g", tid, 0)
	if sp == nil || sp.Start() != 7 || sp.End() != 9 || len(sp.Ranges()) != 1 || sp.Ranges()[0].Member != "m1" {
		t.Fatalf("share-partition after restart: %v", sp)
	}
	if sp := h.sharePart("g", tid, 2); sp == nil || sp.Start() != 7 {
		t.Fatalf("partition 2 after restart: %v", sp)
	}
	for _, m := range before.Members {
		if r := h.shareHeartbeat(shareHB("g", m.MemberID, m.MemberEpoch)); r.ErrorCode != 0 || r.MemberEpoch != m.MemberEpoch {
			t.Fatalf("%s after restart: %s epoch %d", m.MemberID, errName(r.ErrorCode), r.MemberEpoch)
		}
	}
	// A member that misses its session after the restart is removed, and
	// its records released.
	h.advance(46 * time.Second)
	if d := h.shareDescribe("g"); len(d.Members) != 0 || d.GroupState != "Empty" {
		t.Fatalf("after the sessions expired: %+v", d)
	}
	if r := h.sharePart("g", tid, 0).Ranges(); len(r) != 1 || r[0].State != share.Available {
		t.Fatalf("m1's records after it expired: %v", r)
	}
	h.restart()
	if r := h.sharePart("g", tid, 0).Ranges(); len(r) != 1 || r[0].State != share.Available {
		t.Fatalf("released records after a restart: %v", r)
	}
}

// TestShareAutoOffsetReset: a partition's share-partition starts at the
// high watermark, at the log start with share.auto.offset.reset=earliest
// (a group config set before the group exists), or by duration.
func TestShareAutoOffsetReset(t *testing.T) {
	for _, c := range []struct {
		reset  string
		byTime int64
		want   int64
	}{
		{"", -1, 50},
		{"latest", -1, 50},
		{"earliest", -1, 20},
		{"by_duration:PT1H", 33, 33},
		{"by_duration:P1D", -1, 50}, // nothing that recent: the high watermark
	} {
		t.Run(c.reset, func(t *testing.T) {
			h, st := newShareHarness(t)
			tid := st.set("t", 1)
			st.setOffsets(tid, 20, 50)
			st.byTime = c.byTime
			if c.reset != "" {
				if code, msg := h.alterGroupConfig("g", cfgShareAutoOffsetReset, c.reset); code != 0 {
					t.Fatalf("set %s: %s %s", c.reset, errName(code), msg)
				}
			}
			h.shareJoin("g", "m", "t")
			if sp := h.sharePart("g", tid, 0); sp == nil || sp.Start() != c.want {
				t.Fatalf("start %v, want %d", sp, c.want)
			}
		})
	}
}

func (h *harness) alterGroupConfig(group, name, value string) (int16, string) {
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	req.Version = 1
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Value = name, &value
	r.Configs = append(r.Configs, c)
	req.Resources = append(req.Resources, r)
	sr := h.gs.AlterGroupConfigs(context.Background(), req).Resources[0]
	return sr.ErrorCode, showStr(sr.ErrorMessage)
}

// TestGroupConfigs: Kafka's validation of the share group configs, the
// values and sources DescribeConfigs shows, DELETE, and the configs
// surviving a restart.
func TestGroupConfigs(t *testing.T) {
	h, _ := newShareHarness(t)
	for _, c := range []struct {
		name, value string
		want        *kerr.Error
		msg         string
	}{
		{cfgShareAutoOffsetReset, "earliest", nil, ""},
		{cfgShareAutoOffsetReset, "LATEST", nil, ""},
		{cfgShareAutoOffsetReset, "by_duration:PT10M", nil, ""},
		{cfgShareAutoOffsetReset, "by_duration:P1DT2H3M4.5S", nil, ""},
		{cfgShareAutoOffsetReset, "none", kerr.InvalidConfig, "Invalid value `none` for configuration share.auto.offset.reset. The value must be either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'."},
		{cfgShareAutoOffsetReset, "by_duration:1h", kerr.InvalidConfig, "Invalid value by_duration:1h for configuration share.auto.offset.reset: Unable to parse the given duration."},
		{cfgShareAutoOffsetReset, "by_duration:-PT1H", kerr.InvalidConfig, "Invalid value by_duration:-PT1H for configuration share.auto.offset.reset: Negative duration is not supported."},
		{cfgShareIsolationLevel, "read_uncommitted", nil, ""},
		{cfgShareIsolationLevel, "READ_COMMITTED", kerr.InvalidConfig, "Invalid value READ_COMMITTED for configuration share.isolation.level: String must be one of: read_committed, read_uncommitted"},
		{cfgShareDeliveryCountLimit, "2", nil, ""},
		{cfgShareDeliveryCountLimit, "1", kerr.InvalidConfig, "Invalid value 1 for configuration share.delivery.count.limit: Value must be at least 2"},
		{cfgShareDeliveryCountLimit, "11", kerr.InvalidConfig, "share.delivery.count.limit must be in the range 2 to 10 inclusive."},
		{cfgShareDeliveryCountLimit, "x", kerr.InvalidConfig, "Invalid value x for configuration share.delivery.count.limit: Not a number of type INT"},
		{cfgShareRecordLockDuration, "15000", nil, ""},
		{cfgShareRecordLockDuration, "60000", nil, ""},
		{cfgShareRecordLockDuration, "abc", kerr.InvalidConfig, "Invalid value abc for configuration share.record.lock.duration.ms: Not a number of type INT"},
		{cfgShareRecordLockDuration, "500", kerr.InvalidConfig, "Invalid value 500 for configuration share.record.lock.duration.ms: Value must be at least 1000"},
		{cfgShareRecordLockDuration, "60001", kerr.InvalidConfig, "share.record.lock.duration.ms must be in the range 15000 to 60000 inclusive."},
		{"share.unknown", "1", kerr.InvalidConfig, "Unknown group config name: share.unknown"},
	} {
		t.Run(c.name+"="+c.value, func(t *testing.T) {
			code, msg := h.alterGroupConfig("cfg", c.name, c.value)
			wantCode(t, "alter", code, c.want)
			if c.want != nil && msg != c.msg {
				t.Errorf("message %q, want %q", msg, c.msg)
			}
		})
	}
	describe := func(group string) map[string]kmsg.DescribeConfigsResponseResourceConfig {
		req := kmsg.NewPtrDescribeConfigsRequest()
		req.Version, req.IncludeSynonyms = 4, true
		r := kmsg.NewDescribeConfigsRequestResource()
		r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
		req.Resources = append(req.Resources, r)
		sr := h.gs.DescribeGroupConfigs(context.Background(), req).Resources[0]
		if sr.ErrorCode != 0 {
			t.Fatalf("describe %s: %s", group, errName(sr.ErrorCode))
		}
		out := map[string]kmsg.DescribeConfigsResponseResourceConfig{}
		for _, c := range sr.Configs {
			out[c.Name] = c
		}
		return out
	}
	check := func(group string, want map[string]string, set map[string]bool) {
		t.Helper()
		got := describe(group)
		for name, v := range want {
			c := got[name]
			src := kmsg.ConfigSourceDefaultConfig
			if set[name] {
				src = kmsg.ConfigSourceGroupConfig
			}
			if showStr(c.Value) != v || c.Source != src || c.IsDefault == set[name] {
				t.Errorf("%s %s: %s source %v default %v, want %s source %v", group, name, showStr(c.Value), c.Source, c.IsDefault, v, src)
			}
		}
	}
	all := map[string]bool{cfgShareAutoOffsetReset: true, cfgShareIsolationLevel: true, cfgShareRecordLockDuration: true}
	want := map[string]string{cfgShareAutoOffsetReset: "by_duration:P1DT2H3M4.5S", cfgShareIsolationLevel: "read_uncommitted", cfgShareRecordLockDuration: "60000"}
	check("cfg", want, all)
	check("other", map[string]string{cfgShareAutoOffsetReset: "latest", cfgShareIsolationLevel: "read_committed", cfgShareRecordLockDuration: "30000"}, nil)
	h.restart()
	check("cfg", want, all)

	// DELETE goes back to the default.
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeGroupConfig, "cfg"
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Op = cfgShareIsolationLevel, kmsg.IncrementalAlterConfigOpDelete
	r.Configs = append(r.Configs, c)
	c.Op = kmsg.IncrementalAlterConfigOpAppend
	r2 := r
	r2.Configs = []kmsg.IncrementalAlterConfigsRequestResourceConfig{c}
	req.Resources = append(req.Resources, r, r2)
	resp := h.gs.AlterGroupConfigs(context.Background(), req)
	wantCode(t, "delete", resp.Resources[0].ErrorCode, nil)
	wantCode(t, "append", resp.Resources[1].ErrorCode, kerr.InvalidConfig)
	delete(all, cfgShareIsolationLevel)
	want[cfgShareIsolationLevel] = "read_committed" // floe's default, not Kafka's
	check("cfg", want, all)
}

// TestShareAdmin: ListGroups' share type, DescribeGroups on a share
// group, DeleteGroups refusing a group with members and dropping an
// empty one's share-partitions.
func TestShareAdmin(t *testing.T) {
	h, st := newShareHarness(t)
	tid := st.set("t", 2)
	st.setOffsets(tid, 0, 5)
	h.shareJoin("sg", "m1", "t")
	cgh := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	cgh.Version, cgh.Group, cgh.MemberID, cgh.RebalanceTimeoutMillis = 1, "cg", "c1", 30000
	cgh.SubscribedTopicNames, cgh.Topics = []string{"t"}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	h.gs.ConsumerGroupHeartbeat(context.Background(), client, cgh)

	list := func(types ...string) []kmsg.ListGroupsResponseGroup {
		req := kmsg.NewPtrListGroupsRequest()
		req.Version, req.TypesFilter = 5, types
		return h.gs.ListGroups(context.Background(), req).Groups
	}
	if l := list("Share"); len(l) != 1 || l[0].Group != "sg" || l[0].GroupType != "share" || l[0].ProtocolType != "share" || l[0].GroupState != "Stable" {
		t.Fatalf("list share: %+v", l)
	}
	if l := list(); len(l) != 2 {
		t.Fatalf("list all: %+v", l)
	}
	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.Version, dg.Groups = 6, []string{"sg"}
	if d := h.gs.DescribeGroups(context.Background(), dg).Groups[0]; d.ErrorCode != kerr.GroupIDNotFound.Code || d.State != "Dead" {
		t.Fatalf("DescribeGroups on a share group: %+v", d)
	}
	del := func() int16 {
		req := kmsg.NewPtrDeleteGroupsRequest()
		req.Version, req.Groups = 2, []string{"sg"}
		return h.gs.DeleteGroups(context.Background(), req).Groups[0].ErrorCode
	}
	wantCode(t, "delete with a member", del(), kerr.NonEmptyGroup)
	h.shareHeartbeat(shareHB("sg", "m1", -1))
	wantCode(t, "delete empty", del(), nil)
	if d := h.shareDescribe("sg"); d.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("deleted group described: %+v", d)
	}
	lo, hi := share.GroupSpan("sg")
	it, err := h.gs.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		t.Fatal(err)
	}
	if it.First() {
		t.Errorf("share-partition rows left: %x", it.Key())
	}
	it.Close()
	// The id is free again, and its partitions start afresh.
	st.setOffsets(tid, 0, 9)
	h.shareJoin("sg", "m1", "t")
	if sp := h.sharePart("sg", tid, 1); sp == nil || sp.Start() != 9 {
		t.Fatalf("share-partition after re-creation: %v", sp)
	}
	h.restart()
	if l := list("share"); len(l) != 1 {
		t.Fatalf("list after restart: %+v", l)
	}
}
