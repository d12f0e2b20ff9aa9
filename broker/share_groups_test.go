package broker

import (
	"errors"
	"io"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/groups"
)

func shareHeartbeatReq(group, member string, epoch int32, topics ...string) *kmsg.ShareGroupHeartbeatRequest {
	req := kmsg.NewPtrShareGroupHeartbeatRequest()
	req.GroupID, req.MemberID, req.MemberEpoch = group, member, epoch
	if len(topics) > 0 {
		req.SubscribedTopicNames = topics
	}
	return req
}

func shareDescribeReq(groups ...string) *kmsg.ShareGroupDescribeRequest {
	req := kmsg.NewPtrShareGroupDescribeRequest()
	req.GroupIDs = groups
	return req
}

// partitionsOf is a heartbeat's assigned partitions, sorted.
func partitionsOf(a *kmsg.ShareGroupHeartbeatResponseAssignment) []int32 {
	var out []int32
	if a != nil {
		for _, tp := range a.TopicPartitions {
			out = append(out, tp.Partitions...)
		}
	}
	slices.Sort(out)
	return out
}

// TestShareGroupMembership speaks ShareGroupHeartbeat and
// ShareGroupDescribe (kmsg, over TCP) to a broker with a real group
// coordinator: three members share three partitions, one leaves with
// epoch -1 and the others take its partition, describe shows members,
// epochs and topic names; ListGroups' share filter, DeleteGroups, and
// share.auto.offset.reset through IncrementalAlterConfigs/DescribeConfigs
// of a GROUP resource. (Session expiry runs on groups' fake clock, in
// groups' tests.)
func TestShareGroupMembership(t *testing.T) {
	e := newACLEnv(t, func(o *Options) { o.ACLsEnabled = false })
	e.topic("t", 3, nil)
	cls := []*kgo.Client{e.client("c1"), e.client("c2"), e.client("c3")}

	// ApiVersions advertises v1 of both, nothing else.
	av := send[*kmsg.ApiVersionsResponse](t, cls[0], kmsg.NewPtrApiVersionsRequest())
	for _, key := range []kmsg.Key{kmsg.ShareGroupHeartbeat, kmsg.ShareGroupDescribe} {
		i := slices.IndexFunc(av.ApiKeys, func(k kmsg.ApiVersionsResponseApiKey) bool { return k.ApiKey == int16(key) })
		if i < 0 || av.ApiKeys[i].MinVersion != 1 || av.ApiKeys[i].MaxVersion != 1 {
			t.Fatalf("%s not advertised at v1: %+v", kmsg.NameForKey(int16(key)), av.ApiKeys)
		}
	}

	// share.auto.offset.reset=earliest, as a Java client's test sets it.
	alter := kmsg.NewPtrIncrementalAlterConfigsRequest()
	ar := kmsg.NewIncrementalAlterConfigsRequestResource()
	ar.ResourceType, ar.ResourceName = kmsg.ConfigResourceTypeGroupConfig, "sg"
	ac := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	ac.Name, ac.Value = "share.auto.offset.reset", kmsg.StringPtr("earliest")
	ar.Configs = append(ar.Configs, ac)
	alter.Resources = append(alter.Resources, ar)
	wantCode(t, "alter group config", send[*kmsg.IncrementalAlterConfigsResponse](t, cls[0], alter).Resources[0].ErrorCode, nil)
	ac.Value = kmsg.StringPtr("none")
	alter.Resources[0].Configs[0] = ac
	wantCode(t, "bad group config", send[*kmsg.IncrementalAlterConfigsResponse](t, cls[0], alter).Resources[0].ErrorCode, kerr.InvalidConfig)
	dc := kmsg.NewPtrDescribeConfigsRequest()
	dr := kmsg.NewDescribeConfigsRequestResource()
	dr.ResourceType, dr.ResourceName = kmsg.ConfigResourceTypeGroupConfig, "sg"
	dc.Resources = append(dc.Resources, dr)
	dcr := send[*kmsg.DescribeConfigsResponse](t, cls[0], dc).Resources[0]
	if dcr.ErrorCode != 0 || !slices.ContainsFunc(dcr.Configs, func(c kmsg.DescribeConfigsResponseResourceConfig) bool {
		return c.Name == "share.auto.offset.reset" && *c.Value == "earliest" && c.Source == kmsg.ConfigSourceGroupConfig
	}) {
		t.Fatalf("describe group configs: %+v", dcr)
	}

	// Three members join one after the other; each heartbeat answers
	// the member's target at once (no revocation).
	ids := []string{"member-1", "member-2", "member-3"}
	epochs := make([]int32, 3)
	for i, id := range ids {
		r := send[*kmsg.ShareGroupHeartbeatResponse](t, cls[i], shareHeartbeatReq("sg", id, 0, "t"))
		if r.ErrorCode != 0 || showStr(r.MemberID) != id || r.Assignment == nil || r.HeartbeatIntervalMillis != 5000 {
			t.Fatalf("%s joins: %v %+v", id, kerr.ErrorForCode(r.ErrorCode), r)
		}
		epochs[i] = r.MemberEpoch
	}
	assigned := map[string][]int32{}
	for i, id := range ids {
		r := send[*kmsg.ShareGroupHeartbeatResponse](t, cls[i], shareHeartbeatReq("sg", id, epochs[i]))
		wantCode(t, id+" heartbeat", r.ErrorCode, nil)
		if r.MemberEpoch != 3 {
			t.Fatalf("%s at epoch %d, want 3", id, r.MemberEpoch)
		}
		if r.Assignment != nil {
			assigned[id] = partitionsOf(r.Assignment)
		}
		epochs[i] = r.MemberEpoch
	}
	d := send[*kmsg.ShareGroupDescribeResponse](t, cls[0], shareDescribeReq("sg", "nope")).Groups
	if len(d) != 2 || d[0].ErrorCode != 0 || d[0].GroupState != "Stable" || d[0].GroupEpoch != 3 || d[0].AssignmentEpoch != 3 || d[0].Assignor != "simple" || len(d[0].Members) != 3 {
		t.Fatalf("describe: %+v", d)
	}
	wantCode(t, "describe a missing group", d[1].ErrorCode, kerr.GroupIDNotFound)
	seen := map[int32]bool{}
	for _, m := range d[0].Members {
		if m.MemberEpoch != 3 || m.ClientID != "as-c"+m.MemberID[len(m.MemberID)-1:] || !slices.Equal(m.SubscribedTopicNames, []string{"t"}) {
			t.Fatalf("member %+v", m)
		}
		tps := m.Assignment.TopicPartitions
		if len(tps) != 1 || tps[0].Topic != "t" || len(tps[0].Partitions) != 1 {
			t.Fatalf("member %s assigned %+v, want one partition of t", m.MemberID, tps)
		}
		seen[tps[0].Partitions[0]] = true
	}
	if len(seen) != 3 {
		t.Fatalf("partitions not spread over the members: %+v", d[0].Members)
	}

	// member-2 leaves; the others take its partition at their next
	// heartbeat.
	r := send[*kmsg.ShareGroupHeartbeatResponse](t, cls[1], shareHeartbeatReq("sg", ids[1], -1))
	if r.ErrorCode != 0 || r.MemberEpoch != -1 {
		t.Fatalf("leave: %+v", r)
	}
	wantCode(t, "heartbeat after leaving", send[*kmsg.ShareGroupHeartbeatResponse](t, cls[1], shareHeartbeatReq("sg", ids[1], epochs[1])).ErrorCode, kerr.UnknownMemberID)
	changed := 0
	for _, i := range []int{0, 2} {
		r := send[*kmsg.ShareGroupHeartbeatResponse](t, cls[i], shareHeartbeatReq("sg", ids[i], epochs[i]))
		if r.ErrorCode != 0 || r.MemberEpoch != 4 {
			t.Fatalf("%s after the leave: %+v", ids[i], r)
		}
		if r.Assignment != nil { // sent only when it changed
			changed++
		}
		epochs[i] = r.MemberEpoch
	}
	var got []int32
	for _, m := range send[*kmsg.ShareGroupDescribeResponse](t, cls[0], shareDescribeReq("sg")).Groups[0].Members {
		for _, tp := range m.Assignment.TopicPartitions {
			got = append(got, tp.Partitions...)
		}
	}
	slices.Sort(got)
	if changed != 1 {
		t.Fatalf("%d members got a new assignment, want 1 (the other keeps its partition)", changed)
	}
	if !slices.Equal(got, []int32{0, 1, 2}) {
		t.Fatalf("after the leave the members have %v", got)
	}
	wantCode(t, "fenced epoch", send[*kmsg.ShareGroupHeartbeatResponse](t, cls[0], shareHeartbeatReq("sg", ids[0], 7)).ErrorCode, kerr.FencedMemberEpoch)

	// ListGroups v5 with the share type; DeleteGroups refuses a group
	// with members, drops it once empty.
	lg := kmsg.NewPtrListGroupsRequest()
	lg.TypesFilter = []string{"share"}
	l := send[*kmsg.ListGroupsResponse](t, cls[0], lg)
	if len(l.Groups) != 1 || l.Groups[0].Group != "sg" || l.Groups[0].GroupType != "share" || l.Groups[0].GroupState != "Stable" {
		t.Fatalf("list share groups: %+v", l.Groups)
	}
	del := kmsg.NewPtrDeleteGroupsRequest()
	del.Groups = []string{"sg"}
	wantCode(t, "delete with members", send[*kmsg.DeleteGroupsResponse](t, cls[0], del).Groups[0].ErrorCode, kerr.NonEmptyGroup)
	for _, i := range []int{0, 2} {
		send[*kmsg.ShareGroupHeartbeatResponse](t, cls[i], shareHeartbeatReq("sg", ids[i], -1))
	}
	if d := send[*kmsg.ShareGroupDescribeResponse](t, cls[0], shareDescribeReq("sg")).Groups[0]; d.GroupState != "Empty" || len(d.Members) != 0 {
		t.Fatalf("empty group: %+v", d)
	}
	wantCode(t, "delete empty", send[*kmsg.DeleteGroupsResponse](t, cls[0], del).Groups[0].ErrorCode, nil)
	wantCode(t, "describe deleted", send[*kmsg.ShareGroupDescribeResponse](t, cls[0], shareDescribeReq("sg")).Groups[0].ErrorCode, kerr.GroupIDNotFound)

	// The classic protocol cannot take the share group's id, nor the
	// share protocol a classic group's.
	send[*kmsg.ShareGroupHeartbeatResponse](t, cls[0], shareHeartbeatReq("sg", ids[0], 0, "t"))
	join := kmsg.NewPtrJoinGroupRequest()
	join.Group, join.MemberID, join.ProtocolType, join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = "sg", "x", "consumer", 10000, 10000
	join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0}}}
	wantCode(t, "classic join on a share group", send[*kmsg.JoinGroupResponse](t, cls[1], join).ErrorCode, kerr.InconsistentGroupProtocol)
}

// TestShareGroupsDisabled: with ShareGroupsDisabled the share APIs (76-79, 90-92)
// are not advertised, and a request sent anyway closes the connection.
func TestShareGroupsDisabled(t *testing.T) {
	c := newTestCoordinator(t)
	createTopic(t, c, "t", 4, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hidden := newTestBroker(t, Deps{Coordinator: c, Groups: groups.Direct(newTestGroups(t, c))}, func(o *Options) {
		o.ShareGroupsDisabled = true
		o.AdvertisedAddr = ln.Addr().String()
	})
	go func() { _ = hidden.Serve(ln) }()
	resp := serveVersion[*kmsg.ApiVersionsResponse](t, hidden, kmsg.NewPtrApiVersionsRequest(), 3)
	for _, k := range resp.ApiKeys {
		if shareAPIs[k.ApiKey] {
			t.Fatalf("%s advertised", kmsg.NameForKey(k.ApiKey))
		}
	}
	// Sent anyway, over TCP: the connection closes with no answer.
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
	req := shareHeartbeatReq("g", "m", 0, "t")
	req.SetVersion(1)
	if _, err := nc.Write(kmsg.NewRequestFormatter(kmsg.FormatterClientID("hidden")).AppendRequest(nil, req, 1)); err != nil {
		t.Fatal(err)
	}
	if n, err := nc.Read(make([]byte, 4)); !errors.Is(err, io.EOF) {
		t.Fatalf("a hidden API answered: read %d bytes, %v", n, err)
	}
	// Served by default: ShareFetch and ShareAcknowledge at v1-v2.
	b := newGroupsBroker(t)
	av := serveVersion[*kmsg.ApiVersionsResponse](t, b, kmsg.NewPtrApiVersionsRequest(), 3)
	for _, key := range []kmsg.Key{kmsg.ShareFetch, kmsg.ShareAcknowledge} {
		i := slices.IndexFunc(av.ApiKeys, func(k kmsg.ApiVersionsResponseApiKey) bool { return k.ApiKey == int16(key) })
		if i < 0 || av.ApiKeys[i].MinVersion != 1 || av.ApiKeys[i].MaxVersion != 2 {
			t.Fatalf("%s not advertised at v1-v2: %+v", kmsg.NameForKey(int16(key)), av.ApiKeys)
		}
	}
	r := serveVersion[*kmsg.ShareGroupHeartbeatResponse](t, b, shareHeartbeatReq("g", "m", 0, "t"), 1)
	if r.ErrorCode != 0 || len(partitionsOf(r.Assignment)) != 4 {
		t.Fatalf("heartbeat: %+v", r)
	}
	d := serveVersion[*kmsg.ShareGroupDescribeResponse](t, b, shareDescribeReq("g"), 1)
	if d.Groups[0].ErrorCode != 0 || len(d.Groups[0].Members) != 1 {
		t.Fatalf("describe: %+v", d)
	}
}

// TestACLShareGroup: ShareGroupHeartbeat needs GROUP READ and TOPIC
// DESCRIBE on the subscribed topics, ShareGroupDescribe GROUP DESCRIBE
// (and TOPIC DESCRIBE on the group's topics), the group configs GROUP
// DESCRIBE_CONFIGS and ALTER_CONFIGS, as Kafka.
func TestACLShareGroup(t *testing.T) {
	e := newACLEnv(t)
	e.topic("t", 2, nil)
	alice := e.client("alice")
	hb := shareHeartbeatReq("sg", "m1", 0, "t")
	wantCode(t, "heartbeat without GROUP READ", send[*kmsg.ShareGroupHeartbeatResponse](t, alice, hb).ErrorCode, kerr.GroupAuthorizationFailed)
	wantCode(t, "describe without GROUP DESCRIBE", send[*kmsg.ShareGroupDescribeResponse](t, alice, shareDescribeReq("sg")).Groups[0].ErrorCode, kerr.GroupAuthorizationFailed)
	dc := kmsg.NewPtrDescribeConfigsRequest()
	dr := kmsg.NewDescribeConfigsRequestResource()
	dr.ResourceType, dr.ResourceName = kmsg.ConfigResourceTypeGroupConfig, "sg"
	dc.Resources = append(dc.Resources, dr)
	wantCode(t, "describe configs", send[*kmsg.DescribeConfigsResponse](t, alice, dc).Resources[0].ErrorCode, kerr.GroupAuthorizationFailed)

	e.grant(kadm.NewACLs().Groups("sg").Allow("User:alice").Operations(kadm.OpRead))
	wantCode(t, "heartbeat without TOPIC DESCRIBE", send[*kmsg.ShareGroupHeartbeatResponse](t, alice, hb).ErrorCode, kerr.TopicAuthorizationFailed)
	e.grant(kadm.NewACLs().Topics("t").Allow("User:alice").Operations(kadm.OpDescribe))
	wantCode(t, "heartbeat", send[*kmsg.ShareGroupHeartbeatResponse](t, alice, hb).ErrorCode, nil)
	e.grant(kadm.NewACLs().Groups("sg").Allow("User:alice").Operations(kadm.OpDescribe, kadm.OpDescribeConfigs))
	if d := send[*kmsg.ShareGroupDescribeResponse](t, alice, shareDescribeReq("sg")).Groups[0]; d.ErrorCode != 0 || len(d.Members) != 1 {
		t.Fatalf("describe: %+v", d)
	}
	wantCode(t, "describe configs", send[*kmsg.DescribeConfigsResponse](t, alice, dc).Resources[0].ErrorCode, nil)
	// bob may describe the group but not its topic.
	e.grant(kadm.NewACLs().Groups("sg").Allow("User:bob").Operations(kadm.OpDescribe))
	wantCode(t, "describe without the topic", send[*kmsg.ShareGroupDescribeResponse](t, e.client("bob"), shareDescribeReq("sg")).Groups[0].ErrorCode, kerr.TopicAuthorizationFailed)
}
