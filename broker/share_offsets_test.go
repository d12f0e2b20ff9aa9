package broker

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func describeShareOffsetsReq(group string, topics map[string][]int32) *kmsg.DescribeShareGroupOffsetsRequest {
	req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	rg := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
	rg.GroupID = group
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for n := range topics {
			if !yield(n) {
				return
			}
		}
	}) {
		rg.Topics = append(rg.Topics, kmsg.DescribeShareGroupOffsetsRequestGroupTopic{Topic: name, Partitions: topics[name]})
	}
	req.Groups = append(req.Groups, rg)
	return req
}

func alterShareOffsetsReq(group, topic string, partition int32, offset int64) *kmsg.AlterShareGroupOffsetsRequest {
	req := kmsg.NewPtrAlterShareGroupOffsetsRequest()
	req.GroupID = group
	req.Topics = []kmsg.AlterShareGroupOffsetsRequestTopic{{Topic: topic,
		Partitions: []kmsg.AlterShareGroupOffsetsRequestTopicPartition{{Partition: partition, StartOffset: offset}}}}
	return req
}

func deleteShareOffsetsReq(group string, topics ...string) *kmsg.DeleteShareGroupOffsetsRequest {
	req := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
	req.GroupID = group
	for _, t := range topics {
		req.Topics = append(req.Topics, kmsg.DeleteShareGroupOffsetsRequestTopic{Topic: t})
	}
	return req
}

// TestShareGroupOffsetsAPIs speaks the share group offsets admin APIs
// (kmsg, over TCP) to a broker with a real group coordinator: ApiVersions
// advertises 90 at v0-v1 and 91, 92 at v0; alter makes the group's state,
// describe reads it back (one topic named, all topics), both refused while
// a member is in; delete drops it.
func TestShareGroupOffsetsAPIs(t *testing.T) {
	e := newACLEnv(t, func(o *Options) { o.ACLsEnabled = false })
	e.topic("t", 2, nil)
	cl := e.client("c")
	av := send[*kmsg.ApiVersionsResponse](t, cl, kmsg.NewPtrApiVersionsRequest())
	for key, max := range map[kmsg.Key]int16{kmsg.DescribeShareGroupOffsets: 1, kmsg.AlterShareGroupOffsets: 0, kmsg.DeleteShareGroupOffsets: 0} {
		i := slices.IndexFunc(av.ApiKeys, func(k kmsg.ApiVersionsResponseApiKey) bool { return k.ApiKey == int16(key) })
		if i < 0 || av.ApiKeys[i].MinVersion != 0 || av.ApiKeys[i].MaxVersion != max {
			t.Fatalf("%s not advertised at v0-v%d", kmsg.NameForKey(int16(key)), max)
		}
	}

	ar := send[*kmsg.AlterShareGroupOffsetsResponse](t, cl, alterShareOffsetsReq("sg", "t", 1, 0))
	if ar.ErrorCode != 0 || len(ar.Topics) != 1 || ar.Topics[0].TopicID != e.topicID("t") || ar.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("alter: %+v", ar)
	}
	for _, topics := range []map[string][]int32{nil, {"t": {0, 1}}} {
		d := send[*kmsg.DescribeShareGroupOffsetsResponse](t, cl, describeShareOffsetsReq("sg", topics)).Groups[0]
		if d.ErrorCode != 0 || len(d.Topics) != 1 || d.Topics[0].Topic != "t" {
			t.Fatalf("describe %v: %+v", topics, d)
		}
		for _, p := range d.Topics[0].Partitions {
			want := map[int32][3]int64{0: {-1, -1, -1}, 1: {0, 0, 0}}[p.Partition]
			if got := [3]int64{p.StartOffset, int64(p.LeaderEpoch), p.Lag}; got != want || p.ErrorCode != 0 {
				t.Fatalf("describe %v: partition %d: %v, want %v", topics, p.Partition, got, want)
			}
		}
	}

	wantCode(t, "join", send[*kmsg.ShareGroupHeartbeatResponse](t, cl, shareHeartbeatReq("sg", "m1", 0, "t")).ErrorCode, nil)
	wantCode(t, "alter with a member", send[*kmsg.AlterShareGroupOffsetsResponse](t, cl, alterShareOffsetsReq("sg", "t", 1, 0)).ErrorCode, kerr.NonEmptyGroup)
	wantCode(t, "delete with a member", send[*kmsg.DeleteShareGroupOffsetsResponse](t, cl, deleteShareOffsetsReq("sg", "t")).ErrorCode, kerr.NonEmptyGroup)
	wantCode(t, "leave", send[*kmsg.ShareGroupHeartbeatResponse](t, cl, shareHeartbeatReq("sg", "m1", -1)).ErrorCode, nil)
	dr := send[*kmsg.DeleteShareGroupOffsetsResponse](t, cl, deleteShareOffsetsReq("sg", "t"))
	if dr.ErrorCode != 0 || len(dr.Topics) != 1 || dr.Topics[0].ErrorCode != 0 {
		t.Fatalf("delete: %+v", dr)
	}
	if d := send[*kmsg.DescribeShareGroupOffsetsResponse](t, cl, describeShareOffsetsReq("sg", nil)).Groups[0]; len(d.Topics) != 0 {
		t.Fatalf("describe after delete: %+v", d)
	}
}

// TestACLShareGroupOffsets: DescribeShareGroupOffsets needs GROUP
// DESCRIBE and TOPIC DESCRIBE (which TOPIC READ implies), AlterShareGroupOffsets GROUP READ and
// TOPIC READ, DeleteShareGroupOffsets GROUP DELETE and TOPIC READ, as
// Kafka's KafkaApis.
func TestACLShareGroupOffsets(t *testing.T) {
	e := newACLEnv(t)
	e.topic("t", 1, nil)
	// The group has state of t, made by the super user.
	wantCode(t, "alter as the super user", send[*kmsg.AlterShareGroupOffsetsResponse](t, e.client(aclAdmin), alterShareOffsetsReq("sg", "t", 0, 0)).ErrorCode, nil)
	alice := e.client("alice")
	describe := func(topics map[string][]int32) kmsg.DescribeShareGroupOffsetsResponseGroup {
		return send[*kmsg.DescribeShareGroupOffsetsResponse](t, alice, describeShareOffsetsReq("sg", topics)).Groups[0]
	}
	alter := func() *kmsg.AlterShareGroupOffsetsResponse {
		return send[*kmsg.AlterShareGroupOffsetsResponse](t, alice, alterShareOffsetsReq("sg", "t", 0, 0))
	}
	del := func() *kmsg.DeleteShareGroupOffsetsResponse {
		return send[*kmsg.DeleteShareGroupOffsetsResponse](t, alice, deleteShareOffsetsReq("sg", "t"))
	}
	for _, c := range []struct {
		name  string
		grant *kadm.ACLBuilder
		check func(t *testing.T)
	}{
		{"nothing", nil, func(t *testing.T) {
			wantCode(t, "describe", describe(nil).ErrorCode, kerr.GroupAuthorizationFailed)
			r := alter()
			wantCode(t, "alter", r.ErrorCode, kerr.GroupAuthorizationFailed)
			wantCode(t, "alter partition", r.Topics[0].Partitions[0].ErrorCode, kerr.GroupAuthorizationFailed)
			wantCode(t, "delete", del().ErrorCode, kerr.GroupAuthorizationFailed)
		}},
		{"GROUP DESCRIBE, no TOPIC DESCRIBE", kadm.NewACLs().Groups("sg").Allow("User:alice").Operations(kadm.OpDescribe), func(t *testing.T) {
			if d := describe(nil); d.ErrorCode != 0 || len(d.Topics) != 0 {
				t.Fatalf("describe all without TOPIC DESCRIBE: %+v", d)
			}
			d := describe(map[string][]int32{"t": {0}})
			if d.ErrorCode != 0 || len(d.Topics) != 1 || d.Topics[0].Partitions[0].ErrorCode != kerr.TopicAuthorizationFailed.Code {
				t.Fatalf("describe t without TOPIC DESCRIBE: %+v", d)
			}
		}},
		{"GROUP READ, no topic", kadm.NewACLs().Groups("sg").Allow("User:alice").Operations(kadm.OpRead), func(t *testing.T) {
			r := alter()
			wantCode(t, "alter", r.ErrorCode, nil)
			wantCode(t, "alter partition", r.Topics[0].Partitions[0].ErrorCode, kerr.TopicAuthorizationFailed)
			wantCode(t, "delete", del().ErrorCode, kerr.GroupAuthorizationFailed)
		}},
		{"TOPIC READ", kadm.NewACLs().Topics("t").Allow("User:alice").Operations(kadm.OpRead), func(t *testing.T) {
			r := alter()
			wantCode(t, "alter", r.ErrorCode, nil)
			wantCode(t, "alter partition", r.Topics[0].Partitions[0].ErrorCode, nil)
			// READ implies DESCRIBE.
			d := describe(nil)
			if d.ErrorCode != 0 || len(d.Topics) != 1 || d.Topics[0].Partitions[0].ErrorCode != 0 || d.Topics[0].Partitions[0].StartOffset != 0 {
				t.Fatalf("describe: %+v", d)
			}
		}},
		{"GROUP DELETE", kadm.NewACLs().Groups("sg").Allow("User:alice").Operations(kadm.OpDelete), func(t *testing.T) {
			r := del()
			if r.ErrorCode != 0 || r.Topics[0].ErrorCode != 0 {
				t.Fatalf("delete: %+v", r)
			}
		}},
	} {
		if c.grant != nil {
			e.grant(c.grant)
		}
		t.Run(c.name, c.check)
	}
}
