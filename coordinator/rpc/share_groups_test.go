package rpc_test

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/coordapi"
)

// TestShareGroupsOverNATS: a share group whose two members heartbeat
// through different brokers' clients, described through a third; the
// group configs altered and described over NATS. Every op travels at the
// client's Kafka version and comes back decoded at it.
func TestShareGroupsOverNATS(t *testing.T) {
	e := newGroupsEnv(t)
	ctx := context.Background()
	tp, err := e.coord.CreateTopic(ctx, coordapi.CreateTopicRequest{Name: "t", Partitions: 2, ReplicationFactor: -1})
	if err != nil {
		t.Fatal(err)
	}

	// share.auto.offset.reset=earliest, through a broker's client.
	alter := kmsg.NewPtrIncrementalAlterConfigsRequest()
	alter.Version = 1
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeGroupConfig, "sg"
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Value = "share.auto.offset.reset", kmsg.StringPtr("earliest")
	r.Configs = append(r.Configs, c)
	alter.Resources = append(alter.Resources, r)
	ar, err := e.a.AlterGroupConfigs(ctx, alter)
	if err != nil || len(ar.Resources) != 1 || ar.Resources[0].ErrorCode != 0 {
		t.Fatalf("alter group configs: %v %+v", err, ar)
	}
	describe := kmsg.NewPtrDescribeConfigsRequest()
	describe.Version = 4
	dr := kmsg.NewDescribeConfigsRequestResource()
	dr.ResourceType, dr.ResourceName, dr.ConfigNames = kmsg.ConfigResourceTypeGroupConfig, "sg", []string{"share.auto.offset.reset"}
	describe.Resources = append(describe.Resources, dr)
	dresp, err := e.b.DescribeGroupConfigs(ctx, describe)
	if err != nil || len(dresp.Resources) != 1 || len(dresp.Resources[0].Configs) != 1 {
		t.Fatalf("describe group configs: %v %+v", err, dresp)
	}
	if cfg := dresp.Resources[0].Configs[0]; *cfg.Value != "earliest" || cfg.Source != kmsg.ConfigSourceGroupConfig {
		t.Fatalf("described %+v", cfg)
	}

	hb := func(member string, epoch int32) *kmsg.ShareGroupHeartbeatRequest {
		req := kmsg.NewPtrShareGroupHeartbeatRequest()
		req.Version, req.GroupID, req.MemberID, req.MemberEpoch = 1, "sg", member, epoch
		if epoch == 0 {
			req.SubscribedTopicNames = []string{"t"}
		}
		return req
	}
	r1, err := e.a.ShareGroupHeartbeat(ctx, coordapi.ClientInfo{ID: "c1", Host: "/10.0.0.1"}, hb("m1", 0))
	if err != nil || r1.ErrorCode != 0 || r1.MemberEpoch != 1 || r1.Assignment == nil || len(r1.Assignment.TopicPartitions[0].Partitions) != 2 {
		t.Fatalf("m1 joins: %v %+v", err, r1)
	}
	r2, err := e.b.ShareGroupHeartbeat(ctx, coordapi.ClientInfo{ID: "c2", Host: "/10.0.0.2"}, hb("m2", 0))
	if err != nil || r2.ErrorCode != 0 || r2.MemberEpoch != 2 || len(r2.Assignment.TopicPartitions[0].Partitions) != 1 {
		t.Fatalf("m2 joins: %v %+v", err, r2)
	}
	r1, err = e.b.ShareGroupHeartbeat(ctx, coordapi.ClientInfo{ID: "c1", Host: "/10.0.0.1"}, hb("m1", 1))
	if err != nil || r1.MemberEpoch != 2 || r1.Assignment == nil || len(r1.Assignment.TopicPartitions[0].Partitions) != 1 {
		t.Fatalf("m1 through the other broker: %v %+v", err, r1)
	}

	sd := kmsg.NewPtrShareGroupDescribeRequest()
	sd.Version, sd.GroupIDs = 1, []string{"sg", "missing"}
	d, err := e.client.Groups().ShareGroupDescribe(ctx, sd)
	if err != nil || len(d.Groups) != 2 {
		t.Fatalf("describe: %v %+v", err, d)
	}
	g := d.Groups[0]
	if g.ErrorCode != 0 || g.GroupState != "Stable" || g.GroupEpoch != 2 || g.Assignor != "simple" || len(g.Members) != 2 {
		t.Fatalf("described %+v", g)
	}
	for _, m := range g.Members {
		want := map[string]string{"m1": "c1", "m2": "c2"}[m.MemberID]
		at := m.Assignment.TopicPartitions
		if m.ClientID != want || len(at) != 1 || at[0].Topic != "t" || at[0].TopicID != tp.ID || len(at[0].Partitions) != 1 {
			t.Fatalf("member %+v", m)
		}
	}
	if d.Groups[1].ErrorCode == 0 {
		t.Fatalf("missing group described: %+v", d.Groups[1])
	}

	leave, err := e.a.ShareGroupHeartbeat(ctx, coordapi.ClientInfo{}, hb("m2", -1))
	if err != nil || leave.ErrorCode != 0 || leave.MemberEpoch != -1 {
		t.Fatalf("m2 leaves: %v %+v", err, leave)
	}
	lg := kmsg.NewPtrListGroupsRequest()
	lg.Version, lg.TypesFilter = 5, []string{"share"}
	l, err := e.b.ListGroups(ctx, lg)
	if err != nil || len(l.Groups) != 1 || l.Groups[0].GroupType != "share" {
		t.Fatalf("list share groups: %v %+v", err, l)
	}
}
